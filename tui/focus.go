package tui

// focus decides which pane receives the navigation keys (arrows, h/j/k/l,
// page keys, the mouse wheel). Exactly one visible pane has focus; when a
// resize hides the focused pane, focus moves to the first visible one.
type focus struct {
	order   []paneID
	current paneID
}

func newFocus(start paneID) focus { return focus{current: start} }

// setVisible installs the focus order of the current layout.
func (f *focus) setVisible(order []paneID) {
	f.order = order
	if len(order) == 0 {
		return
	}
	for _, p := range order {
		if p == f.current {
			return
		}
	}
	f.current = order[0]
}

func (f *focus) step(d int) {
	if len(f.order) == 0 {
		return
	}
	i := 0
	for j, p := range f.order {
		if p == f.current {
			i = j
		}
	}
	i = ((i+d)%len(f.order) + len(f.order)) % len(f.order)
	f.current = f.order[i]
}

func (f *focus) next() { f.step(1) }
func (f *focus) prev() { f.step(-1) }

func (f focus) is(p paneID) bool { return f.current == p }

// set moves focus to p when p is visible.
func (f *focus) set(p paneID) {
	for _, q := range f.order {
		if q == p {
			f.current = p
		}
	}
}
