package watch

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// textSuffix is what PyTorch's SummaryWriter.add_text appends to a text's tag.
const textSuffix = "/text_summary"

// tbSettings gathers the trainer's settings a run's event files hold, for the
// console's run view: the hyperparameters of the hparams plugin's session start
// (SummaryWriter.add_hparams, Keras, Lightning), and each text summary holding a
// JSON object — the Hugging Face Trainer's TensorBoardCallback writes its
// TrainingArguments as the text "args" and its model's config as "model_config".
// The newest value of a hyperparameter counts, and the newest text of a tag.
type tbSettings struct {
	hparams map[string]string                     // name → value, as text
	texts   map[string]map[string]json.RawMessage // tag → the object's fields
	changed bool
}

// add takes the settings an event holds.
func (t *tbSettings) add(e *tb.Event) {
	for _, h := range e.HParams {
		if t.hparams == nil {
			t.hparams = map[string]string{}
		}
		t.hparams[h.Name] = h.Value
		t.changed = true
	}
	for _, x := range e.Texts {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(x.Text), &obj) != nil || len(obj) == 0 {
			continue // prose, markdown: not settings
		}
		if t.texts == nil {
			t.texts = map[string]map[string]json.RawMessage{}
		}
		t.texts[strings.TrimSuffix(x.Tag, textSuffix)] = obj
		t.changed = true
	}
}

// String writes the settings as the run view shows them: a section for the
// hyperparameters, then one for each text in tag order, each "key = value" line
// in name order.
func (t *tbSettings) String() string {
	var sections []string
	if len(t.hparams) > 0 {
		var lines []string
		for name, v := range t.hparams {
			lines = append(lines, name+" = "+v)
		}
		slices.Sort(lines)
		sections = append(sections, "[hparams, from the event files]\n"+strings.Join(lines, "\n"))
	}
	tags := make([]string, 0, len(t.texts))
	for tag := range t.texts {
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	for _, tag := range tags {
		var lines []string
		for k, v := range t.texts[tag] {
			var buf bytes.Buffer
			if json.Compact(&buf, v) == nil {
				v = buf.Bytes()
			}
			lines = append(lines, k+" = "+string(v))
		}
		slices.Sort(lines)
		sections = append(sections, "["+tag+", a text in the event files]\n"+strings.Join(lines, "\n"))
	}
	return strings.Join(sections, "\n\n")
}

// maxSteps is the step budget the settings name (max_steps of the hyperparameters
// or of the Trainer's "args"), 0 when none does: the Trainer writes -1 when its
// epochs bound the run instead.
func (t *tbSettings) maxSteps() int {
	if n, ok := positiveInt(t.hparams["max_steps"]); ok {
		return n
	}
	if raw, ok := t.texts["args"]["max_steps"]; ok {
		if n, ok := positiveInt(string(raw)); ok {
			return n
		}
	}
	return 0
}

func positiveInt(s string) (int, bool) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < 1 || x > math.MaxInt32 || x != math.Trunc(x) {
		return 0, false
	}
	return int(x), true
}
