package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
	"golang.org/x/sync/semaphore"
)

// Options size the server. Zero values take the defaults.
type Options struct {
	// MaxEpisodes caps the live episodes; a create beyond it is refused with
	// 503 and Retry-After. Default DefaultMaxEpisodes.
	MaxEpisodes int
	// MaxScorers caps the live scorer sessions. Default DefaultMaxScorers.
	MaxScorers int
	// IdleTimeout closes an episode or scorer no request has touched for
	// this long. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxMemory bounds the world's memory: a create is refused (503,
	// Retry-After) when the live heap plus the new episodes would pass it.
	// Default DefaultMaxMemory; negative for no bound. `pixelis serve` also
	// makes it the Go runtime's soft memory limit.
	MaxMemory int64
	// ScoreWait is how long a score request waits for its share of the
	// bounded score work before it is refused with 503. Default
	// DefaultScoreWait.
	ScoreWait time.Duration
	// Token, when not empty, is required as "Authorization: Bearer <token>"
	// (the scheme in any case) on every request but GET /v1/health.
	Token string
	// Log receives one line per server error (a 5xx or a recovered panic);
	// nil discards them.
	Log io.Writer
	// Now is the clock, for tests; nil is time.Now.
	Now func() time.Time
	// HeldOutExpert, when not empty, says why the server hands out expert
	// trajectories and CoTA records of validation and test tasks too; by
	// default it refuses them (403), so that no client trains on the tasks
	// it is scored on by accident. Published in /v1/spec.
	HeldOutExpert string
}

// Defaults of Options.
const (
	DefaultMaxEpisodes = 4096
	DefaultMaxScorers  = 64
	DefaultIdleTimeout = 10 * time.Minute
	DefaultMaxMemory   = 1536 << 20
	DefaultScoreWait   = time.Minute
)

// Server serves the pixel world and its reward. Create it with New, serve
// it as an http.Handler, and Close it to stop its janitor.
type Server struct {
	cfg            *configs.Config
	envCfg         env.Config
	opt            Options
	mux            *http.ServeMux
	cfgHash        string
	names          []string // reward component names, in scoring order
	terms          stepTerms
	episodes       *store[*episode]
	scorers        *store[*scorer]
	vectors        *store[*vector]
	openenv        *store[*openenvSession] // OpenEnv's sessions (openenv.go)
	scoreSem       *semaphore.Weighted     // replayed steps of score work in flight
	scoreCap       int64                   // its size: one maximal request's
	tasks          *taskStream
	pool           sync.Pool        // *env.Episode buffers of closed episodes and replays
	difficultyCuts func() []float64 // the reference cut points of CoTA buckets
	expired        int              // episodes expired since the janitor last released memory
	closedSince    atomic.Int64     // episodes closed (expired or deleted) since then
	closedSinceGC  atomic.Bool      // episodes or scorers closed since the memory bound last collected
	collectMu      sync.Mutex       // one collection at a time for the memory bound
	stop           chan struct{}
	done           chan struct{}
	ctx            context.Context // cancelled by Close: ends WebSocket sessions
	cancel         context.CancelFunc
	logMu          sync.Mutex
}

// New checks cfg's world and reward and returns a server for them.
func New(cfg *configs.Config, opt Options) (*Server, error) {
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	orch, err := setup.Orchestrator(cfg)
	if err != nil {
		return nil, err
	}
	if opt.MaxEpisodes <= 0 {
		opt.MaxEpisodes = DefaultMaxEpisodes
	}
	if opt.MaxScorers <= 0 {
		opt.MaxScorers = DefaultMaxScorers
	}
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.MaxMemory == 0 {
		opt.MaxMemory = DefaultMaxMemory
	}
	if opt.ScoreWait <= 0 {
		opt.ScoreWait = DefaultScoreWait
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	var enc strings.Builder
	if err := configs.Encode(&enc, cfg); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(enc.String()))
	s := &Server{
		cfg: cfg.Clone(), envCfg: ec, opt: opt, cfgHash: hex.EncodeToString(sum[:]),
		names:    orch.Names(),
		episodes: newStore[*episode](opt.MaxEpisodes),
		scorers:  newStore[*scorer](opt.MaxScorers),
		vectors:  newStore[*vector](opt.MaxEpisodes), // every vector holds an episode
		openenv:  newStore[*openenvSession](opt.MaxEpisodes),
		scoreCap: int64(maxScoreItems) * scoreWork(ec.MaxSteps),
		tasks:    newTaskStream(cfg.Run.Seed),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if s.terms, err = newStepTerms(cfg); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.scoreSem = semaphore.NewWeighted(s.scoreCap)
	s.difficultyCuts = sync.OnceValue(func() []float64 { return referenceCuts(ec) })
	s.pool.New = func() any { return env.NewEpisode(ec) }
	s.buildMux()
	go s.janitor()
	return s, nil
}

// Close stops the janitor and closes every episode and scorer. The handler
// must not be used afterwards.
func (s *Server) Close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	<-s.done
	s.cancel()
	for _, o := range s.openenv.removeAll() {
		s.closeOpenEnvSession(o)
	}
	for _, v := range s.vectors.removeAll() {
		s.closeVector(v)
	}
	for _, e := range s.episodes.removeAll() {
		s.closeEpisode(e)
	}
	s.scorers.removeAll()
}

// Live returns the numbers of live episodes and scorers.
func (s *Server) Live() (episodes, scorers int) { return s.episodes.len(), s.scorers.len() }

// janitor closes idle episodes and scorers.
func (s *Server) janitor() {
	defer close(s.done)
	every := min(max(s.opt.IdleTimeout/8, 10*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.expire()
		}
	}
}

// expire closes what has been idle for longer than the idle timeout.
func (s *Server) expire() {
	cut := s.opt.Now().Add(-s.opt.IdleTimeout).UnixNano()
	for _, o := range s.openenv.removeIdle(cut) {
		s.closeOpenEnvSession(o)
	}
	for _, v := range s.vectors.removeIdle(cut) {
		s.closeVector(v)
	}
	closed := s.episodes.removeIdle(cut)
	for _, e := range closed {
		s.closeEpisode(e)
	}
	if len(s.scorers.removeIdle(cut)) > 0 {
		s.released()
	}
	s.expired += len(closed)
	massExpiry := s.expired >= max(releaseAfter, s.opt.MaxEpisodes/8) && len(closed) > 0
	// The last close leaves nothing live: the trainer is done or between
	// rounds, and what its episodes held goes back now, within a janitor's
	// tick of the last DELETE, not minutes later at the runtime's pace.
	idle := s.closedSince.Load() > 0 && s.episodes.len() == 0
	if massExpiry || idle {
		s.closedSince.Store(0)
		releaseMemory()
		s.expired = 0
	}
}

// releaseAfter is the least number of expired episodes after which the
// janitor hands their memory back to the operating system (an eighth of
// --max-episodes when that is more); it does so too once the last live
// episode has closed.
const releaseAfter = 64

// releaseMemory returns the freed heap to the operating system at once
// (the runtime would keep it for minutes), so that the process's RSS
// follows its live episodes, round after round of fill and expiry, instead
// of settling at its highest. The first collection empties the episode
// pool into its victim cache, the second (FreeOSMemory's) drops it; two
// full collections, once per mass expiry.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// route is one endpoint: a ServeMux pattern ("METHOD /path") and its handler.
type route struct {
	pattern string
	handler func(*Server, http.ResponseWriter, *http.Request)
}

// routes lists every endpoint; openapi.json documents exactly these.
var routes = []route{
	{"GET /v1/health", (*Server).handleHealth},
	{"GET /v1/spec", (*Server).handleSpec},
	{"GET /v1/openapi.json", (*Server).handleOpenAPI},
	{"POST /v1/episodes", (*Server).handleCreate},
	{"GET /v1/episodes/{id}", (*Server).handleGet},
	{"DELETE /v1/episodes/{id}", (*Server).handleDelete},
	{"POST /v1/episodes/{id}/reset", (*Server).handleReset},
	{"POST /v1/episodes/{id}/step", (*Server).handleStep},
	{"GET /v1/episodes/{id}/view.png", (*Server).handleView},
	{"GET /v1/episodes/{id}/frames/{k}", (*Server).handleFrame},
	{"GET /v1/episodes/{id}/results", (*Server).handleResults},
	{"GET /v1/episodes/{id}/trajectory", (*Server).handleTrajectory},
	{"POST /v1/vectors", (*Server).handleVectorCreate},
	{"GET /v1/vectors/{id}", (*Server).handleVectorGet},
	{"DELETE /v1/vectors/{id}", (*Server).handleVectorDelete},
	{"POST /v1/vectors/{id}/reset", (*Server).handleVectorReset},
	{"POST /v1/vectors/{id}/step", (*Server).handleVectorStep},
	{"POST /v1/expert", (*Server).handleExpert},
	{"POST /v1/experts", (*Server).handleExperts},
	{"POST /v1/score", (*Server).handleScore},
	{"POST /v1/scorers", (*Server).handleScorerCreate},
	{"GET /v1/scorers/{id}", (*Server).handleScorerGet},
	{"DELETE /v1/scorers/{id}", (*Server).handleScorerDelete},
	{"POST /v1/scorers/{id}/score", (*Server).handleScorerScore},
}

func (s *Server) buildMux() {
	m := http.NewServeMux()
	for _, rt := range slices.Concat(routes, openenvRoutes) {
		h := rt.handler
		m.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) { h(s, w, r) })
	}
	s.mux = m
}

// ServeHTTP checks the token, recovers from panics and turns the mux's own
// 404 and 405 answers into JSON errors.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.logf("panic serving %s %s: %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
			writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "internal error; the server logged it"})
		}
	}()
	w.Header().Set("Cache-Control", "no-store")
	if s.opt.Token != "" && !(r.Method == http.MethodGet && publicPaths[r.URL.Path]) && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pixelis"`)
		writeError(w, errorf(http.StatusUnauthorized, "Authorization", "missing or wrong bearer token (send \"Authorization: Bearer <token>\")"))
		return
	}
	if h, pattern := s.mux.Handler(r); pattern == "" {
		cw := &captureWriter{header: http.Header{}}
		h.ServeHTTP(cw, r)
		allow := cw.header.Get("Allow")
		if allow != "" {
			w.Header().Set("Allow", allow)
		}
		if cw.status == http.StatusMethodNotAllowed {
			writeError(w, errorf(cw.status, "method", "%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
			return
		}
		writeError(w, errorf(http.StatusNotFound, "path", "no endpoint %s %s (see GET /v1/openapi.json)", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authorized checks the bearer token; the scheme's name is
// case-insensitive (RFC 9110, section 11.1).
func (s *Server) authorized(r *http.Request) bool {
	scheme, got, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.opt.Token)) == 1
}

// captureWriter records what the mux's fallback handlers answer.
type captureWriter struct {
	header http.Header
	status int
}

func (c *captureWriter) Header() http.Header         { return c.header }
func (c *captureWriter) Write(b []byte) (int, error) { return len(b), nil }
func (c *captureWriter) WriteHeader(status int)      { c.status = status }

func (s *Server) logf(format string, args ...any) {
	if s.opt.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.opt.Log, "%s pixelis serve: %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// writeJSON sends v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"status":500,"message":"encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.retryAfter))
	}
	writeJSON(w, e.Status, map[string]*apiError{"error": e})
}

// fail sends err: an *apiError as it is, anything else as a logged 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeError(w, ae)
		return
	}
	s.logf("%s %s: %v", r.Method, r.URL.Path, err)
	writeError(w, &apiError{Status: http.StatusInternalServerError, Message: err.Error()})
}

// newID returns prefix and 24 random hex digits: ids cannot be guessed, so
// clients sharing a server cannot touch each other's episodes by accident.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// IsLoopback reports whether a listen address (host:port) accepts only
// connections from this machine: localhost or a loopback IP. An empty host
// (":8080") listens on every interface and is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
