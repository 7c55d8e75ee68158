package watch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
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
	top       *stateFile            // the output directory's own trainer_state.json, parsed
	newest    *stateFile            // the newest checkpoint's, parsed
	badState  os.FileInfo           // one that failed to parse, reported once
	unread    map[string]unreadFile // the state files that do not parse, by path
	seen      []logMark             // the log_history entries read, in order
	endAt     int                   // index in seen of the entry train() logs when it ends, -1 none
	ckpts     map[int]bool
	warned    map[string]bool // metrics whose odd values were warned about
}

// logMark identifies a log_history entry already read: a history that no longer
// starts with the same entries was rewritten (a resume from an earlier checkpoint).
type logMark struct {
	hash uint64
	step int
}

func newTRLSource(dir string) *trlSource {
	return &trlSource{dir: dir, ckpts: map[int]bool{}, endAt: -1, warned: map[string]bool{}, unread: map[string]unreadFile{}}
}

// stateSettle is how long a trainer_state.json that does not parse is taken
// for one being written: the Trainer rewrites it in place, so a reader can
// catch it half-written; one still cut short after this is reported.
const stateSettle = 2 * time.Second

// unreadFile is a state file that did not parse when last read.
type unreadFile struct {
	err     error
	since   time.Time // when it was first found so
	settled bool      // it stayed so for stateSettle: not one being written
}

// unreadable reports whether a state file that does not parse may still be
// being written, and those that do not parse.
func (s *trlSource) unreadable() (settling bool, err error) {
	var errs []error
	for _, path := range slices.Sorted(maps.Keys(s.unread)) {
		u := s.unread[path]
		errs = append(errs, u.err)
		settling = settling || !u.settled
	}
	return settling, errors.Join(errs...)
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
	s.top, s.newest = nil, nil
	clear(s.unread)
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

// stateDoc is what the feed reads of a trainer_state.json.
type stateDoc struct {
	GlobalStep        int               `json:"global_step"`
	MaxSteps          int               `json:"max_steps"`
	LogHistory        []json.RawMessage `json:"log_history"`
	StatefulCallbacks struct {
		TrainerControl struct {
			Args struct {
				ShouldTrainingStop bool `json:"should_training_stop"`
			} `json:"args"`
		} `json:"TrainerControl"`
	} `json:"stateful_callbacks"`
	settings string // the trainer's settings, as `i` shows them
}

// stateFile is one trainer_state.json read: its identity when read and its contents.
type stateFile struct {
	path string
	fi   os.FileInfo
	doc  *stateDoc
}

// readStateFile reads and parses path, reusing prev when the file has not changed.
// A file that does not parse is reported once it has stayed so for a while (one
// being written parses once it is complete) and not read again until it changes.
func (s *trlSource) readStateFile(c *core, path string, prev *stateFile) *stateFile {
	fi, err := os.Stat(path)
	if err != nil {
		delete(s.unread, path)
		return nil
	}
	if prev != nil && prev.path == path && sameFile(prev.fi, fi) {
		return prev
	}
	if sameFile(s.badState, fi) {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	doc, err := parseState(b)
	if err != nil {
		u, seen := s.unread[path]
		if !seen {
			u.since = time.Now()
		}
		// Unchanged for stateSettle, or unreadable for that long (a clock
		// that puts its time ahead would hold the first forever).
		u.settled = time.Since(fi.ModTime()) > stateSettle || time.Since(u.since) > stateSettle
		u.err = fmt.Errorf("%s does not parse (%v): it is cut short or not a trainer_state.json", path, err)
		s.unread[path] = u
		settled := u.settled
		if settled {
			s.badState = fi
			c.warn(0, fmt.Sprintf("%s: %v (keeping the history read before)", path, err))
		}
		return nil
	}
	delete(s.unread, path)
	return &stateFile{path: path, fi: fi, doc: doc}
}

// parseState parses a trainer_state.json. Python's json.dumps writes non-finite
// floats as NaN, Infinity and -Infinity, which Go's decoder refuses: they are read
// as the non-finite values they are.
func parseState(b []byte) (*stateDoc, error) {
	b = quoteNonFinite(b)
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) == nil {
		doc.settings = stateSettings(top)
	}
	return &doc, nil
}

// readState reads the trainer_state.json holding the most steps when it changed:
// the output directory's own (save_state) or the one in the checkpoint of the
// highest step — by the step in its name, not by modification time, which copies
// and downloads reorder.
func (s *trlSource) readState(c *core, ckpts []checkpoint) error {
	top := s.readStateFile(c, filepath.Join(s.dir, trainerStateFile), s.top)
	s.top = top
	var newest *stateFile
	if n := len(ckpts); n > 0 {
		newest = s.readStateFile(c, filepath.Join(s.dir, ckpts[n-1].name, trainerStateFile), s.newest)
		s.newest = newest
	}
	pick := top
	if pick == nil || (newest != nil && newest.doc.GlobalStep > pick.doc.GlobalStep) {
		pick = newest
	}
	if pick == nil || (pick.path == s.statePath && sameFile(s.state, pick.fi)) {
		return nil
	}
	c.wrote(pick.fi.ModTime())
	s.statePath, s.state = pick.path, pick.fi
	s.apply(c, pick.doc)
	return nil
}

// apply reads a parsed trainer_state.json into c.
func (s *trlSource) apply(c *core, doc *stateDoc) {
	c.totalSteps, c.runStep, c.settings = doc.MaxSteps, doc.GlobalStep, doc.settings
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
	reachedMax := doc.MaxSteps > 0 && doc.GlobalStep >= doc.MaxSteps
	c.finished = s.endAt >= 0 || reachedMax
	// A Trainer told to stop (early stopping, a callback) before max_steps saves
	// should_training_stop in its last checkpoint: the run stopped early.
	c.stoppedEarly = !c.finished && doc.StatefulCallbacks.TrainerControl.Args.ShouldTrainingStop
}

// readEntry records the metrics of one log_history entry and returns its step and
// whether it is the entry train() logs when it ends (the one holding
// "train_runtime"). A null is a non-finite value (TRL logs None for a series
// whose values were all NaN); a number written as a string ("np.float64(-0.48)",
// from a callback that logged a NumPy scalar's repr) is read, and warned about
// once a metric; any other value is warned about once a metric and skipped.
func (s *trlSource) readEntry(c *core, raw json.RawMessage) (step int, end bool) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return -1, false
	}
	st, ok := m["step"].(float64)
	if !ok {
		c.warn(0, fmt.Sprintf("%s: a log_history entry without a numeric \"step\" skipped", s.statePath))
		return -1, false
	}
	step = int(st)
	for _, k := range slices.Sorted(maps.Keys(m)) { // warnings in a stable order
		v := m[k]
		if k == "step" {
			continue
		}
		x, read, note := logValue(v)
		if note != "" && !s.warned[k] {
			s.warned[k] = true
			c.warn(step, fmt.Sprintf("%s: %q at step %d %s", s.statePath, k, step, note))
		}
		if read {
			c.value(HFLogName(k), step, 0, x)
		}
	}
	_, end = m["train_runtime"]
	return step, end
}

// logValue reads one logged value: a number, or a non-finite one (null, NaN,
// ±Infinity). note says what was odd about anything else ("" when nothing was),
// and read whether a value was read all the same.
func logValue(v any) (x float64, read bool, note string) {
	switch v := v.(type) {
	case float64:
		return v, true, ""
	case nil:
		return math.NaN(), true, ""
	case string:
		if x, ok := nonFinite[v]; ok {
			return x, true, ""
		}
		if x, ok := reprNumber(v); ok {
			return x, true, fmt.Sprintf("is a string, %q: read as %v", v, x)
		}
		return 0, false, fmt.Sprintf("is the string %q, not a number: not shown", v)
	case bool:
		return 0, false, fmt.Sprintf("is %v, not a number: not shown", v)
	case []any:
		return 0, false, "is a list, not a number: not shown"
	}
	return 0, false, "is an object, not a number: not shown"
}

// nonFinite are the values quoteNonFinite writes for Python's bare NaN and
// ±Infinity: strings no JSON file holds unescaped (JSON text escapes a NUL).
var nonFinite = map[string]float64{"\x00NaN": math.NaN(), "\x00Infinity": math.Inf(1), "\x00-Infinity": math.Inf(-1)}

// reprNumber reads NumPy's repr of a scalar, "np.float64(0.5)": what a trainer
// writes when it logs a NumPy number through str(). Any other string is text (verl
// logs token texts such as "5" as strings): it is not read as a number.
func reprNumber(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	i := strings.IndexByte(t, '(')
	if i < 0 || !strings.HasPrefix(t, "np.") || !strings.HasSuffix(t, ")") {
		return 0, false
	}
	x, err := strconv.ParseFloat(t[i+1:len(t)-1], 64)
	return x, err == nil
}

// quoteNonFinite rewrites the bare tokens NaN, Infinity and -Infinity outside JSON
// strings as the strings nonFinite reads, so that the document parses.
func quoteNonFinite(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	inString := false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		switch {
		case inString && ch == '\\' && i+1 < len(b):
			out = append(out, ch, b[i+1])
			i++
			continue
		case ch == '"':
			inString = !inString
		case !inString && (ch == 'N' || ch == 'I' || ch == '-'):
			if tok := nonFiniteToken(b[i:]); tok != "" {
				out = append(out, `"\u0000`+tok+`"`...)
				i += len(tok) - 1
				continue
			}
		}
		out = append(out, ch)
	}
	return out
}

// nonFiniteToken is the non-finite token b starts with, "" for none.
func nonFiniteToken(b []byte) string {
	for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(b, []byte(tok)) {
			return tok
		}
	}
	return ""
}

// stateSettings writes the trainer's settings a trainer_state.json holds — batch
// size, logging, evaluation and save steps, max steps and epochs, the best metric
// and checkpoint — one "key = value" line each, in name order; the log history
// and the callbacks' state are left out.
func stateSettings(top map[string]json.RawMessage) string {
	var lines []string
	for k, v := range top {
		switch k {
		case "log_history", "stateful_callbacks", "is_local_process_zero", "is_world_process_zero", "trial_params":
			continue
		}
		lines = append(lines, k+" = "+strings.ReplaceAll(string(v), `"\u0000`, `"`))
	}
	slices.Sort(lines)
	return "[trainer_state.json]\n" + strings.Join(lines, "\n")
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
