package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeUsageErrors(t *testing.T) {
	t.Setenv(tokenEnv, "")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--addr", "0.0.0.0:0"}, "listens beyond this machine: give a bearer token"},
		{[]string{"serve", "--addr", ":8765"}, "give a bearer token"},
		{[]string{"serve", "--addr", "nonsense"}, `--addr "nonsense"`},
		{[]string{"serve", "--max-episodes", "0"}, "--max-episodes 0: must be >= 1"},
		{[]string{"serve", "--max-scorers", "-1"}, "--max-scorers -1: must be >= 1"},
		{[]string{"serve", "--idle-timeout", "10ms"}, "--idle-timeout 10ms: must be at least 1s"},
		{[]string{"serve", "--idle-timeout", "soon"}, `--idle-timeout "soon": want a duration with its unit, such as 30s`},
		{[]string{"serve", "--set", "env.max_stepz=3"}, "unknown key env.max_stepz"},
		{[]string{"serve", "--set", "env.max_steps=2"}, "env.max_steps: must be in [5, 64], got 2"},
		{[]string{"serve", "extra"}, "want no arguments"},
		{[]string{"serve", "--token", " "}, "--token is blank"},
		{[]string{"serve", "--addr", "0.0.0.0:0", "--token", "  "}, "--token is blank"},
		{[]string{"serve", "--addr", "0.0.0.0:0", "--token", "x"}, "--token has 1 characters: off loopback a token needs at least 16"},
		{[]string{"serve", "--max-memory", "10"}, "--max-memory 10: must be at least 64"},
	}
	for _, c := range cases {
		code, out, errOut := run(t, c.args...)
		if code != exitBadUsage || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%v: exit %d, output %q, want 2 and %q", c.args, code, out+errOut, c.want)
		}
	}
}

// TestServeRunsAndStopsOnCancel serves the smoke world in process, asks it
// for its health, then stops it as a signal would.
func TestServeRunsAndStopsOnCancel(t *testing.T) {
	t.Setenv(tokenEnv, "tok")
	addrc := make(chan string, 1)
	serveListening = func(addr string) { addrc <- addr }
	defer func() { serveListening = nil }()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"serve", "--config", "smoke", "--addr", "127.0.0.1:0"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case c := <-code:
		t.Fatalf("serve exited %d: %s%s", c, out.String(), errOut.String())
	}
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("/v1/health", ""); s != 200 {
		t.Errorf("health: %d", s)
	}
	if s := get("/v1/spec", ""); s != 401 {
		t.Errorf("spec without the token from $%s: %d", tokenEnv, s)
	}
	if s := get("/v1/spec", "tok"); s != 200 {
		t.Errorf("spec with the token: %d", s)
	}
	cancel()
	select {
	case c := <-code:
		if c != exitOK || !strings.Contains(out.String(), "pixelis serve: stopped") {
			t.Errorf("exit %d, output %q %q", c, out.String(), errOut.String())
		}
	case <-time.After(2 * time.Minute): // a safety net against a hang
		t.Fatal("serve did not stop")
	}
}

// TestServeFinishesRequestsInFlight stops the server while a request is
// being handled: the request completes, then runServer returns.
func TestServeFinishesRequestsInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "finished")
	})
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, func() {}, ln, h, &out) }()
	type result struct {
		status int
		body   string
		err    error
	}
	resc := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			resc <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		resc <- result{status: resp.StatusCode, body: string(b)}
	}()
	<-entered
	cancel()
	// The server is draining once new connections are refused; it has not
	// returned then, since the request in flight is held.
	refused := waitFor(time.Minute, func() bool {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if !refused {
		t.Errorf("new connections are still accepted after the stop")
	}
	select {
	case err := <-done:
		t.Fatalf("runServer returned %v with a request in flight", err)
	default:
	}
	close(release)
	if r := <-resc; r.err != nil || r.status != 200 || r.body != "finished" {
		t.Errorf("request in flight: %+v", r)
	}
	if err := <-done; err != nil {
		t.Errorf("runServer: %v", err)
	}
	if !strings.Contains(out.String(), "finishing the requests in flight") {
		t.Errorf("output %q", out.String())
	}
}
