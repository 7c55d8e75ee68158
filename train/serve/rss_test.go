package serve

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/env"
)

// A real `pixelis serve` hands the memory of closed vectors back to the
// system soon after the last one closes: the trainer of the question (20
// vectors of 256 environments, 100 steps each, 4 at a time) left the process
// at about 1.5 GB resident for minutes, the runtime keeping freed pages until
// its scavenger got to them. Its resident memory must fall below
// serveIdleRSS within serveIdleWithin of the last close.
//
// The test plays 8 vectors of 40 steps (the RSS they reach is that of the 4
// live at once; about 15 CPU-seconds); PIXELIS_SERVE_RSS_VECTORS and
// PIXELIS_SERVE_RSS_STEPS set the full case (docs/serve.md, "Limits").
func TestServeReturnsMemoryAfterLastClose(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	const serveIdleRSS, serveIdleWithin = 300, 60 * time.Second // MiB
	vectors, steps := envInt(t, "PIXELIS_SERVE_RSS_VECTORS", 8), envInt(t, "PIXELIS_SERVE_RSS_STEPS", 40)
	p := startServe(t)
	const clients = 4
	work := make(chan int, vectors)
	for i := range vectors {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range work {
				playVector(t, p, i, steps)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	closed := time.Now()
	peak := p.memory(t, "VmHWM")
	var rss float64
	for {
		rss = p.memory(t, "VmRSS")
		if rss < serveIdleRSS || time.Since(closed) > serveIdleWithin {
			break
		}
		time.Sleep(250 * time.Millisecond) // polling the server's state: the condition is its RSS
	}
	t.Logf("%d vectors of %d environments × %d steps: peak %.0f MiB resident, %.0f MiB %.1f s after the last close",
		vectors, benchEnvs, steps, peak, rss, time.Since(closed).Seconds())
	if rss >= serveIdleRSS {
		t.Errorf("%.0f MiB resident %s after the last vector closed, want below %d MiB (peak %.0f MiB)", rss, serveIdleWithin, serveIdleRSS, peak)
	}
}

// playVector creates a vector of benchEnvs environments (npy frames, the
// coarse view), plays steps random masked steps and closes it.
func playVector(t *testing.T, p *servedProcess, seed, steps int) {
	status, frame, err := p.post("/v1/vectors", fmt.Appendf(nil, `{"n":%d,"autoreset":"same_step","seed":%d,"observation":{"encoding":"npy"}}`, benchEnvs, seed))
	if err != nil || status != http.StatusCreated && status != http.StatusOK {
		t.Errorf("create a vector: %d %v %.200s", status, err, frame)
		return
	}
	var id string
	mask := npyBool(t, frame, "action_mask", &id)
	r := rand.New(rand.NewPCG(uint64(seed), 9))
	nA := env.NumActions()
	acts := make([]int, benchEnvs)
	for range steps {
		for i := range acts {
			acts[i] = randomMasked(r, mask[i*nA:(i+1)*nA])
		}
		body, _ := json.Marshal(vectorStep{Actions: acts})
		if status, frame, err = p.post("/v1/vectors/"+id+"/step", body); err != nil || status != http.StatusOK {
			t.Errorf("step: %d %v %.200s", status, err, frame)
			return
		}
		mask = npyBool(t, frame, "action_mask", nil)
	}
	req, _ := http.NewRequest(http.MethodDelete, p.url+"/v1/vectors/"+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("close the vector: %v %v", resp, err)
		return
	}
	resp.Body.Close()
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
