package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The memory of a real `pixelis serve` process with its defaults (the
// embedded default world, --max-episodes 4096, --max-memory 1536 MiB), read
// from /proc (Linux only):
//
//	go test ./train/serve -run '^$' -bench ServeMemory -benchtime 1x
//
// score8: 8 concurrent maximal score requests (4,096 trajectories of
// env.max_steps actions each, every one within the per-request limits); the
// excess waits for its share of the score work. It reports the peak RSS and
// how many requests got 503.
//
// fill-expire: rounds of filling the world to --max-episodes with episodes
// (created by 8 concurrent clients) and letting them expire (--idle-timeout
// 30s); RSS at the cap and once empty, and the peak over all rounds. The
// memory figure of docs/serve.md ("Limits") is the one measured here.

// servedProcess is a `pixelis serve` started for a benchmark.
type servedProcess struct {
	cmd *exec.Cmd
	url string
}

func startServe(b testing.TB, flags ...string) *servedProcess {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("RSS is read from /proc: Linux only")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "pixelis")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pixelis/pixelis/cmd/pixelis").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, flags...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(line)
	if m == nil {
		b.Fatalf("pixelis serve said %q", line)
	}
	return &servedProcess{cmd: cmd, url: m[1]}
}

// memory reads a field of /proc/<pid>/status (VmRSS, VmHWM) in MiB.
func (p *servedProcess) memory(b testing.TB, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no %s in /proc/<pid>/status", field)
	return 0
}

func (p *servedProcess) post(path string, body []byte) (int, []byte, error) {
	resp, err := http.Post(p.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func BenchmarkServeMemory(b *testing.B) {
	b.Run("score8", benchScore8)
	b.Run("fill-expire", func(b *testing.B) { benchFillExpire(b, 0) })
	b.Run("fill-play-expire", func(b *testing.B) { benchFillExpire(b, 6) })
}

// maximalScore is a score request of maxScoreItems trajectories of maxSteps
// actions: segments at distinct cells, cut off at the step limit.
func maximalScore(maxSteps int) []byte {
	var items []map[string]any
	for i := range maxScoreItems {
		var acts []map[string]int
		for k := range maxSteps {
			acts = append(acts, map[string]int{"index": (i + 5*k) % 64})
		}
		items = append(items, map[string]any{"task": map[string]int{"index": i}, "actions": acts})
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	return body
}

func benchScore8(b *testing.B) {
	_, ec := defaultWorld(b)
	p := startServe(b)
	body := maximalScore(ec.MaxSteps)
	for range b.N {
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for range 8 {
			wg.Go(func() {
				status, out, err := p.post("/v1/score", body)
				if err != nil || (status != 200 && status != 503) {
					b.Errorf("score: %d %v %.200s", status, err, out)
				}
				mu.Lock()
				codes[status]++
				mu.Unlock()
			})
		}
		wg.Wait()
		b.ReportMetric(p.memory(b, "VmHWM"), "peak-MiB")
		b.ReportMetric(float64(codes[503]), "refused")
		b.ReportMetric(float64(len(body))/(1<<20), "body-MiB")
	}
	b.ReportMetric(0, "ns/op")
}

// benchFillExpire fills and expires; each episode takes steps actions of
// the expert's kind (segments at distinct cells, then their properties)
// before the next is created.
func benchFillExpire(b *testing.B, steps int) {
	const idle, rounds = 30 * time.Second, 4
	p := startServe(b, "--idle-timeout", idle.String())
	for range b.N {
		var full, empty []float64
		for range rounds {
			var wg sync.WaitGroup
			next := make(chan int, DefaultMaxEpisodes)
			for i := range DefaultMaxEpisodes {
				next <- i
			}
			close(next)
			for range 8 {
				wg.Go(func() {
					for i := range next {
						status, out, err := p.post("/v1/episodes", fmt.Appendf(nil, `{"index":%d}`, i))
						if err != nil || status != 201 {
							b.Errorf("create %d: %d %v %.200s", i, status, err, out)
							return
						}
						var ep struct{ Episode string }
						json.Unmarshal(out, &ep)
						for k := range steps {
							act := fmt.Appendf(nil, `{"index":%d}`, (i+9*k)%64) // segment a cell
							if k%2 == 1 {
								act = []byte(`{"op":"GET_PROPERTIES"}`)
							}
							if status, out, err := p.post("/v1/episodes/"+ep.Episode+"/step", act); err != nil || status != 200 {
								b.Errorf("step: %d %v %.200s", status, err, out)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			full = append(full, p.memory(b, "VmRSS"))
			if live := p.live(b); live != DefaultMaxEpisodes {
				b.Errorf("%d episodes live once filled, not %d: the fill took longer than the idle timeout", live, DefaultMaxEpisodes)
			}
			waitEmpty(b, p, 3*idle)
			empty = append(empty, p.memory(b, "VmRSS"))
		}
		b.ReportMetric(maxOf(full), "full-max-MiB")
		b.ReportMetric(minOf(full), "full-min-MiB")
		b.ReportMetric(maxOf(empty), "empty-max-MiB")
		b.ReportMetric(p.memory(b, "VmHWM"), "peak-MiB")
		b.Logf("RSS at the cap per round %v MiB, once expired %v MiB", full, empty)
	}
	b.ReportMetric(0, "ns/op")
}

// live is the number of live episodes /v1/health reports.
func (p *servedProcess) live(b *testing.B) int {
	resp, err := http.Get(p.url + "/v1/health")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Episodes int }
	json.NewDecoder(resp.Body).Decode(&h)
	return h.Episodes
}

// waitEmpty polls /v1/health until no episode is live (they expire on the
// server's clock), up to limit.
func waitEmpty(b *testing.B, p *servedProcess, limit time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for ctx.Err() == nil {
		if p.live(b) == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond): // the server's janitor decides; poll its health
		}
	}
	b.Fatalf("episodes still live after %s", limit)
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}
