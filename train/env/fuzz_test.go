package env

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzDecodeAction(f *testing.F) {
	for _, i := range []int{-1, 0, 63, 64, 67, 68, NumActions() - 1, NumActions(), 1 << 62} {
		f.Add(i)
	}
	ep := NewEpisode(testConfig())
	task := taskOf(AttributeRecognition, 3)
	f.Fuzz(func(t *testing.T, i int) {
		a, err := DecodeAction(i)
		if err != nil {
			return
		}
		j, err := EncodeAction(a)
		if err != nil || j != i {
			t.Fatalf("round trip of %d gave %d, %v", i, j, err)
		}
		ep.Reset(task)
		ep.Step(a) // any decoded action is safe to apply
	})
}

func FuzzReadCoTA(f *testing.F) {
	samples, _ := GenerateDataset(testConfig(), Test, 6, Mix{Positive: 1, SelfCorrection: 1, TrapLogical: 1})
	var buf bytes.Buffer
	_ = WriteCoTA(&buf, samples)
	for _, line := range strings.Split(buf.String(), "\n") {
		f.Add(line)
	}
	f.Add("{}")
	f.Add(`{"trajectory":[{"action":"SEGMENT_OBJECT_AT","parameters":{"x":1}}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadCoTA(strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteCoTA(&out, got); err != nil {
			t.Fatal(err)
		}
		again, err := ReadCoTA(&out)
		if err != nil || len(again) != len(got) {
			t.Fatalf("re-read of written samples: %d vs %d, %v", len(again), len(got), err)
		}
	})
}
