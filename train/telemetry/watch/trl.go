package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// A Hugging Face Trainer (TRL's GRPOTrainer among them) keeps its state in
// trainer_state.json (transformers' TrainerState.save_to_json): global_step,
// max_steps and log_history, one object per logging step holding the logged metrics
// and "step". It is written into every checkpoint-<global step>/ directory when the
// checkpoint is saved, and into the output directory itself by save_state(), so a
// live run's newest history is in its newest checkpoint.
const trainerStateFile = "trainer_state.json"

// checkpointPrefix names the Trainer's checkpoint directories (PREFIX_CHECKPOINT_DIR).
const checkpointPrefix = "checkpoint-"

// trlSource reads a TRL output directory: the log history of the newest
// trainer_state.json, and the checkpoint directories as they appear.
type trlSource struct {
	dir string

	state     os.FileInfo // the trainer_state.json read last
	statePath string
	badState  os.FileInfo // one that failed to parse, reported once
	seen      []logMark   // the log_history entries read, in order
	endAt     int         // index in seen of the entry train() logs when it ends, -1 none
	ckpts     map[int]bool
}

// logMark identifies a log_history entry already read: a history that no longer
// starts with the same entries was rewritten (a resume from an earlier checkpoint).
type logMark struct {
	hash uint64
	step int
}

func newTRLSource(dir string) *trlSource {
	return &trlSource{dir: dir, ckpts: map[int]bool{}, endAt: -1}
}

type checkpoint struct {
	name string
	step int
}

// checkpoints lists the checkpoint-N directories of dir, in step order.
func checkpoints(dir string) ([]checkpoint, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []checkpoint
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), checkpointPrefix) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), checkpointPrefix))
		if err != nil || n < 0 {
			continue
		}
		out = append(out, checkpoint{e.Name(), n})
	}
	slices.SortFunc(out, func(a, b checkpoint) int { return a.step - b.step })
	return out, nil
}

// rewind forgets the history read: the next poll reads trainer_state.json again.
// Checkpoints already reported are not reported again.
func (s *trlSource) rewind() {
	s.state, s.statePath, s.badState, s.seen, s.endAt = nil, "", nil, nil, -1
}

func (s *trlSource) poll(c *core) error {
	ckpts, err := checkpoints(s.dir)
	if err != nil {
		return err
	}
	for _, ck := range ckpts {
		if s.ckpts[ck.step] {
			continue
		}
		s.ckpts[ck.step] = true
		path := filepath.Join(s.dir, ck.name)
		e := telemetry.Event{Step: ck.step, Kind: telemetry.EventCheckpoint,
			Message: "checkpoint saved: " + path, Data: map[string]any{"path": path}}
		if fi, err := os.Stat(path); err == nil {
			e.Time = fi.ModTime()
			c.wrote(e.Time)
		}
		c.event(e)
	}
	return s.readState(c, ckpts)
}

// readState reads the newest trainer_state.json when it changed.
func (s *trlSource) readState(c *core, ckpts []checkpoint) error {
	var path string
	var fi os.FileInfo
	candidates := []string{filepath.Join(s.dir, trainerStateFile)}
	for _, ck := range slices.Backward(ckpts) {
		candidates = append(candidates, filepath.Join(s.dir, ck.name, trainerStateFile))
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && (fi == nil || st.ModTime().After(fi.ModTime())) {
			path, fi = p, st
		}
	}
	if fi == nil || (path == s.statePath && sameFile(s.state, fi)) || sameFile(s.badState, fi) {
		return nil
	}
	c.wrote(fi.ModTime())
	b, err := os.ReadFile(path)
	if err != nil {
		return ignoreMissing(err)
	}
	var doc struct {
		GlobalStep int               `json:"global_step"`
		MaxSteps   int               `json:"max_steps"`
		LogHistory []json.RawMessage `json:"log_history"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		// A file being written parses once it is complete; report only one that has
		// stayed unparseable for a while.
		if time.Since(fi.ModTime()) > 2*time.Second {
			s.badState = fi
			c.warn(0, fmt.Sprintf("%s: %v (keeping the history read before)", path, err))
		}
		return nil
	}
	s.statePath, s.state = path, fi
	c.totalSteps = doc.MaxSteps

	// Keep what matches the history read before; a history that diverges from it
	// was rewritten from the first differing entry on.
	k := 0
	marks := make([]logMark, len(doc.LogHistory))
	for i, raw := range doc.LogHistory {
		marks[i] = logMark{hash: hashJSON(raw), step: -1}
	}
	for k < len(s.seen) && k < len(marks) && s.seen[k].hash == marks[k].hash {
		k++
	}
	if k < len(s.seen) {
		from := s.seen[k].step
		if k < len(doc.LogHistory) {
			if st, ok := entryStep(doc.LogHistory[k]); ok {
				from = min(from, st)
			}
		}
		c.restart(from)
		s.seen = s.seen[:k]
		if s.endAt >= k {
			s.endAt = -1
		}
	}
	for i := k; i < len(doc.LogHistory); i++ {
		step, end := s.readEntry(c, doc.LogHistory[i])
		marks[i].step = step
		s.seen = append(s.seen, marks[i])
		if end {
			s.endAt = i
		}
	}
	c.finished = s.endAt >= 0 || (doc.MaxSteps > 0 && doc.GlobalStep >= doc.MaxSteps)
	return nil
}

// readEntry records the metrics of one log_history entry, named as transformers'
// TensorBoardCallback names them, and returns its step and whether it is the
// entry train() logs when it ends (the one holding "train_runtime").
func (s *trlSource) readEntry(c *core, raw json.RawMessage) (step int, end bool) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return -1, false
	}
	st, ok := m["step"].(float64)
	if !ok {
		return -1, false
	}
	step = int(st)
	for k, v := range m {
		x, ok := v.(float64) // null (a metric with no value this time), strings, lists: skipped
		if !ok || k == "step" {
			continue
		}
		c.value(tensorBoardName(k), step, 0, x)
	}
	_, end = m["train_runtime"]
	return step, end
}

// tensorBoardName is the tag transformers' TensorBoardCallback gives a logged
// metric (rewrite_logs in transformers/integrations/integration_utils.py).
func tensorBoardName(k string) string {
	switch {
	case strings.HasPrefix(k, "eval_"):
		return "eval/" + k[len("eval_"):]
	case strings.HasPrefix(k, "test_"):
		return "test/" + k[len("test_"):]
	}
	return "train/" + k
}

func entryStep(raw json.RawMessage) (int, bool) {
	var e struct {
		Step *float64 `json:"step"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Step == nil || math.IsNaN(*e.Step) {
		return 0, false
	}
	return int(*e.Step), true
}

// hashJSON fingerprints a JSON value regardless of its layout.
func hashJSON(raw json.RawMessage) uint64 {
	var buf bytes.Buffer
	h := fnv.New64a()
	if json.Compact(&buf, raw) == nil {
		h.Write(buf.Bytes())
	} else {
		h.Write(raw)
	}
	return h.Sum64()
}

func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
