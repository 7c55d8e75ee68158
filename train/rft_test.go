package train

import (
	"fmt"
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

// RFT draws its tasks after the SFT set unless task_pool is 0, and every task
// a step samples comes from that range of the training split.
func TestRFTTaskRange(t *testing.T) {
	cases := []struct {
		pool, wantBase, wantSize int
	}{
		{pool: 0, wantBase: 0, wantSize: 200}, // smoke's data.train_tasks: reuse SFT's tasks
		{pool: 50, wantBase: 200, wantSize: 50},
		{pool: 1000, wantBase: 200, wantSize: 1000},
	}
	for _, c := range cases {
		cfg := smoke(t, fmt.Sprintf("rft.task_pool=%d", c.pool))
		base, size := rftTaskRange(cfg)
		if base != c.wantBase || size != c.wantSize {
			t.Errorf("task_pool %d: base %d size %d, want %d and %d", c.pool, base, size, c.wantBase, c.wantSize)
			continue
		}
		envCfg, err := EnvConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := &rftRun{r: &Runner{cfg: cfg, envCfg: envCfg}}
		lo, hi := base+size, base-1
		for step := 1; step <= 20; step++ {
			for _, task := range s.sampleTasks(step, 0, 16) {
				if task.Split != env.Train {
					t.Fatalf("task_pool %d: a %v task", c.pool, task.Split)
				}
				lo, hi = min(lo, task.Index), max(hi, task.Index)
			}
		}
		if lo < base || hi >= base+size {
			t.Errorf("task_pool %d: drew indices %d…%d, outside [%d, %d)", c.pool, lo, hi, base, base+size)
		}
	}
}
