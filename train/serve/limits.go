package serve

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"time"
)

// Limits that hold under concurrency. The world's memory is the live
// episodes' (each owns about episodeBytes, more for video tasks); a create
// is admitted while the episodes fit under --max-episodes and the live heap
// plus the new episodes fit under Options.MaxMemory. Scoring replays every
// trajectory with its observations (a maximal request holds about 220 MB of
// them), so score work runs under a weighted semaphore of replayed steps:
// at most one maximal request's worth at a time, the excess waiting up to
// Options.ScoreWait and then refused. Every refusal is a 503 with
// Retry-After.

// episodeBytes is what a live episode of an image task holds: its env
// buffers, the task's frame and the analyses of its views
// (BenchmarkLiveEpisodeMemory measures it; TestEpisodeBytesCoversALiveEpisode
// checks it).
const episodeBytes = 320 << 10

// heapLive reads the heap the last garbage collection found live.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// admit reserves n episode slots, or answers why the world is full: the
// episode cap, or its memory.
func (s *Server) admit(n int) *apiError {
	if !s.episodes.reserve(n) {
		return s.full("episodes", "--max-episodes", s.opt.MaxEpisodes, s.episodes.oldestUse())
	}
	if need, ok := s.memoryFits(n); !ok {
		s.episodes.release(n)
		e := errorf(http.StatusServiceUnavailable, "", "the world's memory is full: %d more episode(s) would take the live heap to %d MiB, above --max-memory %d MiB; close finished episodes (DELETE) or retry once idle ones expire (idle timeout %s)",
			n, need>>20, s.opt.MaxMemory>>20, s.opt.IdleTimeout)
		e.retryAfter = s.retryAfter(s.episodes.oldestUse())
		return e
	}
	return nil
}

// memoryFits reports whether n more episodes fit under Options.MaxMemory,
// and the live heap they would make. The live heap is the one the last
// collection found, so it still counts what was closed since, and a closed
// episode's buffers wait in the pool through one more collection: before
// refusing, a create collects twice (one create at a time; never again
// until something more is closed) and counts again.
func (s *Server) memoryFits(n int) (need uint64, ok bool) {
	if s.opt.MaxMemory <= 0 {
		return 0, true
	}
	limit, more := uint64(s.opt.MaxMemory), uint64(n)*episodeBytes
	if need = heapLive() + more; need <= limit {
		return need, true
	}
	s.collectMu.Lock()
	if s.closedSinceGC.Swap(false) {
		runtime.GC() // the pool's buffers move to its victim cache
		runtime.GC() // and are dropped
	}
	s.collectMu.Unlock()
	need = heapLive() + more
	return need, need <= limit
}

// released notes that memory was let go (an episode or a scorer closed, a
// score request answered), which the live heap counts until the next
// collection.
func (s *Server) released() { s.closedSinceGC.Store(true) }

// retryAfter is the time, in whole seconds (at least 1), until the least
// recently used entry last used at oldest (Unix ns, 0 for none) would expire.
func (s *Server) retryAfter(oldest int64) int {
	wait := time.Second
	if oldest > 0 {
		wait = time.Duration(oldest + int64(s.opt.IdleTimeout) - s.opt.Now().UnixNano())
	}
	return max(1, int((wait+time.Second-1)/time.Second))
}

// scoreWork is the weight of replaying steps: a trajectory's steps and its
// final observation.
func scoreWork(steps int) int64 { return int64(steps + 1) }

// acquireScore waits for work units of score work, up to ScoreWait; the
// caller releases them with s.scoreSem.Release(work).
func (s *Server) acquireScore(ctx context.Context, work int64) *apiError {
	work = min(work, s.scoreCap)
	ctx, cancel := context.WithTimeout(ctx, s.opt.ScoreWait)
	defer cancel()
	if err := s.scoreSem.Acquire(ctx, work); err != nil {
		e := errorf(http.StatusServiceUnavailable, "", "score work is at its bound (one maximal request's replay at a time) and this request waited %s: retry later", s.opt.ScoreWait)
		e.retryAfter = max(1, int(s.opt.ScoreWait/time.Second))
		return e
	}
	return nil
}

// memoryString formats a byte count in MiB for messages.
func memoryString(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }
