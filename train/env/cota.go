package env

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Sample is one chain-of-thought-action (CoTA) record: a task's question,
// the trajectory that answers it and its difficulty. The image is not
// stored; split, index and seed regenerate it exactly (Sample.Task).
type Sample struct {
	SampleID        string     `json:"sample_id"`
	TaskType        string     `json:"task_type"`
	SampleType      string     `json:"sample_type"` // one of SampleTypes (demos.go)
	Question        string     `json:"question"`
	Trajectory      []TrajStep `json:"trajectory"`
	Answer          string     `json:"answer"`
	GroundTruth     string     `json:"ground_truth"`
	DifficultyScore float64    `json:"difficulty_score"`
	Difficulty      string     `json:"difficulty"` // simple | medium | hard, "" before AssignBuckets
	Split           string     `json:"split"`
	Index           int        `json:"index"`
	Seed            uint64     `json:"seed"`
	NumObjects      int        `json:"num_objects"`
	Distractors     int        `json:"distractors"` // other objects sharing a referred object's colour or shape
	TargetSize      int        `json:"target_size"` // smallest referred object's side, source pixels
	Confusable      bool       `json:"confusable"`  // a look-alike or close areas make the coarse view misleading
	// Line is the sample's line in the file ReadCoTA read it from (0 for a
	// sample made in memory); not written.
	Line int `json:"-"`
}

// TrajStep is one step of a CoTA trajectory.
type TrajStep struct {
	Action     string     `json:"action"`
	Parameters Params     `json:"parameters"`
	Result     StepResult `json:"result"`
	// Role is what imitation learning does with the step: "" (imitate),
	// "skip" or "avoid" (see Role).
	Role string `json:"role,omitempty"`
}

// Params are an action's arguments; absent ones are omitted.
type Params struct {
	X      *int   `json:"x,omitempty"`
	Y      *int   `json:"y,omitempty"`
	Answer string `json:"answer,omitempty"`
}

// StepResult is the JSON form of Result.
type StepResult struct {
	Misuse     string   `json:"misuse,omitempty"`
	Summary    string   `json:"summary"`
	ObjectID   int      `json:"object_id,omitempty"`
	Area       int      `json:"area,omitempty"`
	BBox       *[4]int  `json:"bbox,omitempty"`
	Colour     string   `json:"colour,omitempty"`
	Shape      string   `json:"shape,omitempty"`
	Centre     *[2]int  `json:"centre,omitempty"`
	Text       string   `json:"text,omitempty"`
	Confidence float64  `json:"confidence,omitempty"`
	Track      [][4]int `json:"track,omitempty"`
}

func rectJSON(r image.Rectangle) [4]int { return [4]int{r.Min.X, r.Min.Y, r.Max.X, r.Max.Y} }

func newTrajStep(s Step) TrajStep {
	a, r := s.Action, s.Result
	ts := TrajStep{Action: a.Op.String()}
	switch a.Op {
	case OpSegment:
		x, y := a.X, a.Y
		ts.Parameters = Params{X: &x, Y: &y}
	case OpAnswer:
		ts.Parameters = Params{Answer: a.Answer}
	}
	sr := StepResult{Summary: r.Summary, ObjectID: r.ObjectID, Area: r.Area, Colour: r.Colour, Shape: r.Shape, Text: r.Text, Confidence: r.Confidence}
	if r.Misuse != MisuseNone {
		sr.Misuse = r.Misuse.String()
	}
	if !r.BBox.Empty() {
		b := rectJSON(r.BBox)
		sr.BBox = &b
	}
	if r.Centre != (image.Point{}) {
		sr.Centre = &[2]int{r.Centre.X, r.Centre.Y}
	}
	for _, b := range r.Track {
		sr.Track = append(sr.Track, rectJSON(b))
	}
	ts.Result = sr
	return ts
}

// NewSample records an episode of t as a CoTA sample of the given type, each
// step with its role (nil: every step imitated), with its difficulty score;
// buckets come from AssignBuckets.
func NewSample(t *Task, steps []Step, typ string, roles []Role) Sample {
	s := Sample{
		SampleID:    t.ID,
		TaskType:    t.Family.String(),
		SampleType:  typ,
		Question:    t.Question,
		GroundTruth: t.Answer,
		Split:       t.Split.String(),
		Index:       t.Index,
		Seed:        t.Seed,
		NumObjects:  len(t.Scene.Objects),
		Confusable:  t.Confusable,
	}
	for i, st := range steps {
		ts := newTrajStep(st)
		if i < len(roles) && roles[i] != RoleImitate {
			ts.Role = roles[i].String()
		}
		s.Trajectory = append(s.Trajectory, ts)
	}
	if n := len(steps); n > 0 && steps[n-1].Action.Op == OpAnswer {
		s.Answer = steps[n-1].Action.Answer
	}
	s.TargetSize = SourceSize
	for _, j := range t.Targets {
		o := t.Scene.Objects[j]
		s.TargetSize = min(s.TargetSize, o.Size)
		for k, p := range t.Scene.Objects {
			if k != j && !containsInt(t.Targets, k) && (p.Colour == o.Colour || p.Shape == o.Shape) {
				s.Distractors++
			}
		}
	}
	if len(t.Targets) == 0 {
		s.TargetSize = 0
	}
	s.DifficultyScore = ScoreDifficulty(s)
	return s
}

func containsInt(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// Replay is what a replay of the sample needs: its task regenerated under
// cfg (the config it was generated with), its actions and their roles.
func (s Sample) Replay(cfg Config) (*Task, []Action, []Role, error) {
	t, err := s.Task(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	acts, err := s.Actions()
	if err != nil {
		return nil, nil, nil, err
	}
	roles, err := s.Roles()
	if err != nil {
		return nil, nil, nil, err
	}
	return t, acts, roles, nil
}

// Roles are the roles of the trajectory's steps.
func (s Sample) Roles() ([]Role, error) {
	roles := make([]Role, len(s.Trajectory))
	for i, ts := range s.Trajectory {
		r, ok := ParseRole(ts.Role)
		if !ok {
			return nil, fmt.Errorf("sample %s step %d: unknown role %q (want skip or avoid, or none)", s.SampleID, i+1, ts.Role)
		}
		roles[i] = r
	}
	return roles, nil
}

// Actions parses the trajectory back into actions.
func (s Sample) Actions() ([]Action, error) {
	acts := make([]Action, 0, len(s.Trajectory))
	for i, ts := range s.Trajectory {
		op, err := ParseOp(ts.Action)
		if err != nil {
			return nil, fmt.Errorf("sample %s step %d: %w", s.SampleID, i+1, err)
		}
		a := Action{Op: op, Answer: ts.Parameters.Answer}
		if op == OpSegment {
			if ts.Parameters.X == nil || ts.Parameters.Y == nil {
				return nil, fmt.Errorf("sample %s step %d: %s without x and y", s.SampleID, i+1, op)
			}
			a.X, a.Y = *ts.Parameters.X, *ts.Parameters.Y
		}
		acts = append(acts, a)
	}
	return acts, nil
}

// Task regenerates the sample's task under cfg, which must be the config the
// sample was generated with; a changed question or seed says it was not.
func (s Sample) Task(cfg Config) (*Task, error) {
	split, err := ParseSplit(s.Split)
	if err != nil {
		return nil, fmt.Errorf("sample %s: %w", s.SampleID, err)
	}
	t := Generate(cfg, split, s.Index)
	if t.Seed != s.Seed || t.Question != s.Question || t.Answer != s.GroundTruth {
		return nil, fmt.Errorf("sample %s: regenerated task differs (seed %d, %q): generated with another config", s.SampleID, t.Seed, t.Question)
	}
	return t, nil
}

// validate checks the fields a reader relies on.
func (s Sample) validate() error {
	if _, err := ParseFamily(s.TaskType); err != nil {
		return err
	}
	if _, err := ParseSplit(s.Split); err != nil {
		return err
	}
	switch s.Difficulty {
	case "", "simple", "medium", "hard":
	default:
		return fmt.Errorf("unknown difficulty %q", s.Difficulty)
	}
	if !slices.Contains(SampleTypes, s.SampleType) {
		return fmt.Errorf("unknown sample type %q (want one of %v)", s.SampleType, SampleTypes)
	}
	if _, err := s.Roles(); err != nil {
		return err
	}
	_, err := s.Actions()
	return err
}

// WriteCoTA writes samples as JSON lines.
func WriteCoTA(w io.Writer, samples []Sample) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range samples {
		if err := enc.Encode(&samples[i]); err != nil {
			return fmt.Errorf("write cota sample %d (%s): %w", i, samples[i].SampleID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write cota: %w", err)
	}
	return nil
}

// ReadCoTA reads JSON-lines samples, skipping blank lines; an error names the
// offending line.
func ReadCoTA(r io.Reader) ([]Sample, error) {
	br := bufio.NewReader(r)
	var out []Sample
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			var s Sample
			if derr := dec.Decode(&s); derr != nil {
				return out, fmt.Errorf("cota line %d: %w", line, derr)
			}
			if dec.More() {
				return out, fmt.Errorf("cota line %d: trailing data after the sample", line)
			}
			if verr := s.validate(); verr != nil {
				return out, fmt.Errorf("cota line %d: %w", line, verr)
			}
			s.Line = line
			out = append(out, s)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("cota line %d: %w", line, err)
		}
	}
}

// GenerateDataset generates n tasks of a split, demonstrates each with a
// sample type drawn from mix (Demonstrate) in an episode with cfg's budgets,
// and returns the samples with difficulty buckets assigned. A positive
// demonstration that does not answer right is an error, never silent bad data.
func GenerateDataset(cfg Config, split Split, n int, mix Mix) ([]Sample, error) {
	return GenerateDatasetContext(context.Background(), cfg, split, n, mix, 1)
}

// GenerateDatasetContext is GenerateDataset on up to workers goroutines that
// stops, returning ctx's error, once ctx is done (a default training set takes
// seconds). Sample i depends on nothing but task i, so the samples are the same
// whatever the number of workers.
func GenerateDatasetContext(ctx context.Context, cfg Config, split Split, n int, mix Mix, workers int) ([]Sample, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("generate dataset: %w", err)
	}
	if split >= NumSplits || n < 0 {
		return nil, fmt.Errorf("generate dataset: bad split %d or count %d", split, n)
	}
	out := make([]Sample, n)
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(min(workers, n), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep := NewEpisode(cfg)
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				out[i], errs[i] = demonstrated(ep, cfg, split, i, mix)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cmp.Or(errs...); err != nil {
		return nil, err
	}
	AssignBuckets(out)
	return out, nil
}

// demonstrated is the sample of task i of a split: its demonstration (type
// drawn from mix) played in ep.
func demonstrated(ep *Episode, cfg Config, split Split, i int, mix Mix) (Sample, error) {
	t := Generate(cfg, split, i)
	d := Demonstrate(ep, t, mix)
	ep.Reset(t)
	for _, a := range d.Actions {
		ep.Step(a)
	}
	if d.Type == TypePositive && !ep.Correct() {
		got, _ := ep.Answer()
		return Sample{}, fmt.Errorf("generate dataset: expert answered %q to %s (%q), want %q", got, t.ID, t.Question, t.Answer)
	}
	return NewSample(t, ep.steps, d.Type, d.Roles), nil
}

// FormatSample renders one sample's trajectory for people.
func FormatSample(s Sample) string {
	var b strings.Builder
	mark := "✗"
	if s.Answer == s.GroundTruth {
		mark = "✓"
	}
	fmt.Fprintf(&b, "%s · %s · %s · %s %.2f · %s\n", s.SampleID, s.TaskType, s.SampleType, s.Difficulty, s.DifficultyScore, mark)
	fmt.Fprintf(&b, "Q: %s\n", s.Question)
	for i, st := range s.Trajectory {
		arg := ""
		switch {
		case st.Parameters.X != nil && st.Parameters.Y != nil:
			arg = fmt.Sprintf(" (%d,%d)", *st.Parameters.X, *st.Parameters.Y)
		case st.Parameters.Answer != "":
			arg = fmt.Sprintf(" %q", st.Parameters.Answer)
		}
		fmt.Fprintf(&b, "%2d %s%s → %s", i+1, st.Action, arg, st.Result.Summary)
		if st.Result.Misuse != "" {
			fmt.Fprintf(&b, " [misuse: %s]", st.Result.Misuse)
		}
		if st.Role != "" {
			fmt.Fprintf(&b, " [%s]", st.Role)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "answer %q, ground truth %q\n", s.Answer, s.GroundTruth)
	return b.String()
}
