package env

// RGB downsamples a frame to w×h RGB bytes (row-major, 3 per pixel) with a
// box filter, for drawing the image in a terminal. An out-of-range frame is
// clamped; a non-positive size gives nil.
func (t *Task) RGB(frame, w, h int) []byte {
	if w <= 0 || h <= 0 || len(t.Frames) == 0 {
		return nil
	}
	frame = min(max(frame, 0), len(t.Frames)-1)
	pix := t.Frames[frame].Pix
	out := make([]byte, w*h*3)
	for y := range h {
		y0 := y * SourceSize / h
		y1 := max((y+1)*SourceSize/h, y0+1)
		for x := range w {
			x0 := x * SourceSize / w
			x1 := max((x+1)*SourceSize/w, x0+1)
			var s [3]int
			n := 0
			for yy := y0; yy < min(y1, SourceSize); yy++ {
				for xx := x0; xx < min(x1, SourceSize); xx++ {
					o := pixOff(xx, yy)
					s[0] += int(pix[o])
					s[1] += int(pix[o+1])
					s[2] += int(pix[o+2])
					n++
				}
			}
			d := (y*w + x) * 3
			for c := range 3 {
				out[d+c] = byte(s[c] / max(n, 1))
			}
		}
	}
	return out
}
