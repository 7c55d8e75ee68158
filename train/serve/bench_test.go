package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

// The load test: clients play the expert's episodes through a server on a
// loopback listener (httptest binds 127.0.0.1), with C episodes live at any
// moment, each in its own goroutine: create, one request per action, close.
// It reports episodes/s and the median and 99th-percentile latency of a
// step request as the client sees it.
//
//	go test ./train/serve -run '^$' -bench Serve -benchtime 2s -count 3
//
// Bounded: one benchmark iteration is C episodes, and a run plays at most
// maxBenchEpisodes episodes and starts none after maxBenchTime, whatever b.N
// asks; the figures are over the episodes played.
func BenchmarkServe(b *testing.B) {
	for _, c := range []int{1, 64, 1024} {
		b.Run(fmt.Sprintf("episodes=%d", c), func(b *testing.B) { benchServe(b, c) })
	}
}

const (
	maxBenchEpisodes = 200_000
	maxBenchTime     = 2 * time.Minute
)

// benchPlans are the expert's action indices for a pool of training tasks.
var benchPlans = sync.OnceValue(func() [][]int {
	cfg, _ := configs.Named("smoke")
	ec, _ := setup.EnvConfig(cfg)
	plans := make([][]int, 512)
	for i := range plans {
		for _, a := range env.Solve(env.Generate(ec, env.Train, i)) {
			k, _ := env.EncodeAction(a)
			plans[i] = append(plans[i], k)
		}
	}
	return plans
})

func benchServe(b *testing.B, c int) {
	raiseFileLimit(b, 4*c+64)
	cfg := smoke(b)
	s, err := New(cfg, Options{MaxEpisodes: c + 16})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer func() { ts.Close(); s.Close() }()
	tr := &http.Transport{MaxIdleConns: c, MaxIdleConnsPerHost: c, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	plans := benchPlans()
	total := min(b.N*c, maxBenchEpisodes)
	var next, played atomic.Int64
	lat := make([][]time.Duration, c)
	var failed atomic.Value
	post := func(path string, body []byte) []byte {
		resp, err := client.Post(ts.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			failed.Store(err)
			return nil
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			failed.Store(fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, out))
		}
		return out
	}
	b.ResetTimer()
	start := time.Now()
	deadline := start.Add(maxBenchTime)
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total || failed.Load() != nil || time.Now().After(deadline) {
					return
				}
				var ep struct {
					Episode string `json:"episode"`
				}
				json.Unmarshal(post("/v1/episodes", fmt.Appendf(nil, `{"index":%d}`, i%len(plans))), &ep)
				for _, k := range plans[i%len(plans)] {
					t0 := time.Now()
					post("/v1/episodes/"+ep.Episode+"/step", fmt.Appendf(nil, `{"index":%d}`, k))
					lat[w] = append(lat[w], time.Since(t0))
				}
				req, _ := http.NewRequest("DELETE", ts.URL+"/v1/episodes/"+ep.Episode, nil)
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				played.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	ms := func(q float64) float64 { return float64(all[int(q*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(float64(played.Load())/elapsed.Seconds(), "episodes/s")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "steps/s")
	b.ReportMetric(ms(0.5), "p50-step-ms")
	b.ReportMetric(ms(0.99), "p99-step-ms")
}

// BenchmarkLiveEpisodeMemory measures the heap one live episode holds, which
// with --max-episodes bounds the server's memory.
func BenchmarkLiveEpisodeMemory(b *testing.B) {
	const n = 1024
	cfg := smoke(b)
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC() // twice: pooled buffers of an earlier server are gone
		runtime.ReadMemStats(&before)
		s, err := New(cfg, Options{MaxEpisodes: n})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/episodes", bytes.NewReader(fmt.Appendf(nil, `{"index":%d}`, i))))
			if rec.Code != http.StatusCreated {
				b.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n/1024, "KiB/episode")
		s.Close()
	}
}

// raiseFileLimit lifts the soft open-file limit towards n (both ends of every
// loopback connection are in this process).
func raiseFileLimit(b *testing.B, n int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return
	}
	if rl.Cur < uint64(n) {
		rl.Cur = min(uint64(n), rl.Max)
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	if rl.Cur < uint64(n) {
		b.Logf("open-file limit %d is below %d: connections may fail", rl.Cur, n)
	}
}
