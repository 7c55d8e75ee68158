package external

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/child"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/serve"
	"github.com/pixelis/pixelis/train/setup"
)

// Options say what to evaluate and how.
type Options struct {
	Config  *configs.Config // the world (its [env]), the seed, eval.temperature
	Split   env.Split
	From    int // first task index of the split
	Tasks   int
	Samples int      // sampled attempts a task, beside the greedy one
	Command []string // the agent: program and arguments
	// Stdout and Stderr receive the agent's output; nil discards it.
	Stdout, Stderr io.Writer
}

// stopGrace is how long a cancelled agent has between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// Evaluate runs the agent on the plan's episodes and scores what it did.
func Evaluate(ctx context.Context, opt Options) (Result, error) {
	if len(opt.Command) == 0 {
		return Result{}, errors.New("external eval: no agent command")
	}
	srv, token, err := newServer(opt)
	if err != nil {
		return Result{}, err
	}
	defer srv.Close()
	url, stopHTTP, err := listen(srv, token)
	if err != nil {
		return Result{}, err
	}
	defer stopHTTP()
	plan, err := openPlan(srv, opt)
	if err != nil {
		return Result{}, err
	}
	path, err := writePlan(plan)
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(filepath.Dir(path))
	env := []string{EnvURL + "=" + url, EnvToken + "=" + token, EnvPlan + "=" + path}
	if err := runAgent(ctx, opt, env); err != nil {
		return Result{}, err
	}
	return score(srv, opt, plan)
}

// newServer is a server of the config's world that keeps every episode of
// the plan until the agent is done, however slow it is: nothing expires.
func newServer(opt Options) (*serve.Server, string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	attempts := opt.Tasks * (1 + opt.Samples)
	srv, err := serve.New(opt.Config, serve.Options{
		MaxEpisodes: max(attempts, serve.DefaultMaxEpisodes), IdleTimeout: 30 * 24 * time.Hour, Token: hex.EncodeToString(b[:]),
	})
	if err != nil {
		return nil, "", err
	}
	return srv, hex.EncodeToString(b[:]), nil
}

// listen serves srv on a free loopback port; stop closes it.
func listen(srv *serve.Server, token string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("external eval: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln) // returns when closed
	}()
	return "http://" + ln.Addr().String(), func() { hs.Close(); <-done }, nil
}

// openPlan opens every attempt's episode.
func openPlan(srv *serve.Server, opt Options) (*Plan, error) {
	envCfg, err := setup.EnvConfig(opt.Config)
	if err != nil {
		return nil, err
	}
	p := &Plan{Split: opt.Split.String(), From: opt.From, Tasks: opt.Tasks, Samples: opt.Samples, Temperature: opt.Config.Eval.Temperature}
	for i := range opt.Tasks {
		t := env.Generate(envCfg, opt.Split, opt.From+i)
		as, err := attemptsOf(t, i, p, opt.Config.Run.Seed, func() (string, error) { return srv.Open(opt.Split, t.Index) })
		if err != nil {
			return nil, fmt.Errorf("external eval: task %s: %w", t.ID, err)
		}
		p.Attempts = append(p.Attempts, as...)
	}
	return p, nil
}

// writePlan writes the plan to a directory of its own, private to the user.
func writePlan(p *Plan) (string, error) {
	dir, err := os.MkdirTemp("", "pixelis-eval-")
	if err != nil {
		return "", fmt.Errorf("external eval: %w", err)
	}
	data, err := json.Marshal(p)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "plan.json"), data, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("external eval: write plan: %w", err)
	}
	return filepath.Join(dir, "plan.json"), nil
}

// runAgent runs the agent's command to its end, in a process group of its
// own that does not outlive pixelis; cancelling ctx stops it (SIGTERM, then
// SIGKILL after stopGrace).
func runAgent(ctx context.Context, opt Options, env []string) error {
	c := exec.CommandContext(ctx, opt.Command[0], opt.Command[1:]...)
	c.Env = append(os.Environ(), env...)
	c.Stdout, c.Stderr = opt.Stdout, opt.Stderr
	child.OwnGroup(c)
	c.Cancel = func() error { return signalGroup(c.Process, sigterm) }
	c.WaitDelay = stopGrace
	reaped := make(chan error, 1)
	if err := child.Start(c, func(err error) { reaped <- err }); err != nil {
		return fmt.Errorf("external eval: start agent %q: %w", opt.Command[0], err)
	}
	err := <-reaped
	signalGroup(c.Process, sigkill) // whatever it left behind
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("external eval: agent %q: %w", opt.Command[0], err)
	}
	return nil
}
