package serve

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestClosedVectorsLeaveNoMemory: a trainer that creates a vector of GRPO
// groups, plays it to the end, scores its episodes (POST /v1/score, a fresh
// orchestrator each time, its curiosity model trained on the batch) and
// closes it, 200 times over, leaves the live heap where it was after
// warm-up, and is never refused under a memory bound with room for a few
// such vectors above the heap it started with.
func TestClosedVectorsLeaveNoMemory(t *testing.T) {
	// The first requests build what the process keeps for good (the task
	// generator's and the reward's tables): played on a server of their own.
	warm := &grpoTrainer{ts: newTestServer(t, smoke(t), Options{MaxMemory: -1}), rng: rand.New(rand.NewPCG(1, 1))}
	warm.cycle()
	const room = 32 << 20 // an 8-episode vector's 2.5 MiB, a score request's replay and model, and slack
	ts := newTestServer(t, smoke(t), Options{MaxMemory: int64(settledHeap()) + room})
	tr := &grpoTrainer{ts: ts, rng: rand.New(rand.NewPCG(1, 2))}
	for range 10 {
		tr.cycle()
	}
	base := settledHeap()
	const cycles, checks = 200, 4
	for c := range checks {
		for range cycles / checks {
			tr.cycle()
		}
		now := settledHeap()
		t.Logf("after %d cycles: live heap %.2f MiB (%.2f MiB after warm-up)", (c+1)*cycles/checks, mib(now), mib(base))
		if grown := int64(now) - int64(base); grown > int64(base)/10 {
			t.Fatalf("after %d create/play/score/close cycles the live heap grew by %.2f MiB, from %.2f MiB (more than 10 %%)", (c+1)*cycles/checks, mib(uint64(grown)), mib(base))
		}
	}
	if n, _ := ts.srv.Live(); n != 0 {
		t.Errorf("%d episodes live after every vector was closed", n)
	}
}

// settledHeap is the live heap once the episode pool is empty: the first
// collection moves a sync.Pool's items to its victim cache, the second drops
// them (heapLive is measured at a collection).
func settledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return heapLive()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// grpoTrainer plays vectors as examples/pixel_grpo.py does, only smaller:
// two tasks, a group of four episodes each, random actions the masks allow.
type grpoTrainer struct {
	ts   *testServer
	rng  *rand.Rand
	next int // the next training task
}

// vectorAnswer is what the trainer reads of a vector's answers (JSON encoding).
type vectorAnswer struct {
	Vector     string   `json:"vector"`
	Episodes   []string `json:"episodes"`
	Mask       [][]bool `json:"action_mask"`
	Terminated []bool   `json:"terminated"`
	Truncated  []bool   `json:"truncated"`
}

// cycle creates a vector, plays every episode to its end, scores them and
// closes the vector.
func (tr *grpoTrainer) cycle() {
	t, ts := tr.ts.t, tr.ts
	const tasks, group = 2, 4
	var specs []map[string]any
	for range tasks {
		specs = append(specs, map[string]any{"split": "train", "index": tr.next})
		tr.next++
	}
	var v vectorAnswer
	ts.json("POST", "/v1/vectors", map[string]any{"tasks": specs, "group": group, "observation": map[string]any{"coarse": false}}, &v)
	done := make([]bool, tasks*group)
	for ended := 0; ended < len(done); {
		acts := make([]int, len(done))
		for i, mask := range v.Mask {
			acts[i] = tr.allowed(mask)
		}
		episodes := v.Episodes
		ts.json("POST", "/v1/vectors/"+v.Vector+"/step", map[string]any{"actions": acts}, &v)
		v.Episodes = episodes
		for i := range done {
			if !done[i] && (v.Terminated[i] || v.Truncated[i]) {
				done[i] = true
				ended++
			}
		}
	}
	items := make([]map[string]any, len(v.Episodes))
	for k, e := range v.Episodes {
		items[k] = map[string]any{"episode": e, "group": k / group}
	}
	ts.json("POST", "/v1/score", map[string]any{"items": items}, nil)
	if status, _, b := ts.do("DELETE", "/v1/vectors/"+v.Vector, nil); status != 204 {
		t.Fatalf("DELETE %s: %d %s", v.Vector, status, b)
	}
}

// allowed draws one of the actions the mask allows (0 when none: an ended
// episode ignores its action).
func (tr *grpoTrainer) allowed(mask []bool) int {
	var ok []int
	for a, m := range mask {
		if m {
			ok = append(ok, a)
		}
	}
	if len(ok) == 0 {
		return 0
	}
	return ok[tr.rng.IntN(len(ok))]
}

// TestClosedEpisodesFreeTheirMemoryForCreates: the memory bound reads the
// live heap of the last collection, which still counts episodes closed
// since; a create that bound would refuse is admitted once they are gone.
func TestClosedEpisodesFreeTheirMemoryForCreates(t *testing.T) {
	const n = 32
	create := map[string]any{"n": n, "seed": 5, "observation": map[string]any{"coarse": false}}
	warm := newTestServer(t, smoke(t), Options{MaxMemory: -1})
	before := settledHeap()
	var v vectorView
	warm.json("POST", "/v1/vectors", create, &v)
	held := settledHeap() - before // what the n episodes hold
	warm.json("DELETE", "/v1/vectors/"+v.Vector, nil, nil)
	// Room for n more episodes, and for half of what n live ones hold.
	ts := newTestServer(t, smoke(t), Options{MaxMemory: int64(settledHeap() + n*episodeBytes + held/2)})
	ts.json("POST", "/v1/vectors", create, &v)
	runtime.GC() // the live heap the bound reads now counts the vector's episodes
	ts.json("DELETE", "/v1/vectors/"+v.Vector, nil, nil)
	if status, _, b := ts.do("POST", "/v1/vectors", create); status != 201 {
		t.Fatalf("a create after the only vector (%d episodes, %.1f MiB) was closed: %d %s", n, mib(held), status, b)
	}
}
