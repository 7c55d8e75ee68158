package tui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Palette. Colours are given in 24-bit; Bubble Tea's renderer downsamples them
// to what the terminal supports (256 or 16 colours), so only the no-colour
// case needs handling here.
var (
	colAccent  = lipgloss.Color("#A78BFA")
	colBorder  = lipgloss.Color("#5C6370")
	colDim     = lipgloss.Color("#8B949E")
	colGood    = lipgloss.Color("#3FB950")
	colBad     = lipgloss.Color("#F85149")
	colWarn    = lipgloss.Color("#D29922")
	colInfo    = lipgloss.Color("#58A6FF")
	colCyan    = lipgloss.Color("#39C5CF")
	colMagenta = lipgloss.Color("#D2A8FF")
)

// seriesColors tell overlaid runs apart: distinct in hue and brightness on a
// dark or light background (the Okabe–Ito palette, which also stays apart
// for the common colour-vision deficiencies), then a few more.
var seriesColors = []color.Color{
	lipgloss.Color("#E69F00"), lipgloss.Color("#56B4E9"), lipgloss.Color("#009E73"), lipgloss.Color("#F0E442"),
	lipgloss.Color("#0072B2"), lipgloss.Color("#D55E00"), lipgloss.Color("#CC79A7"), lipgloss.Color("#BBBBBB"),
}

// styles is every style the console draws with, in one place. With colour
// off every style is empty, so the frame holds no escape codes at all and
// stays readable through its markers (✓ ▶ ✗ ▲ ▼) and the heavy border of
// the focused pane.
type styles struct {
	color bool

	title, dim, label, accent     lipgloss.Style
	good, bad, warn, info         lipgloss.Style
	border, borderFocus           lipgloss.Style
	barPos, barNeg, bar, spark    lipgloss.Style
	state                         map[telemetry.State]lipgloss.Style
	event                         map[string]lipgloss.Style
	help                          help.Styles
	prompt, statusOK, statusError lipgloss.Style
	match                         lipgloss.Style   // a search match
	series                        []lipgloss.Style // the lines of overlaid runs, in run order
}

func newStyles(p colorprofile.Profile) styles {
	if p <= colorprofile.ASCII {
		plain := lipgloss.NewStyle()
		return styles{
			state: map[telemetry.State]lipgloss.Style{},
			event: map[string]lipgloss.Style{},
			help:  help.Styles{},
			title: plain, dim: plain, label: plain, accent: plain, good: plain, bad: plain,
			warn: plain, info: plain, border: plain, borderFocus: plain, barPos: plain,
			barNeg: plain, bar: plain, spark: plain, prompt: plain, statusOK: plain, statusError: plain,
			match: plain, series: []lipgloss.Style{plain},
		}
	}
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	s := styles{
		color:       true,
		title:       fg(colAccent).Bold(true),
		dim:         fg(colDim),
		label:       lipgloss.NewStyle().Bold(true),
		accent:      fg(colAccent),
		good:        fg(colGood),
		bad:         fg(colBad),
		warn:        fg(colWarn),
		info:        fg(colInfo),
		border:      fg(colBorder),
		borderFocus: fg(colAccent),
		barPos:      fg(colGood),
		barNeg:      fg(colBad),
		bar:         fg(colInfo),
		spark:       fg(colCyan),
		prompt:      fg(colWarn).Bold(true),
		statusOK:    fg(colInfo),
		statusError: fg(colBad),
		match:       lipgloss.NewStyle().Reverse(true),
	}
	for _, c := range seriesColors {
		s.series = append(s.series, fg(c))
	}
	s.state = map[telemetry.State]lipgloss.Style{
		telemetry.StateStarting:      fg(colDim),
		telemetry.StateRunning:       fg(colGood),
		telemetry.StatePaused:        fg(colWarn),
		telemetry.StateCheckpointing: fg(colInfo),
		telemetry.StateEvaluating:    fg(colCyan),
		telemetry.StateDone:          fg(colGood).Bold(true),
		telemetry.StateFailed:        fg(colBad).Bold(true),
	}
	s.event = map[string]lipgloss.Style{
		telemetry.EventStageAdvance:  fg(colGood),
		telemetry.EventDataAdvance:   fg(colGood),
		telemetry.EventStageRollback: fg(colWarn),
		telemetry.EventDataRollback:  fg(colWarn),
		telemetry.EventCheckpoint:    fg(colInfo),
		telemetry.EventEval:          fg(colCyan),
		telemetry.EventCommand:       fg(colDim),
		telemetry.EventEdit:          fg(colAccent),
		telemetry.EventFork:          fg(colAccent),
		telemetry.EventPhase:         fg(colMagenta),
		telemetry.EventWarning:       fg(colWarn),
		telemetry.EventError:         fg(colBad).Bold(true),
	}
	key := fg(colAccent)
	desc := fg(colDim)
	sep := fg(colBorder)
	s.help = help.Styles{
		Ellipsis: sep, ShortKey: key, ShortDesc: desc, ShortSeparator: sep,
		FullKey: key, FullDesc: desc, FullSeparator: sep,
	}
	return s
}

// render applies st only when colour is on; with colour off the text passes
// through untouched (no Render call, no reset codes).
func (s styles) render(st lipgloss.Style, text string) string {
	if !s.color || text == "" {
		return text
	}
	return st.Render(text)
}

func (s styles) stateStyle(st telemetry.State) lipgloss.Style {
	if v, ok := s.state[st]; ok {
		return v
	}
	return s.dim
}

func (s styles) eventStyle(kind string) lipgloss.Style {
	if v, ok := s.event[kind]; ok {
		return v
	}
	return lipgloss.NewStyle()
}

// eventMarker gives each event kind a glyph, so kinds stay apart without colour.
func eventMarker(kind string) string {
	switch kind {
	case telemetry.EventStageAdvance, telemetry.EventDataAdvance:
		return "▲"
	case telemetry.EventStageRollback, telemetry.EventDataRollback:
		return "▼"
	case telemetry.EventCheckpoint:
		return "■"
	case telemetry.EventEval:
		return "◆"
	case telemetry.EventCommand:
		return "›"
	case telemetry.EventEdit:
		return "✎"
	case telemetry.EventFork:
		return "⑂"
	case telemetry.EventPhase:
		return "»"
	case telemetry.EventWarning:
		return "!"
	case telemetry.EventError:
		return "✗"
	}
	return "·"
}

// seriesStyle is the style of the i-th overlaid run.
func (s styles) seriesStyle(i int) lipgloss.Style { return s.series[i%len(s.series)] }
