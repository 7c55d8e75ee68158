package env

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// testMix has every sample type.
var testMix = Mix{Positive: 0.4, SelfCorrection: 0.3, TrapPerceptual: 0.1, TrapLogical: 0.1, OutcomeNegative: 0.1, Direct: 0.2}

func TestCoTARoundTrip(t *testing.T) {
	cfg := testConfig()
	samples, err := GenerateDataset(cfg, Val, 120, testMix)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCoTA(&buf, samples); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCoTA(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i].Line != i+1 {
			t.Fatalf("sample %d read from line %d, want %d", i, got[i].Line, i+1)
		}
		got[i].Line = 0 // not part of the record
	}
	if !reflect.DeepEqual(got, samples) {
		t.Fatal("samples changed in a write/read round trip")
	}
	ep := NewEpisode(cfg)
	for _, s := range got {
		task, err := s.Task(cfg)
		if err != nil {
			t.Fatal(err)
		}
		acts, err := s.Actions()
		if err != nil {
			t.Fatal(err)
		}
		roles, err := s.Roles()
		if err != nil {
			t.Fatal(err)
		}
		ep.Reset(task)
		for _, a := range acts {
			ep.Step(a)
		}
		if right := roles[len(roles)-1] == RoleImitate; ep.Correct() != right {
			t.Errorf("%s (%s): replay answers right %v, its answer's role is %s", s.SampleID, s.SampleType, ep.Correct(), roles[len(roles)-1])
		}
	}
	if types := Summarize(got).Types; len(types) != len(SampleTypes) {
		t.Errorf("120 samples of the test mix have types %v, want all of %v", types, SampleTypes)
	}
	other := cfg
	other.Families = slices.Clone(cfg.Families)
	slices.Reverse(other.Families) // task 0 is of another family
	if _, err := got[0].Task(other); err == nil {
		t.Error("regenerating under another [env] must fail")
	}
	if s := FormatSample(got[0]); !strings.Contains(s, got[0].Question) || !strings.Contains(s, "ANSWER") {
		t.Errorf("FormatSample lacks the question or the answer:\n%s", s)
	}
}

func TestReadCoTAErrorsNameTheLine(t *testing.T) {
	good := `{"sample_id":"a","task_type":"text_extraction","sample_type":"positive","question":"q","trajectory":[{"action":"READ_TEXT","parameters":{},"result":{"summary":""}}],"answer":"A7","ground_truth":"A7","difficulty_score":1,"difficulty":"hard","split":"train","index":0,"seed":0,"num_objects":2,"distractors":0,"target_size":20}`
	cases := []struct {
		name, in, want string
	}{
		{"bad json", good + "\n{oops\n", "line 2"},
		{"unknown family", good + "\n\n" + strings.Replace(good, "text_extraction", "poetry", 1), "line 3"},
		{"unknown op", strings.Replace(good, "READ_TEXT", "DANCE", 1), "line 1"},
		{"unknown field", strings.Replace(good, `"index"`, `"idx"`, 1), "line 1"},
		{"bad bucket", strings.Replace(good, `"hard"`, `"extreme"`, 1), "line 1"},
		{"segment without coordinates", strings.Replace(good, "READ_TEXT", "SEGMENT_OBJECT_AT", 1), "line 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCoTA(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %s", err, c.want)
			}
		})
	}
	if s, err := ReadCoTA(strings.NewReader(good + "\n\n" + good)); err != nil || len(s) != 2 {
		t.Errorf("two good lines: %d samples, %v", len(s), err)
	}
}

func TestDifficultyBuckets(t *testing.T) {
	samples, err := GenerateDataset(testConfig(), Train, 600, Mix{Positive: 1})
	if err != nil {
		t.Fatal(err)
	}
	sum := Summarize(samples)
	var per [3]int
	for f := range NumFamilies {
		for b := range 3 {
			per[b] += sum.Counts[f][b]
		}
	}
	for b, n := range per {
		if n != 200 {
			t.Errorf("%s: %d of 600", Buckets[b], n)
		}
	}
	// Sophisticated families should land harder on average than attribute questions.
	mean := func(f Family) float64 {
		s, n := 0.0, 0
		for _, x := range samples {
			if x.TaskType == f.String() {
				s += x.DifficultyScore
				n++
			}
		}
		return s / float64(n)
	}
	if mean(TemporalTracking) <= mean(AttributeRecognition) || mean(TextExtraction) <= mean(AttributeRecognition) {
		t.Error("difficulty does not rank tracking and text above attribute recognition")
	}
	if sum.Total != 600 || sum.Types[TypePositive] != 600 || !strings.Contains(sum.String(), "temporal_tracking") {
		t.Errorf("summary: %+v\n%s", sum, sum)
	}
}

// The training set is the same samples, byte for byte, whatever the number of
// goroutines that build it.
func TestDatasetSameWhateverTheWorkers(t *testing.T) {
	cfg := testConfig()
	want, err := GenerateDataset(cfg, Train, 150, testMix)
	if err != nil {
		t.Fatal(err)
	}
	var a bytes.Buffer
	if err := WriteCoTA(&a, want); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{2, 3, 7} {
		got, err := GenerateDatasetContext(context.Background(), cfg, Train, 150, testMix, workers)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteCoTA(&b, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%d workers: the samples differ from one worker's", workers)
		}
	}
}

// A cancelled build returns the context's error, not a partial set.
func TestDatasetBuildStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := GenerateDatasetContext(ctx, testConfig(), Train, 50, testMix, 2); err == nil || s != nil {
		t.Errorf("cancelled build: %d samples, error %v", len(s), err)
	}
}
