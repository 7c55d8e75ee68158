package critic

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/policy"
)

// BenchmarkCritic times what one RFT step of the default config asks of each
// value network: V(s) of 640 actions (128 rollouts of about 5 actions) for
// GAE, then one update of 2 minibatches over them, with the default's graph
// chunk of 384 rows. CPU time is reported beside wall time: the machine is
// shared, and CPU time is what the work costs.
func BenchmarkCritic(b *testing.B) {
	const rows, chunk = 640, 384
	for _, cfg := range []Config{
		{Network: NetworkMLP, Hidden: []int{64, 64}, CellEmbed: 16},
		{Network: NetworkTrunk, LoRARank: 8, LoRAAlpha: 16},
	} {
		b.Run(cfg.Network, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			p, err := policy.New(policy.Config{Hidden: []int{256, 256}, LocHidden: 32, CellEmbed: 32, LoRARank: 8, LoRAAlpha: 16}.WithEnvLayout(), rng)
			if err != nil {
				b.Fatal(err)
			}
			n, err := New(cfg, p, rng)
			if err != nil {
				b.Fatal(err)
			}
			u, err := NewUpdater(n, chunk, 0.5, optim.DefaultAdam())
			if err != nil {
				b.Fatal(err)
			}
			obs := make([]float32, rows*n.ObsDim())
			for i := range obs {
				if rng.Float64() < 0.1 { // observations are mostly zeros (one-hot blocks)
					obs[i] = float32(rng.Float64())
				}
			}
			v := make([]float32, rows)
			rs := make([]Row, rows)
			var cpu time.Duration
			b.ResetTimer()
			for b.Loop() {
				c0 := cputime.Process()
				n.Values(obs, rows, v)
				for i := range rs {
					rs[i] = Row{Obs: obs[i*n.ObsDim() : (i+1)*n.ObsDim()], Return: float32(i%3) - 1, Old: v[i]}
				}
				if _, err := u.Update(rs, 1, 2, 1e-3, rand.New(rand.NewPCG(3, 4))); err != nil {
					b.Fatal(err)
				}
				cpu += cputime.Process() - c0
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
			b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/step")
			b.ReportMetric(float64(n.NumTrainable()), "trained-floats")
		})
	}
}
