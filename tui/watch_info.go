package tui

import "fmt"

// runFiles is what a feed of a run read from its files can say beyond its updates
// (the watch package's Feed says all of it): the run shown among the runs of its
// log directory, the trainer's settings, how the files are read, and how much of
// a long history is read so far. Each method is optional.
type (
	runLister interface {
		Runs() []string
		Run() string
	}
	settingser interface{ Settings() string }
	noter      interface{ Note() string }
	loader     interface{ Loading() (done, total int64) }
)

// watchInfo is what the console last learnt of a watched run's files.
type watchInfo struct {
	run      string   // the run shown
	runs     []string // the runs of its log directory
	settings string   // the trainer's settings, for i
	note     string   // how the path is read
	done     int64    // history read so far …
	total    int64    // … of this much (0: all read)
}

// readWatchInfo asks the feed what it can say of its files.
func readWatchInfo(feed any) watchInfo {
	var w watchInfo
	if f, ok := feed.(runLister); ok {
		w.run, w.runs = f.Run(), f.Runs()
	}
	if f, ok := feed.(settingser); ok {
		w.settings = f.Settings()
	}
	if f, ok := feed.(noter); ok {
		w.note = f.Note()
	}
	if f, ok := feed.(loader); ok {
		w.done, w.total = f.Loading()
	}
	return w
}

// otherRuns says which of its log directory's runs is shown: "run 2 of 3 (--run
// picks)"; "" when the directory holds one.
func (w watchInfo) otherRuns() string {
	if len(w.runs) < 2 {
		return ""
	}
	for i, r := range w.runs {
		if r == w.run || (w.run != "" && r == ".") {
			return fmt.Sprintf("run %d of %d (--run picks)", i+1, len(w.runs))
		}
	}
	return fmt.Sprintf("%d runs (--run picks)", len(w.runs))
}

// loading says how much of a long history is read: "reading history 43%"; "" once
// it is all read.
func (w watchInfo) loading() string {
	if w.total <= 0 || w.done >= w.total {
		return ""
	}
	return fmt.Sprintf("reading history %d%%", w.done*100/w.total)
}

// runKindLabel names a watched run's kind for the header: "RL", "SFT",
// "preference"; "" for pixelis's own runs (their phase says).
func runKindLabel(kind string) string {
	switch kind {
	case kindRL:
		return "RL"
	case kindSFT:
		return "SFT"
	}
	return kind
}
