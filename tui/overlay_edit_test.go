package tui

import (
	"bytes"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry"
)

// x opens the form of live edits with the values the run trains with; enter
// on a field types its new value, enter again sends it as an edit command
// (a value its rule refuses is not sent: the form says why); the run's edit
// event acknowledges it and the form follows it.
func TestEditForm(t *testing.T) {
	var conf bytes.Buffer
	if err := configs.Encode(&conf, configs.Default()); err != nil {
		t.Fatal(err)
	}
	hs := rftHarnessWith(t, 120, 40, Options{Color: "never", RunDir: "runs/2026-11-22-1042", Config: conf.String()}, true)
	old := configs.Default().RFT.KLCoef
	hs.press("x")
	screen := ansi.Strip(hs.frame())
	for _, want := range []string{"Edit the run", "kl_coef", "weight.curiosity", "curriculum.stage"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the form lacks %q:\n%s", want, screen)
		}
	}
	setKL := func(v string) {
		hs.press("home", "down", "enter")
		hs.send(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
		for _, r := range v {
			hs.press(string(r))
		}
		hs.press("enter")
	}
	setKL("-1")
	if len(hs.feed.sentCommands()) != 0 || !strings.Contains(ansi.Strip(hs.frame()), "rft.kl_coef: must be >= 0, got -1") {
		t.Fatalf("a refused value: sent %v\n%s", hs.feed.sentCommands(), ansi.Strip(hs.frame()))
	}
	// The current value is shown for reference: typing replaces it.
	hs.press("home", "down", "enter", "0", ".", "2")
	if screen := ansi.Strip(hs.frame()); !strings.Contains(screen, "kl_coef = 0.2▏") {
		t.Fatalf("typing over the value shown:\n%s", screen)
	}
	hs.press("esc")
	setKL("0.2")
	sent := hs.feed.sentCommands()
	if len(sent) != 1 || sent[0].Kind != telemetry.CmdEdit || sent[0].Field != "kl_coef" || *sent[0].Value != 0.2 || sent[0].Source != "console" {
		t.Fatalf("sent %+v", sent)
	}
	if !strings.Contains(footer(hs), "edit requested") {
		t.Fatalf("footer %q", footer(hs))
	}
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 1241, Kind: telemetry.EventEdit, Message: "kl_coef 0.05 → 0.2",
		Data: map[string]any{"field": "kl_coef", "old": old, "new": 0.2, "phase": "rft", "from_step": 1242, "source": "console"}}}}))
	if f := footer(hs); !strings.Contains(f, "edit applied: kl_coef 0.05 → 0.2") {
		t.Fatalf("footer after the ack %q", f)
	}
	line := ""
	for _, l := range strings.Split(ansi.Strip(hs.frame()), "\n") {
		if strings.Contains(l, "kl_coef ") {
			line = l
		}
	}
	if !strings.Contains(line, " 0.2 ") {
		t.Fatalf("the form shows %q after the edit", line)
	}
}

// A launched trainer's forms list the settings its hello declared editable
// with their ranges, not pixelis's config's fields: x sends an edit of one
// (a value outside its range is refused in the form, nothing sent), b
// chooses the fork's values and sends the fork with them.
func TestEditFormLaunched(t *testing.T) {
	var conf bytes.Buffer
	if err := configs.Encode(&conf, configs.Default()); err != nil {
		t.Fatal(err)
	}
	ranges := map[string][]float64{"lr": {1e-6, 0.1}, "weight.curiosity": {0, 1}}
	hs := rftHarnessWith(t, 120, 40, Options{Color: "never", Config: conf.String(), Settings: func() string { return "" },
		Editable: func() map[string][]float64 { return ranges }}, true)
	hs.press("x")
	screen := ansi.Strip(hs.frame())
	for _, want := range []string{"Edit the trainer", "lr ", "in [1e-06, 0.1], declared by the trainer", "weight.curiosity", "in [0, 1]"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the launched form lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "kl_coef") {
		t.Fatalf("the launched form lists pixelis's own fields:\n%s", screen)
	}
	typeValue := func(down int, v string) {
		hs.press("home")
		for range down {
			hs.press("down")
		}
		hs.press("enter")
		hs.send(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
		for _, r := range v {
			hs.press(string(r))
		}
		hs.press("enter")
	}
	typeValue(1, "2")
	if len(hs.feed.sentCommands()) != 0 || !strings.Contains(ansi.Strip(hs.frame()), "edit weight.curiosity: must be in [0, 1] (the trainer's declared range), got 2") {
		t.Fatalf("a value out of range: sent %v\n%s", hs.feed.sentCommands(), ansi.Strip(hs.frame()))
	}
	typeValue(1, "0.25")
	sent := hs.feed.sentCommands()
	if len(sent) != 1 || sent[0].Kind != telemetry.CmdEdit || sent[0].Field != "weight.curiosity" || *sent[0].Value != 0.25 || sent[0].Source != "console" {
		t.Fatalf("sent %+v", sent)
	}
	hs.press("esc")

	hs.press("b")
	typeValue(1, "0.001") // the first line forks: lr is the second
	screen = ansi.Strip(hs.frame())
	if !strings.Contains(screen, "Fork the trainer") || !strings.Contains(screen, "fork now with lr=0.001") || !strings.Contains(screen, "→ 0.001") {
		t.Fatalf("the fork form after choosing lr:\n%s", screen)
	}
	if n := len(hs.feed.sentCommands()); n != 1 {
		t.Fatalf("choosing a fork's value sent a command: %+v", hs.feed.sentCommands())
	}
	hs.press("home", "enter")
	sent = hs.feed.sentCommands()
	if len(sent) != 2 || sent[1].Kind != telemetry.CmdFork || len(sent[1].Edits) != 1 || sent[1].Edits[0] != (telemetry.FieldValue{Field: "lr", Value: 0.001}) {
		t.Fatalf("sent %+v", sent)
	}
}

// Before a launched trainer connects, its forms say its settings show once
// it has, and fork mode offers no fork.
func TestEditFormLaunchedBeforeHello(t *testing.T) {
	hs := rftHarnessWith(t, 120, 40, Options{Color: "never", Settings: func() string { return "" },
		Editable: func() map[string][]float64 { return nil }}, true)
	hs.press("b")
	screen := ansi.Strip(hs.frame())
	if !strings.Contains(screen, "has not connected to its channel yet") || strings.Contains(screen, "fork now") {
		t.Fatalf("the fork form before the hello:\n%s", screen)
	}
	hs.press("enter")
	if sent := hs.feed.sentCommands(); len(sent) != 0 {
		t.Fatalf("sent %+v", sent)
	}
}

// b opens the same form in fork mode: enter on a field chooses its value in
// the fork (nothing is sent), enter on the first line sends the fork with
// the edits chosen and closes the form; the run's fork event says where the
// fork went and how to compare the two.
func TestForkForm(t *testing.T) {
	var conf bytes.Buffer
	if err := configs.Encode(&conf, configs.Default()); err != nil {
		t.Fatal(err)
	}
	hs := rftHarnessWith(t, 120, 40, Options{Color: "never", RunDir: "runs/r", Config: conf.String()}, true)
	hs.press("b")
	screen := ansi.Strip(hs.frame())
	for _, want := range []string{"Fork the run", "▶ fork now, no edit", "kl_coef"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the fork form lacks %q:\n%s", want, screen)
		}
	}
	hs.press("home", "down", "down", "enter")
	hs.send(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	hs.press("0", ".", "2", "enter")
	screen = ansi.Strip(hs.frame())
	if len(hs.feed.sentCommands()) != 0 || !strings.Contains(screen, "fork now with kl_coef=0.2") || !strings.Contains(screen, "→ 0.2") {
		t.Fatalf("choosing an edit: sent %v\n%s", hs.feed.sentCommands(), screen)
	}
	hs.press("esc", "B")
	if hs.quit || !strings.Contains(footer(hs), "no fork of this run yet") {
		t.Fatalf("B before a fork: quit %v, footer %q", hs.quit, footer(hs))
	}
	hs.press("b", "home", "down", "down", "enter")
	hs.send(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	hs.press("0", ".", "2", "enter", "home", "enter")
	sent := hs.feed.sentCommands()
	if len(sent) != 1 || sent[0].Kind != telemetry.CmdFork || len(sent[0].Edits) != 1 || sent[0].Edits[0] != (telemetry.FieldValue{Field: "kl_coef", Value: 0.2}) {
		t.Fatalf("sent %+v", sent)
	}
	if strings.Contains(ansi.Strip(hs.frame()), "Fork the run") {
		t.Fatal("the form stays open after the fork was sent")
	}
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 1241, Kind: telemetry.EventFork, Message: "forked → runs/r-fork-1241 at step 1241",
		Data: map[string]any{"dir": "runs/r-fork-1241", "step": 1241}}}}))
	if f := footer(hs); !strings.Contains(f, "forked → runs/r-fork-1241 at step 1241 · B compares the two") {
		t.Fatalf("footer after the fork %q", f)
	}
	hs.press("B")
	if !hs.quit || hs.m.compareFork != "runs/r-fork-1241" {
		t.Fatalf("B after the fork: quit %v, compare with %q", hs.quit, hs.m.compareFork)
	}
}
