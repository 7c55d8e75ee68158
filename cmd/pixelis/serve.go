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

// serveListening, when set (by tests), learns the address the server listens on.
var serveListening func(addr string)

// cmdServe: pixelis serve [--addr HOST:PORT] [--token T] [--max-episodes N] [--idle-timeout D]
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
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return usagef("--addr %q: %v", *addr, err)
	}
	if *token == "" {
		*token = os.Getenv(tokenEnv)
	}
	if *token == "" && !serve.IsLoopback(*addr) {
		return usagef("--addr %s listens beyond this machine: give a bearer token with --token or $%s (or listen on 127.0.0.1)", *addr, tokenEnv)
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	srv, err := serve.New(cfg, serve.Options{
		MaxEpisodes: *maxEpisodes, MaxScorers: *maxScorers, IdleTimeout: *idle, Token: *token, Log: std.err,
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
	fmt.Fprintf(std.out, "pixelis serve: listening on http://%s (%s; at most %d episodes, idle timeout %s; API at /v1, schema at /v1/openapi.json)\n",
		ln.Addr(), auth, *maxEpisodes, *idle)
	if *heldOut != "" {
		fmt.Fprintf(std.out, "pixelis serve: handing out expert data of val and test tasks: %s\n", strings.TrimSpace(*heldOut))
	}
	if serveListening != nil {
		serveListening(ln.Addr().String())
	}
	return runServer(ctx, stop, ln, srv, std.out)
}

// runServer serves h on ln until ctx ends, then stops accepting, lets the
// requests in flight finish (up to serveGrace) and returns nil. stop undoes
// the signal handling first, so a second SIGINT ends the process at once.
func runServer(ctx context.Context, stop func(), ln net.Listener, h http.Handler, out io.Writer) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
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
