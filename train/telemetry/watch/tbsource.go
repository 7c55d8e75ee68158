package watch

import (
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

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

// rewind forgets what was read: the next poll reads the files from their start.
func (s *tbSource) rewind() { s.start() }
