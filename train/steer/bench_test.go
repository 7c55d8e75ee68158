package steer

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/cputime"
)

// BenchmarkObserve is the curriculum's cost per step of a launched child:
// Observe on a step of 50 metrics (the curriculum's inputs and 42 others)
// under the default [curriculum], a check every 10th step, plus the stage
// inspector's snapshot the owner publishes every step. It reports the CPU
// time per step (µs_cpu/step), to set against the child's step time.
func BenchmarkObserve(b *testing.B) {
	stream := driftingStream(rand.New(rand.NewPCG(1, 2)), 1, 1000)
	msgs := make([]map[string]float64, len(stream))
	for i, r := range stream {
		m := r.metrics()
		for j := len(m); j < 50; j++ {
			m[fmt.Sprintf("train/other_%02d", j)] = float64(j)
		}
		msgs[i] = m
	}
	s, err := New(configs.Default(), fullDeclaration)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0, w0 := cputime.Process(), time.Now()
	for i := range b.N {
		if _, err := s.Observe(i+1, msgs[i%len(msgs)]); err != nil {
			b.Fatal(err)
		}
		_ = s.Curriculum()
	}
	cpu, wall := cputime.Process()-c0, time.Since(w0)
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "µs_cpu/step")
	b.ReportMetric(float64(wall.Microseconds())/float64(b.N), "µs/step")
}
