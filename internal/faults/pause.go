package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Pause returns a hook that holds the run at the points spec names, so that a
// test in another process can act while the run is exactly there. spec is a
// comma list of point or point#n (the n-th time the point is reached; the first
// by default). On reaching one the hook creates dir/<point>.reached, then
// waits until dir/<point>.release exists or the point's work is cancelled.
func Pause(dir, spec string) (Hook, error) {
	want := map[string]int{}
	for _, p := range strings.Split(spec, ",") {
		name, nth, found := strings.Cut(strings.TrimSpace(p), "#")
		n := 1
		if found {
			var err error
			if n, err = strconv.Atoi(nth); err != nil || n < 1 {
				return nil, fmt.Errorf("fault pause %q: want point or point#n, n ≥ 1", p)
			}
		}
		want[name] = n
	}
	var mu sync.Mutex
	seen := map[string]int{}
	return func(ctx context.Context, point string) {
		mu.Lock()
		seen[point]++
		hold := want[point] == seen[point]
		mu.Unlock()
		if !hold {
			return
		}
		base := filepath.Join(dir, point)
		if err := os.WriteFile(base+".reached", nil, 0o644); err != nil {
			return
		}
		// The test's release is a file: poll for it (a real process in another
		// terminal has no channel to wait on).
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := os.Stat(base + ".release"); err == nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}, nil
}
