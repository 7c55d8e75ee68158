package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// lineTail follows a text file that grows by whole lines: each read hands on the
// complete lines written since the last. A file that shrank or was replaced was
// rewritten: read reports tb.ErrRewritten and the caller starts over.
type lineTail struct {
	path    string
	id      os.FileInfo
	off     int64
	partial []byte // an unfinished last line, until its newline comes
	line    int    // lines read so far
}

// maxLine bounds a line: a longer one is skipped (and its length reported).
const maxLine = 4 << 20

func (t *lineTail) read(fn func(line []byte, n int)) (wrote bool, err error) {
	fh, err := os.Open(t.path)
	if err != nil {
		if t.id != nil {
			return false, fmt.Errorf("%s: %w (it vanished)", t.path, tb.ErrRewritten)
		}
		return false, ignoreMissing(err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return false, err
	}
	if t.id != nil && (!os.SameFile(t.id, fi) || fi.Size() < t.off) {
		return false, fmt.Errorf("%s: %w", t.path, tb.ErrRewritten)
	}
	t.id = fi
	if fi.Size() == t.off {
		return false, nil
	}
	buf := make([]byte, 256<<10)
	r := io.NewSectionReader(fh, t.off, fi.Size()-t.off)
	for {
		n, err := r.Read(buf)
		t.off += int64(n)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				if len(t.partial)+len(chunk) <= maxLine {
					t.partial = append(t.partial, chunk...)
				}
				break
			}
			line := chunk[:i]
			if len(t.partial) > 0 {
				line = append(t.partial, line...)
				t.partial = t.partial[:0]
			}
			t.line++
			fn(line, t.line)
			chunk = chunk[i+1:]
		}
		if err == io.EOF || n == 0 {
			return true, nil
		}
		if err != nil {
			return true, err
		}
	}
}

// verlJSONLSource reads verl's FileLogger file: one {"step": N, "data": {…}} a line
// (verl/utils/tracking.py, FileLogger.log), the metrics of one step a line.
type verlJSONLSource struct {
	tail   lineTail
	warned map[string]bool
}

func newVerlJSONLSource(path string) *verlJSONLSource {
	return &verlJSONLSource{tail: lineTail{path: path}, warned: map[string]bool{}}
}

func (s *verlJSONLSource) rewind() { s.tail = lineTail{path: s.tail.path} }

func (s *verlJSONLSource) poll(c *core) error {
	wrote, err := s.tail.read(func(line []byte, n int) { s.record(c, line, n) })
	if wrote {
		c.wroteFile(s.tail.id)
	}
	return err
}

func (s *verlJSONLSource) record(c *core, line []byte, n int) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var rec struct {
		Step *float64                   `json:"step"`
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(quoteNonFinite(line), &rec); err != nil || rec.Step == nil || rec.Data == nil {
		c.warn(0, fmt.Sprintf("%s:%d: not a {\"step\": N, \"data\": {…}} record: skipped", s.tail.path, n))
		return
	}
	step := int(*rec.Step)
	for _, k := range slices.Sorted(maps.Keys(rec.Data)) { // warnings in a stable order
		raw := rec.Data[k]
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		x, read, note := logValue(v)
		if note != "" && !s.warned[k] {
			s.warned[k] = true
			c.warn(step, fmt.Sprintf("%s:%d: %q %s", s.tail.path, n, k, note))
		}
		if read {
			c.value(k, step, 0, x)
		}
	}
}

// verlConsoleSource reads the lines verl's console logger prints (verl/utils/
// logger/aggregate_logger.py: "step:N - key:value - key:value …", values rounded
// as printed), from a captured log with whatever else the run printed around them:
// Ray's "(TaskRunner pid=…)" prefix, colour codes and the SFT trainer's tqdm bars
// are skipped. The trainers' own lines say the step budget and the end (consoleBudget,
// consoleEnd).
type verlConsoleSource struct {
	tail   lineTail
	warned map[string]bool
	config []string // the config verl pretty-prints when it starts, as read so far
	depth  int      // the braces of config still open
	done   bool     // the config was read (or is not printed)
	budget int      // the step budget the trainer printed, 0 none
	ended  bool     // the trainer printed its last step's line
}

func newVerlConsoleSource(path string) *verlConsoleSource {
	return &verlConsoleSource{tail: lineTail{path: path}, warned: map[string]bool{}}
}

func (s *verlConsoleSource) rewind() {
	*s = verlConsoleSource{tail: lineTail{path: s.tail.path}, warned: map[string]bool{}}
}

func (s *verlConsoleSource) poll(c *core) error {
	wrote, err := s.tail.read(func(line []byte, n int) { s.line(c, string(line), n) })
	if wrote {
		c.wroteFile(s.tail.id)
	}
	c.totalSteps, c.finished = s.budget, s.ended
	return err
}

// consoleBudget finds the step budget verl's trainers print as they start:
// "Total training steps: N" (RayPPOTrainer, the SFT trainers), or the older
// fsdp_sft_trainer's "Number of steps/epoch 35, number of epochs 3, total number
// of steps 105".
var consoleBudget = regexp.MustCompile(`(?:Total training steps: |total number of steps )(\d+)`)

// consoleEnd begins the line verl's trainers print after their last step (the SFT
// trainers with print, RayPPOTrainer with pprint, which quotes it).
const consoleEnd = "Final validation metrics: "

// ansiEscape matches a terminal colour code.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// consoleLineStart finds where a console line's "step:N - " begins.
var consoleLineStart = regexp.MustCompile(consoleEdge + `step:(\d+) - `)

func (s *verlConsoleSource) line(c *core, line string, n int) {
	if !s.done {
		s.configLine(c, line)
	}
	if strings.Contains(line, "steps") {
		if m := consoleBudget.FindStringSubmatch(line); m != nil {
			s.budget, _ = strconv.Atoi(m[1])
		}
	}
	if strings.Contains(line, consoleEnd) {
		s.ended = true
	}
	if !strings.Contains(line, "step:") {
		return
	}
	line = ansiEscape.ReplaceAllString(strings.TrimRight(line, "\r"), "")
	m := consoleLineStart.FindStringSubmatchIndex(line)
	if m == nil {
		return
	}
	step, err := strconv.Atoi(line[m[4]:m[5]])
	if err != nil {
		return
	}
	for _, part := range strings.Split(line[m[1]:], " - ") {
		i := strings.LastIndexByte(part, ':')
		if i <= 0 {
			continue
		}
		k, text := strings.TrimSpace(part[:i]), strings.TrimSpace(part[i+1:])
		x, err := strconv.ParseFloat(text, 64)
		ok := err == nil
		if !ok {
			x, ok = reprNumber(text)
		}
		if !ok {
			if !s.warned[k] {
				s.warned[k] = true
				c.warn(step, fmt.Sprintf("%s:%d: %q is %q, not a number: not shown", s.tail.path, n, k, text))
			}
			continue
		}
		c.value(k, step, 0, x)
	}
}

// rayPrefix is what Ray puts before an actor's output: "(TaskRunner pid=7) ".
var rayPrefix = regexp.MustCompile(`^\([A-Za-z_]+ pid=\d+(, ip=[^)]*)?\) ?`)

// configLine collects the config verl pretty-prints as it starts (main_ppo's
// pprint of the resolved config, "{'actor_rollout_ref': {…"), for the console's
// run view: from its opening brace to the one that closes it.
func (s *verlConsoleSource) configLine(c *core, line string) {
	text := rayPrefix.ReplaceAllString(ansiEscape.ReplaceAllString(strings.TrimRight(line, "\r"), ""), "")
	if len(s.config) == 0 {
		if !strings.HasPrefix(text, "{'") {
			if strings.Contains(line, "step:") {
				s.done = true // the steps began: no config was printed before them
			}
			return
		}
	}
	s.config = append(s.config, text)
	s.depth += strings.Count(text, "{") - strings.Count(text, "}")
	if s.depth <= 0 || len(s.config) >= 5000 {
		s.done = true
		c.settings = "[verl config, as the log printed it]\n" + strings.Join(s.config, "\n")
	}
}

// configNear is the config a verl run left beside its log, as text for the
// console's run view: Hydra's .hydra/config.yaml, or a config.yaml, in the log's
// directory or the one above; "" when there is none.
func configNear(path string) string {
	dir := filepath.Dir(path)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		for _, name := range []string{filepath.Join(".hydra", "config.yaml"), "config.yaml"} {
			p := filepath.Join(d, name)
			b, err := os.ReadFile(p)
			if err != nil || len(b) == 0 {
				continue
			}
			if len(b) > 256<<10 {
				b = b[:256<<10]
			}
			return "[" + p + "]\n" + strings.TrimRight(string(b), "\n")
		}
	}
	return ""
}
