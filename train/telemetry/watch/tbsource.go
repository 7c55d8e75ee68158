package watch

import (
	"os"
	"path/filepath"
	"strings"

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

// trainEndTag is the tag of the value the Hugging Face Trainer logs when train()
// ends ("train_runtime", which its TensorBoardCallback writes under "train/"): a
// run whose event files hold it recorded its end.
const trainEndTag = "train/train_runtime"

// tbSource reads a run's TensorBoard event files. A value whose step goes back
// for its tag supersedes the values from that step on, as TensorBoard purges
// "orphaned" data when a run restarts from a checkpoint without a SessionLog; a
// SessionLog START supersedes every tag's. The trainer's settings come from the
// run's files and, for a run read without its subdirectories, from the event files
// of its direct subdirectories too: PyTorch's SummaryWriter.add_hparams writes the
// hyperparameters into a subdirectory of the run named by the time.
type tbSource struct {
	dir       string
	recursive bool
	r         *tb.Reader
	subs      map[string]*tb.Reader // the run's direct subdirectories, read for settings only
	last      map[string]int64      // newest step read of each tag
	warns     []*tb.CorruptError
	set       tbSettings
	ended     bool  // the trainer logged the end of its training
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
	s.subs = map[string]*tb.Reader{}
	s.set, s.ended = tbSettings{}, false
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
	if err == nil {
		err = s.readSubdirs()
	}
	s.settle(c)
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
		if len(e.Texts) > 0 || len(e.HParams) > 0 {
			s.set.add(e)
		}
		step := int(e.Step)
		if e.Restart {
			c.restart(step)
			for tag, last := range s.last {
				s.last[tag] = min(last, e.Step-1)
			}
			return
		}
		for _, v := range e.Values {
			if v.Tag == trainEndTag {
				s.ended = true
			}
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

// readSubdirs reads the settings the event files of the run's direct
// subdirectories hold (for a run read without them).
func (s *tbSource) readSubdirs() error {
	if s.recursive {
		return nil
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return ignoreMissing(err)
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		r := s.subs[e.Name()]
		if r == nil {
			r = tb.NewReader(filepath.Join(s.dir, e.Name()), false)
			r.Warn = func(e *tb.CorruptError) { s.warns = append(s.warns, e) }
			s.subs[e.Name()] = r
		}
		if _, err := r.Read(func(e *tb.Event) {
			if len(e.Texts) > 0 || len(e.HParams) > 0 {
				s.set.add(e)
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// settle passes to c what the files said of the run beyond its values: the
// trainer's settings, its step budget, the end of its training.
func (s *tbSource) settle(c *core) {
	if s.set.changed {
		c.tbSettings = s.set.String()
		s.set.changed = false
	}
	if n := s.set.maxSteps(); n > 0 && c.totalSteps == 0 {
		c.totalSteps = n
	}
	if s.ended {
		c.finished = true
	}
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
