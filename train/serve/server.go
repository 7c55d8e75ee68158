package serve

import (
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
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/env"
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
	// Token, when not empty, is required as "Authorization: Bearer <token>"
	// on every request but GET /v1/health.
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
)

// Server serves the pixel world and its reward. Create it with New, serve
// it as an http.Handler, and Close it to stop its janitor.
type Server struct {
	cfg      *configs.Config
	envCfg   env.Config
	opt      Options
	mux      *http.ServeMux
	cfgHash  string
	names    []string // reward component names, in scoring order
	episodes *store[*episode]
	scorers  *store[*scorer]
	tasks    *taskStream
	pool     sync.Pool // *env.Episode buffers of closed episodes and replays
	stop     chan struct{}
	done     chan struct{}
	logMu    sync.Mutex
}

// New checks cfg's world and reward and returns a server for them.
func New(cfg *configs.Config, opt Options) (*Server, error) {
	ec, err := train.EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	orch, err := train.NewOrchestrator(cfg)
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
		tasks:    newTaskStream(cfg.Run.Seed),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
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
	for _, e := range s.episodes.removeIdle(cut) {
		s.closeEpisode(e)
	}
	s.scorers.removeIdle(cut)
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
	{"POST /v1/expert", (*Server).handleExpert},
	{"POST /v1/score", (*Server).handleScore},
	{"POST /v1/scorers", (*Server).handleScorerCreate},
	{"GET /v1/scorers/{id}", (*Server).handleScorerGet},
	{"DELETE /v1/scorers/{id}", (*Server).handleScorerDelete},
	{"POST /v1/scorers/{id}/score", (*Server).handleScorerScore},
}

func (s *Server) buildMux() {
	m := http.NewServeMux()
	for _, rt := range routes {
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
	if s.opt.Token != "" && !(r.Method == http.MethodGet && r.URL.Path == "/v1/health") && !s.authorized(r) {
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

func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.opt.Token)) == 1
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
