package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/train/serve"
)

// tokenEnv names the environment variable that holds the bearer token when
// --token is not given (a flag's value shows in the process list).
const tokenEnv = "PIXELIS_SERVE_TOKEN"

// serveGrace is how long a stopping server waits for in-flight requests.
const serveGrace = 30 * time.Second

// minPublicToken is the shortest token a server off loopback accepts: 16
// characters, e.g. `openssl rand -hex 16` gives 32.
const minPublicToken = 16

// The HTTP server's time-outs, set here rather than left to net/http's
// defaults (none at all).
const (
	readHeaderTimeout = 10 * time.Second // a request's headers
	readTimeout       = time.Minute      // a whole request, a 16 MiB score body included
	// writeTimeout covers a score request's wait for its share of the
	// score work (serve.DefaultScoreWait) and a maximal replay.
	writeTimeout = serve.DefaultScoreWait + 4*time.Minute
	idleTimeout  = 2 * time.Minute // a kept-alive connection between requests
	maxHeader    = 64 << 10
)

// serveListening, when set (by tests), learns the address the server listens on.
var serveListening func(addr string)

// cmdServe: pixelis serve [--addr HOST:PORT] [--token T] [--max-episodes N] [--max-memory MiB] [--idle-timeout D]
func cmdServe(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("serve", std)
	var cf configFlags
	fs.StringVar(&cf.config, "config", "", "config `FILE` whose [env] world and [reward] the server serves (default: the embedded default; \"smoke\" names the embedded smoke config)")
	fs.Var(&cf.sets, "set", "override a config value, `key=value` with a dotted TOML path (repeatable)")
	addr := fs.String("addr", "127.0.0.1:8765", "listen address `HOST:PORT` (port 0 picks a free one); any but loopback needs a token")
	token := fs.String("token", "", "bearer `TOKEN` every request must carry (default: $"+tokenEnv+"); required off loopback")
	maxEpisodes := fs.Int("max-episodes", serve.DefaultMaxEpisodes, "live episodes kept at most `N`; more are refused with 503")
	maxScorers := fs.Int("max-scorers", serve.DefaultMaxScorers, "live scorer sessions kept at most `N`")
	idle := fs.Duration("idle-timeout", serve.DefaultIdleTimeout, "close episodes and scorers idle for `DURATION`")
	maxMemory := fs.Int("max-memory", serve.DefaultMaxMemory>>20, "the world's memory bound in `MiB`: creates beyond it are refused with 503; also the Go runtime's soft memory limit")
	heldOut := fs.String("heldout-expert", "", "hand out expert trajectories and CoTA records of val and test tasks too, for the reason `WHY` (shown in /v1/spec); by default they are refused")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *maxEpisodes < 1 {
		return usagef("--max-episodes %d: must be >= 1", *maxEpisodes)
	}
	if *maxScorers < 1 {
		return usagef("--max-scorers %d: must be >= 1", *maxScorers)
	}
	if *heldOut != "" && len(strings.TrimSpace(*heldOut)) < 8 {
		return usagef("--heldout-expert %q: say why val and test tasks' expert data is handed out (at least 8 characters)", *heldOut)
	}
	if *idle < time.Second {
		return usagef("--idle-timeout %s: must be at least 1s", *idle)
	}
	if *maxMemory < 64 {
		return usagef("--max-memory %d: must be at least 64 (MiB)", *maxMemory)
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return usagef("--addr %q: %v", *addr, err)
	}
	if err := checkToken(token, *addr); err != nil {
		return err
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	mem := int64(*maxMemory) << 20
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(mem) // the collector works harder near the bound instead of doubling the heap
	}
	srv, err := serve.New(cfg, serve.Options{
		MaxEpisodes: *maxEpisodes, MaxScorers: *maxScorers, IdleTimeout: *idle, Token: *token, Log: std.err, MaxMemory: mem,
		HeldOutExpert: strings.TrimSpace(*heldOut),
	})
	if err != nil {
		return usageError{err}
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	auth := "no token"
	if *token != "" {
		auth = "bearer token required"
	}
	fmt.Fprintf(std.out, "pixelis serve: listening on http://%s (%s; at most %d episodes in %d MiB, idle timeout %s; API at /v1, schema at /v1/openapi.json; OpenEnv at /openenv)\n",
		ln.Addr(), auth, *maxEpisodes, *maxMemory, *idle)
	if *heldOut != "" {
		fmt.Fprintf(std.out, "pixelis serve: handing out expert data of val and test tasks: %s\n", strings.TrimSpace(*heldOut))
	}
	if serveListening != nil {
		serveListening(ln.Addr().String())
	}
	return runServer(ctx, stop, ln, srv, std.out)
}

// checkToken settles the bearer token: --token, else $PIXELIS_SERVE_TOKEN.
// A token given is never blank, and off loopback one is required and at
// least minPublicToken characters long.
func checkToken(token *string, addr string) error {
	from := "--token"
	if *token == "" {
		*token, from = os.Getenv(tokenEnv), "$"+tokenEnv
	}
	if *token != "" && strings.TrimSpace(*token) == "" {
		return usagef("%s is blank: give a real token or none", from)
	}
	*token = strings.TrimSpace(*token)
	if serve.IsLoopback(addr) {
		return nil
	}
	if *token == "" {
		return usagef("--addr %s listens beyond this machine: give a bearer token with --token or $%s (or listen on 127.0.0.1)", addr, tokenEnv)
	}
	if len(*token) < minPublicToken {
		return usagef("%s has %d characters: off loopback a token needs at least %d (e.g. openssl rand -hex 16)", from, len(*token), minPublicToken)
	}
	return nil
}

// runServer serves h on ln until ctx ends, then stops accepting, lets the
// requests in flight finish (up to serveGrace) and returns nil. stop undoes
// the signal handling first, so a second SIGINT ends the process at once.
func runServer(ctx context.Context, stop func(), ln net.Listener, h http.Handler, out io.Writer) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeader,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop()
	fmt.Fprintln(out, "pixelis serve: stopping: finishing the requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), serveGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
		return fmt.Errorf("stop: requests still running after %s: %w", serveGrace, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(out, "pixelis serve: stopped")
	return nil
}
