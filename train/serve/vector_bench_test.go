package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

// Vector environments against pixelis's own in-process rollout, both driven
// by a uniformly random policy over the actions the mask allows, on 256
// environments of the default world that start a new random training task
// whenever an episode ends:
//
//	go test ./train/serve -run '^$' -bench 'RandomPolicy' -benchtime 2000x
//
// RandomPolicyInProcess is the rollout loop of train/rollout/rollout.go with the
// policy replaced by the random one: observe every environment (the coarse
// view the policy reads), mask, choose, step, on GOMAXPROCS workers.
// RandomPolicyVector is the same through POST /v1/vectors/{id}/step on a
// loopback listener, the coarse view in the npy encoding, the client in
// this process. clients/python/bench_vector.py measures the same from one
// Python process against `pixelis serve`, alternating with the in-process
// loop. Both report env steps per second and per CPU-second.

// benchEnvs is the number of environments of the vector benchmarks.
const benchEnvs = 256

// defaultWorld is the embedded default config's world.
func defaultWorld(b testing.TB) (*configs.Config, env.Config) {
	cfg, err := configs.Named("default")
	if err != nil {
		b.Fatal(err)
	}
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cfg, ec
}

// randomMasked draws an action uniformly among those mask allows.
func randomMasked(r *rand.Rand, mask []bool) int {
	n := 0
	for _, ok := range mask {
		if ok {
			n++
		}
	}
	k := r.IntN(max(n, 1))
	for i, ok := range mask {
		if ok {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return 0
}

// reportRate reports steps per second and per CPU-second of the process.
func reportRate(b *testing.B, steps int, wall, cpu time.Duration) {
	b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
	if cpu > 0 {
		b.ReportMetric(float64(steps)/cpu.Seconds(), "steps/cpu-s")
		b.ReportMetric(cpu.Seconds()*1e6/float64(steps), "cpu-µs/step")
	}
	b.ReportMetric(0, "ns/op")
}

func BenchmarkRandomPolicyInProcess(b *testing.B) {
	_, ec := defaultWorld(b)
	n, nA, w := benchEnvs, env.NumActions(), obsWidth()
	eps := make([]*env.Episode, n)
	rngs := make([]*rand.Rand, n)
	tasks := rand.New(rand.NewPCG(1, 2))
	for i := range eps {
		eps[i] = env.NewEpisode(ec)
		eps[i].Reset(env.Generate(ec, env.Train, tasks.IntN(randomSpan)))
		rngs[i] = rand.New(rand.NewPCG(3, uint64(i)))
	}
	obs := make([]float32, n*w)
	masks := make([]bool, n*nA)
	seeds := make([]int, n)
	workers := runtime.GOMAXPROCS(0)
	step := func() {
		var wg sync.WaitGroup
		for k := range workers {
			lo, hi := k*n/workers, (k+1)*n/workers
			wg.Go(func() {
				for i := lo; i < hi; i++ {
					e := eps[i]
					e.Observe(obs[i*w : (i+1)*w])
					e.ActionMask(masks[i*nA : (i+1)*nA])
					a, _ := env.DecodeAction(randomMasked(rngs[i], masks[i*nA:(i+1)*nA]))
					if _, done := e.Step(a); done {
						e.Reset(env.Generate(ec, env.Train, seeds[i]))
					}
				}
			})
		}
		wg.Wait()
		for i := range seeds {
			seeds[i] = tasks.IntN(randomSpan)
		}
	}
	b.ResetTimer()
	c0, w0 := cputime.Process(), time.Now()
	for range b.N {
		step()
	}
	reportRate(b, b.N*n, time.Since(w0), cputime.Process()-c0)
}

func BenchmarkRandomPolicyVector(b *testing.B) {
	for _, obs := range []string{`{"encoding":"npy"}`, `{"encoding":"npy","coarse":false,"pixels":64}`} {
		name := "coarse"
		if strings.Contains(obs, "pixels") {
			name = "pixels64"
		}
		b.Run(name, func(b *testing.B) { benchVector(b, obs) })
	}
}

func benchVector(b *testing.B, obs string) {
	cfg, _ := defaultWorld(b)
	ts := newTestServer(b, cfg, Options{})
	client := ts.ts.Client()
	post := func(path string, body []byte) []byte {
		resp, err := client.Post(ts.ts.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode/100 != 2 {
			b.Fatalf("%s: %d %s %v", path, resp.StatusCode, out[:min(len(out), 300)], err)
		}
		return out
	}
	frame := post("/v1/vectors", fmt.Appendf(nil, `{"n":%d,"autoreset":"same_step","seed":7,"observation":%s}`, benchEnvs, obs))
	var id string
	mask := npyBool(b, frame, "action_mask", &id)
	r := rand.New(rand.NewPCG(5, 6))
	nA := env.NumActions()
	acts := make([]int, benchEnvs)
	var body []byte
	b.ResetTimer()
	c0, w0 := cputime.Process(), time.Now()
	for range b.N {
		for i := range acts {
			acts[i] = randomMasked(r, mask[i*nA:(i+1)*nA])
		}
		body, _ = json.Marshal(vectorStep{Actions: acts})
		frame = post("/v1/vectors/"+id+"/step", body)
		mask = npyBool(b, frame, "action_mask", nil)
	}
	reportRate(b, b.N*benchEnvs, time.Since(w0), cputime.Process()-c0)
}

// npyBool reads a bool array of an npy frame (and the vector's id).
func npyBool(b testing.TB, frame []byte, name string, id *string) []bool {
	hl := binary.LittleEndian.Uint32(frame)
	var head struct {
		Vector string      `json:"vector"`
		Arrays []arrayInfo `json:"arrays"`
	}
	if err := json.Unmarshal(frame[4:4+hl], &head); err != nil {
		b.Fatal(err)
	}
	if id != nil {
		*id = head.Vector
	}
	base := 4 + int(hl)
	for _, a := range head.Arrays {
		if a.Name == name {
			npy := frame[base+a.Offset : base+a.Offset+a.Length]
			dh := int(binary.LittleEndian.Uint16(npy[8:]))
			data := npy[10+dh:]
			out := make([]bool, len(data))
			for i, v := range data {
				out[i] = v != 0
			}
			return out
		}
	}
	b.Fatalf("no array %s", name)
	return nil
}
