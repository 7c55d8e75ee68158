package watch

import (
	"os"

	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// A long TensorBoard history (a million steps is a gigabyte of event files) is
// shown before it is read: the first poll glances at the files — their newest
// steps, and a sample of spans spread over the whole run — so that the console
// has the newest values and a coarse chart of the whole run at once; the files
// are then read in full, a slice per poll, into a store of their own that
// replaces the glance when it is complete. Shorter histories are read at once.
var (
	glanceAbove int64 = 64 << 20  // event files at least this large are glanced at first
	glanceSpans int64 = 512       // spans sampled over the history
	glanceSpan  int64 = 16 << 10  // bytes read at each
	glanceTail  int64 = 256 << 10 // bytes read at the end of the newest file
	fillPerPoll int64 = 32 << 20  // bytes of a long history read per poll
)

// minGlanceGaps keeps sampled spans this many spans' bytes apart at least.
const minGlanceGaps = 4

// tbSource reads a run's TensorBoard event files. A value whose step goes back
// for its tag supersedes the values from that step on, as TensorBoard purges
// "orphaned" data when a run restarts from a checkpoint without a SessionLog; a
// SessionLog START supersedes every tag's.
type tbSource struct {
	dir       string
	recursive bool
	r         *tb.Reader
	last      map[string]int64 // newest step read of each tag
	warns     []*tb.CorruptError
	started   bool  // the first poll happened
	filling   bool  // a long history is being read into the core's fill store
	size      int64 // the bytes of the files the glance looked at
}

func newTBSource(dir string, recursive bool) *tbSource {
	s := &tbSource{dir: dir, recursive: recursive}
	s.start()
	return s
}

func (s *tbSource) start() {
	s.r = tb.NewReader(s.dir, s.recursive)
	s.r.Warn = func(e *tb.CorruptError) { s.warns = append(s.warns, e) }
	s.last = map[string]int64{}
}

func (s *tbSource) poll(c *core) error {
	if !s.started {
		s.started = true
		if s.glance(c) {
			s.filling = true
			s.r.Budget = fillPerPoll
			c.beginFill()
			return nil // the glance is shown first; the full read begins with the next poll
		}
	}
	err := s.read(c)
	if s.filling && err == nil {
		if done, total := s.r.Progress(); done >= total {
			s.filling = false
			s.r.Budget = 0
			c.endFill()
		}
	}
	return err
}

// read passes what the files hold since the last read to c.
func (s *tbSource) read(c *core) error {
	newest := 0.0
	_, err := s.r.Read(func(e *tb.Event) {
		newest = max(newest, e.WallTime)
		step := int(e.Step)
		if e.Restart {
			c.restart(step)
			for tag, last := range s.last {
				s.last[tag] = min(last, e.Step-1)
			}
			return
		}
		for _, v := range e.Values {
			if last, ok := s.last[v.Tag]; ok && e.Step < last {
				c.purge(v.Tag, step)
			}
			s.last[v.Tag] = e.Step
			c.value(v.Tag, step, e.WallTime, v.Value)
		}
	})
	for _, w := range s.warns {
		c.warn(0, w.Error())
	}
	s.warns = s.warns[:0]
	if newest > 0 {
		c.wrote(wallTime(newest))
	}
	return err
}

// glance reads a sample of a long history into c — spans spread over the files
// in step order, then the end of the newest — and reports whether it did (the
// files are short enough to read at once otherwise).
func (s *tbSource) glance(c *core) bool {
	paths, err := s.r.Files()
	if err != nil || len(paths) == 0 {
		return false
	}
	sizes := make([]int64, len(paths))
	var total int64
	for i, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			sizes[i] = fi.Size()
			total += sizes[i]
		}
	}
	if total < glanceAbove {
		return false
	}
	s.size = total
	newest := 0.0
	take := func(e *tb.Event) {
		newest = max(newest, e.WallTime)
		for _, v := range e.Values {
			c.value(v.Tag, int(e.Step), e.WallTime, v.Value)
		}
	}
	gap := max(total/glanceSpans, minGlanceGaps*glanceSpan)
	var at int64 // offset in the files laid end to end
	for i, p := range paths {
		for ; at < sizes[i]; at += gap {
			tb.ReadSpan(p, at, glanceSpan, take) // a span that fails is a point fewer
		}
		at -= sizes[i]
	}
	last := len(paths) - 1
	tb.ReadSpan(paths[last], max(0, sizes[last]-glanceTail), glanceTail, take)
	if newest > 0 {
		c.wrote(wallTime(newest))
	}
	return true
}

// progress is how much of a long history is read: (0, 0) once it is all read.
func (s *tbSource) progress() (done, total int64) {
	if !s.filling {
		return 0, 0
	}
	done, total = s.r.Progress()
	return done, max(total, s.size) // the reader lists the files at its first read
}

// rewind forgets what was read: the next poll reads the files from their start.
func (s *tbSource) rewind() {
	s.start()
	s.started, s.filling = false, false
}
