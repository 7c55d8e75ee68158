package tui

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/train/telemetry/tb"
	"github.com/pixelis/pixelis/train/telemetry/tb/tbtest"
	"github.com/pixelis/pixelis/train/telemetry/watch"
)

// The synthetic long run: a million steps of twenty scalars, one event a value
// as PyTorch's SummaryWriter.add_scalar writes them (about a gigabyte), with the
// names of a verl GRPO run so that every pane fills.
const (
	benchSteps = 1_000_000
	benchWall  = 1.7e9
)

var benchTags = []string{
	"critic/score/mean", "critic/rewards/mean", "actor/entropy", "actor/kl_loss", "actor/pg_loss",
	"actor/pg_clipfrac", "actor/grad_norm", "actor/lr", "response_length/mean", "timing_s/step",
	"timing_s/gen", "timing_s/update_actor", "critic/advantages/max", "critic/returns/mean", "prompt_length/mean",
	"response_length/clip_ratio", "perf/throughput", "training/epoch", "actor/ppo_kl", "critic/score/max",
}

// benchValue is tag i's value at step s: a trend, a wave and a spike every
// 100,000 steps, so that a chart of the whole run has a shape to keep.
func benchValue(i, s int) float32 {
	v := float64(i+1)*float64(s)/benchSteps + 0.1*math.Sin(float64(s)/(500+float64(i)*37))
	if s%100_000 == 50_000 {
		v += 3
	}
	return float32(v)
}

// benchLog writes the synthetic run under dir once (kept between runs: it takes
// a while to write) and returns its run directory.
func benchLog(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "pixelis-watch-bench-1m", "run")
	path := filepath.Join(dir, tb.FilePrefix+"1700000000.bench.1.0")
	const version = "v1"
	stamp := filepath.Join(dir, "..", "complete-"+version)
	if _, err := os.Stat(stamp); err == nil {
		return dir
	}
	os.RemoveAll(filepath.Dir(dir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(tbtest.Record(tbtest.Version(benchWall)))
	var buf []byte
	for s := range benchSteps {
		buf = buf[:0]
		for i, tag := range benchTags {
			buf = tbtest.AppendScalarRecord(buf, benchWall+float64(s), int64(s), tag, benchValue(i, s))
		}
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(stamp, nil, 0o644)
	return dir
}

// rssPeak samples the process's resident memory every few milliseconds until
// stop is closed, and returns the highest seen, in MiB.
func rssPeak(stop <-chan struct{}) func() float64 {
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if kb := rssKiB(); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 { <-done; return float64(peak.Load()) / 1024 }
}

func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			n, _ := strconv.ParseInt(strings.Fields(string(rest))[0], 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkWatchMillionSteps opens `pixelis watch` on a TensorBoard log of a
// million steps of twenty scalars and measures, in wall and CPU seconds, the
// first screen — the newest values and a coarse chart of the whole run — and the
// whole history read and shown, the resident memory at its highest meanwhile, and
// checks that progress is shown while the history is read and that every chart of
// the KPI pane spans the same steps, the whole run's. Run it with
//
//	go test ./tui -run '^$' -bench WatchMillionSteps -benchtime 1x
func BenchmarkWatchMillionSteps(b *testing.B) {
	dir := benchLog(b)
	for b.Loop() {
		benchWatch(b, dir)
	}
}

func benchWatch(b *testing.B, dir string) {
	debug.FreeOSMemory()
	stop := make(chan struct{})
	peak := rssPeak(stop)
	start, cpu0 := time.Now(), cputime.Process()
	feed, err := watch.Open(context.Background(), dir, watch.Options{MaxPoints: defaultHistory})
	if err != nil {
		b.Fatal(err)
	}
	defer feed.Close()
	hs := newHarness(b, newFakeFeed(false), Options{Color: "never", Role: RoleWatch, RunDir: dir, Now: time.Now}, 120, 40)
	hs.m.feed = feed
	hs.send(feedMsg(feed.Take()))
	frame := ansi.Strip(hs.frame())
	first, firstCPU := time.Since(start), cputime.Process()-cpu0
	if !strings.Contains(frame, "step 999,999") {
		b.Fatalf("first screen lacks the newest step:\n%s", frame)
	}
	checkSpans(b, hs, "first screen")
	glanced := hs.m.metrics.get("reward/final/raw").held()

	// The history is read in the background; the console takes what comes, as
	// it would, and draws a frame now and then.
	progress := map[string]bool{}
	reset := false // the whole history came, in place of the glance
	take := func() {
		u := feed.Take()
		reset = reset || u.Reset
		hs.send(feedMsg(u))
	}
	for done, total := feed.Loading(); done < total; done, total = feed.Loading() {
		select {
		case <-feed.Ready():
			take()
		case <-time.After(200 * time.Millisecond):
		}
		hs.send(clockMsg{})
		if p := hs.m.watch.loading(); p != "" && strings.Contains(ansi.Strip(hs.frame()), p) {
			progress[p] = true
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatal("the history is not read in 10 minutes")
		}
	}
	for !reset {
		<-feed.Ready()
		take()
	}
	whole, wholeCPU := time.Since(start), cputime.Process()-cpu0
	checkSpans(b, hs, "whole history")
	close(stop)
	b.ReportMetric(first.Seconds(), "first_screen_s")
	b.ReportMetric(firstCPU.Seconds(), "first_screen_cpu_s")
	b.ReportMetric(whole.Seconds(), "history_s")
	b.ReportMetric(wholeCPU.Seconds(), "history_cpu_s")
	rss := peak()
	b.ReportMetric(rss, "rss_peak_MiB")
	b.ReportMetric(float64(len(progress)), "progress_frames")
	b.ReportMetric(float64(glanced), "glance_points")
	b.ReportMetric(float64(hs.m.metrics.get("reward/final/raw").held()), "history_points")
	fmt.Fprintf(os.Stderr, "first screen %.2fs (%.2fs CPU), whole history %.1fs (%.1fs CPU), RSS peak %.0f MiB, progress %v\n",
		first.Seconds(), firstCPU.Seconds(), whole.Seconds(), wholeCPU.Seconds(), rss, progress)
	if len(progress) < 2 {
		b.Errorf("progress shown %d times while the history was read", len(progress))
	}
}

// checkSpans fails unless every chart of the KPI pane spans the same steps —
// from the run's start to its end, within the coarsest bucket the history kept.
func checkSpans(b *testing.B, hs *harness, when string) {
	b.Helper()
	k := hs.kpi()
	g := k.grid(hs.m.paneEnv(paneKPI))
	for i := range k.charts {
		s, label := g.set.items[i].find(hs.m.metrics)
		if s == nil {
			continue
		}
		first, last, _ := s.bounds()
		slack := max(s.width, benchSteps/glanceGap)
		if first-k.win.lo > slack || k.win.hi-last > slack || k.win.hi != benchSteps-1 {
			b.Errorf("%s: %s spans %d–%d of the window %d–%d", when, label, first, last, k.win.lo, k.win.hi)
		}
	}
	if k.win.lo > benchSteps/glanceGap {
		b.Errorf("%s: the window starts at %d", when, k.win.lo)
	}
	fmt.Fprintf(os.Stderr, "%s: window %d–%d, %d charts\n", when, k.win.lo, k.win.hi, len(k.charts))
}

// glanceGap is how many pieces the glance's spans cut the run into, about: the
// first chart point may be this far in.
const glanceGap = 256
