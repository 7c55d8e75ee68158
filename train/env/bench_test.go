package env

import (
	"testing"
)

func BenchmarkGenerate(b *testing.B) {
	cfg := testConfig()
	for i := 0; b.Loop(); i++ {
		Generate(cfg, Train, i)
	}
}

// BenchmarkGenerateSolve is the data pipeline's throughput: generating a
// task and running the expert through a real episode.
func BenchmarkGenerateSolve(b *testing.B) {
	cfg := testConfig()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		Solve(Generate(cfg, Train, n))
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tasks/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "tasks/cpu-s")
	}
}

// benchSetup returns an episode with unlimited caps, a task of fam and its expert plan.
func benchSetup(b *testing.B, fam Family) (*Episode, *Task, []Action) {
	b.Helper()
	cfg := testConfig()
	cfg.MaxSteps, cfg.OpCap = 64, 1<<30
	task := taskOf(fam, 4)
	return NewEpisode(cfg), task, Solve(task)
}

func BenchmarkSegment(b *testing.B) {
	ep, task, acts := benchSetup(b, AttributeRecognition)
	for b.Loop() {
		ep.Reset(task)
		ep.Step(acts[0])
	}
}

func BenchmarkProperties(b *testing.B) {
	ep, task, acts := benchSetup(b, AttributeRecognition)
	ep.Reset(task)
	ep.Step(acts[0])
	for b.Loop() {
		ep.properties()
	}
}

func BenchmarkZoomRead(b *testing.B) {
	ep, task, acts := benchSetup(b, TextExtraction)
	ep.Reset(task)
	ep.Step(acts[0])
	for b.Loop() {
		ep.zoom()
		ep.read()
	}
}

func BenchmarkTrack(b *testing.B) {
	ep, task, acts := benchSetup(b, TemporalTracking)
	ep.Reset(task)
	ep.Step(acts[0])
	for b.Loop() {
		ep.trackOp()
	}
}

// BenchmarkObserve featurizes a fresh view (the cache is invalidated each
// time), the cost per rollout step after a view change.
func BenchmarkObserve(b *testing.B) {
	ep, task, acts := benchSetup(b, TemporalTracking)
	ep.Reset(task)
	ep.Step(acts[0])
	obs := make([]float32, ObsDim)
	cpu0, n := cpuTime(), 0
	for b.Loop() {
		ep.obs.dirtyView()
		ep.Observe(obs)
		n++
	}
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/obs")
	}
}

// BenchmarkAnalyseView is the first analysis of a task's full view, which
// its episodes then share: the cells' hues, foreground, detail and motion
// (a video's over all its frames).
func BenchmarkAnalyseView(b *testing.B) {
	for _, fam := range []Family{AttributeRecognition, TemporalTracking} {
		b.Run(fam.String(), func(b *testing.B) {
			ep, task, _ := benchSetup(b, fam)
			obs := make([]float32, ObsDim)
			cpu0, n := cpuTime(), 0
			for b.Loop() {
				task.views = viewMemo{}
				ep.Reset(task)
				ep.Observe(obs)
				n++
			}
			if cpu := cpuTime() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/obs")
			}
		})
	}
}
