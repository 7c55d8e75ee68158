"""PixelisCallback's cost to TRL's GRPOTrainer, and the time from `pixelis
launch` to the first metric, on the tiny model of the TRL stack's tests
(clients/python/tests/stack_trl/tiny.py) under the real `pixelis launch
--no-tui` with a reward curriculum (so lockstep is on: docs/launch-protocol.md).

Each run launches the trainer under a `pixelis` built from this checkout
(or --pixelis) with the pinned TRL stack's interpreter (envs/build.py trl)
for --steps GRPO steps, the first --warmup left out, and prints:

- callback CPU / step CPU: for each step, the CPU the callback costs the
  trainer's process over that process's CPU in the step, median over the
  steps (and the 90th percentile). A step is the span from one on_step_end
  to the next. The callback's CPU in it is the training thread's CPU
  (time.thread_time) inside the callback's hooks (on_log, on_step_end with
  the SDK's step_boundary and a stage's application, on_save, on_evaluate),
  plus the CPU of the SDK's own threads (its writer, "pixelis-channel", and
  its reader, "pixelis-channel-reader"; their thread CPU clocks) over the
  span; the step's CPU is the process's (time.process_time: every thread,
  torch's included). Under lockstep step_boundary also waits for pixelis
  to have observed the step: wall time, no CPU, reported apart.
- from launch to the first metric: wall seconds from starting `pixelis
  launch` to the first metrics line pixelis records (metrics.jsonl's time
  of step 1), and to the first `step N` line of the headless output (one
  every 10 steps), with the trainer's own breakdown: the interpreter's
  start, `import torch`, transformers, trl, the model and trainer built,
  the channel connected, the first step.

    /usr/bin/python3 clients/python/bench_trl_callback.py --runs 5 --tmux 3

(figures in docs/benchmarks.md). --no-curriculum launches without the
curriculum (no lockstep), for comparison.

--tmux also times the console (`pixelis launch` in a tmux pane of 160x48):
from the start to the first metric value on its screen (the reward pane's
`final` row with its value).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The stages of cmd/pixelis's TestLaunchTRLConsole: coherence weighs 0, then 1
# from the fourth step on, so a stage change happens within the measured run.
CURRICULUM = os.path.join(HERE, "tests", "stack_trl", "curriculum.toml")

HOOKS = ("on_train_begin", "on_log", "on_step_end", "on_save", "on_evaluate", "on_train_end")
SDK_THREADS = ("pixelis-channel", "pixelis-channel-reader")
# The console's reward pane with a value for the final reward ("│final   │████ +1.00 · …").
SHOWN = re.compile(r"│final\s.*[+-]\d+\.\d\d")


# --- the trainer (under pixelis launch) -------------------------------------------------------

def final(prompts, completions, **kwargs):
    return [1.0] * len(completions)


def coherence(prompts, completions, **kwargs):
    return [0.5] * len(completions)


def sdk_threads_cpu():
    """CPU seconds of the SDK's threads alive now."""
    total = 0.0
    for t in threading.enumerate():
        if t.name in SDK_THREADS and t.ident is not None:
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            except (OSError, ProcessLookupError):
                pass  # ended in between
    return total


def child(result_path, steps):
    marks = {"start": time.time()}
    import torch  # noqa: F401
    marks["torch"] = time.time()
    import transformers  # noqa: F401
    marks["transformers"] = time.time()
    import trl  # noqa: F401
    marks["trl"] = time.time()
    sys.path.insert(0, os.path.join(HERE, "tests", "stack_trl"))
    import tiny
    from pixelis.trl import PixelisCallback

    out = tempfile.mkdtemp(prefix="bench-trl-")
    trainer = tiny.grpo_trainer(out, (final, coherence), max_steps=steps)
    marks["trainer"] = time.time()

    spans = []  # per step: its process CPU, the hooks' thread CPU (each, and in all), the SDK threads' CPU
    acc = dict.fromkeys(HOOKS + ("hooks", "boundary_wall"), 0.0)
    last = {}

    class Timed(PixelisCallback):
        pass

    def timed(name):
        inner = getattr(PixelisCallback, name)

        def hook(self, args, state, control, **kwargs):
            if name == "on_step_end":
                p, s = time.process_time(), sdk_threads_cpu()
                if last:
                    spans.append(dict(acc, step=state.global_step, cpu=p - last["p"], threads=s - last["s"]))
                acc.update(dict.fromkeys(acc, 0.0))
                last["p"], last["s"] = p, s
                if state.global_step == 1:
                    marks["first_step"] = time.time()
            t, w = time.thread_time(), time.monotonic()
            try:
                return inner(self, args, state, control, **kwargs)
            finally:
                dt = time.thread_time() - t
                acc[name] += dt
                acc["hooks"] += dt
                if name == "on_step_end":
                    acc["boundary_wall"] += time.monotonic() - w
        return hook

    for name in HOOKS:
        setattr(Timed, name, timed(name))
    cb = Timed(trainer)
    marks["connected"] = time.time()
    trainer.add_callback(cb)
    trainer.train()
    shutil.rmtree(out, ignore_errors=True)
    with open(result_path, "w") as f:
        json.dump({"marks": marks, "spans": spans, "lockstep": bool(cb.run.active and cb.run._channel.lockstep)}, f)


# --- the launcher ------------------------------------------------------------------------------

def build_pixelis(tmp):
    path = os.path.join(tmp, "pixelis")
    subprocess.run(["go", "build", "-o", path, "./cmd/pixelis"], cwd=REPO, check=True)
    return path


def stack_python():
    return subprocess.run([sys.executable, os.path.join(HERE, "envs", "build.py"), "trl"], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def child_env():
    env = dict(os.environ)
    env.update(PYTHONPATH=HERE, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONDONTWRITEBYTECODE="1")
    return env


def rfc3339(s):
    """metrics.jsonl's time (RFC 3339, nanoseconds, UTC) as seconds since the epoch."""
    import datetime
    head, frac = s.rstrip("Z").split(".")
    t = datetime.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() + float("0." + frac)


def first_metric_time(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if m.get("step") == 1:
                return rfc3339(m["time"])
    return None


def launch_cmd(pixelis, py, tmp, result, steps, tui, curriculum=True):
    run_dir = os.path.join(tmp, "run")
    cmd = [pixelis, "launch", "--run-dir", run_dir, "--no-curriculum"]
    if curriculum:
        cmd[-1:] = ["--config", CURRICULUM]
    if not tui:
        cmd.append("--no-tui")
    return cmd + ["--", py, "-u", os.path.abspath(__file__), "--child", result, "--steps", str(steps)], run_dir


def run_headless(pixelis, py, steps, curriculum):
    tmp = tempfile.mkdtemp(prefix="bench-trl-launch-")
    try:
        result = os.path.join(tmp, "result.json")
        cmd, run_dir = launch_cmd(pixelis, py, tmp, result, steps, tui=False, curriculum=curriculum)
        t0 = time.time()
        p = subprocess.Popen(cmd, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first_line = None
        for line in p.stdout:
            if first_line is None and line.startswith("step "):
                first_line = time.time()
        if p.wait() != 0:
            raise SystemExit("pixelis launch exited %d (run directory %s kept)" % (p.returncode, run_dir))
        with open(result) as f:
            r = json.load(f)
        r["t0"], r["first_line"], r["first_metric"] = t0, first_line, first_metric_time(run_dir)
        return r
    finally:
        if os.path.exists(os.path.join(tmp, "result.json")):
            shutil.rmtree(tmp, ignore_errors=True)


def run_tmux(pixelis, py, steps):
    """Seconds from starting `pixelis launch` in a tmux pane to a metric value on its screen."""
    tmp = tempfile.mkdtemp(prefix="bench-trl-tmux-")
    session = "bench-trl-%d" % os.getpid()
    try:
        result = os.path.join(tmp, "result.json")
        cmd, _ = launch_cmd(pixelis, py, tmp, result, steps, tui=True)
        env = " ".join("%s=%s" % kv for kv in sorted(child_env().items()) if kv[0] in (
            "PYTHONPATH", "OMP_NUM_THREADS", "HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM", "PYTHONDONTWRITEBYTECODE"))
        ended = os.path.join(tmp, "ended")
        shell = "env %s %s; touch %s; sleep 60" % (env, " ".join("'%s'" % a for a in cmd), ended)
        t0 = time.time()
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "48", shell], check=True)
        deadline = t0 + 300
        while time.time() < deadline:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], stdout=subprocess.PIPE,
                                    text=True).stdout
            if SHOWN.search(screen):
                shown = time.time() - t0
                while not os.path.exists(ended) and time.time() < deadline and "● done" not in screen:
                    time.sleep(0.2)  # the run ends by itself; the console then waits for q
                    screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], stdout=subprocess.PIPE,
                                            text=True).stdout
                return shown
            time.sleep(0.02)
        raise SystemExit("no metric on the console's screen in 300 s:\n" + screen)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def report(runs, warmup):
    print("load average before each run: %s" % ", ".join(r["load"] for r in runs))
    print("lockstep on: %s" % all(r["lockstep"] for r in runs))
    shares = []
    for i, r in enumerate(runs):
        spans = [s for s in r["spans"] if s["step"] > warmup]
        share = [100 * (s["hooks"] + s["threads"]) / s["cpu"] for s in spans]
        shares.append(statistics.median(share))

        def us(key):
            return 1e6 * statistics.median(s[key] for s in spans)
        print("run %d: %d steps: callback CPU / step CPU median %.3f %% (p90 %.3f %%); step CPU median %.1f ms; "
              "callback median %.0f µs: hooks %.0f µs (on_log %.0f, on_step_end %.0f), SDK threads %.0f µs; "
              "on_step_end wall median %.0f µs" % (
                  i + 1, len(spans), statistics.median(share), pct(share, 0.9), us("cpu") / 1e3,
                  1e6 * statistics.median(s["hooks"] + s["threads"] for s in spans), us("hooks"), us("on_log"),
                  us("on_step_end"), us("threads"), us("boundary_wall")))
    print("callback CPU / step CPU, median of the runs' medians: %.3f %%" % statistics.median(shares))

    def med(f):
        return statistics.median(f(r) for r in runs)
    m = lambda a, b: med(lambda r: r["marks"][b] - (r["t0"] if a == "t0" else r["marks"][a]))  # noqa: E731
    print("from launch, median of %d runs (s):" % len(runs))
    print("  interpreter start %.2f, import torch %.2f, transformers %.2f, trl %.2f, model+trainer %.2f, "
          "connect %.2f, first step %.2f" % (
              m("t0", "start"), m("start", "torch"), m("torch", "transformers"), m("transformers", "trl"),
              m("trl", "trainer"), m("trainer", "connected"), m("connected", "first_step")))
    print("  first metric in metrics.jsonl (step 1): %.2f s (runs: %s)" % (
        med(lambda r: r["first_metric"] - r["t0"]), ", ".join("%.2f" % (r["first_metric"] - r["t0"]) for r in runs)))
    print("  first headless `step` line (step 10): %.2f s (runs: %s)" % (
        med(lambda r: r["first_line"] - r["t0"]), ", ".join("%.2f" % (r["first_line"] - r["t0"]) for r in runs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=55, help="GRPO steps a run (default 55)")
    ap.add_argument("--warmup", type=int, default=5, help="first steps left out of the CPU figures (default 5)")
    ap.add_argument("--pixelis", help="the pixelis binary (default: go build from this checkout)")
    ap.add_argument("--tmux", type=int, default=0, metavar="N", help="also time the console in tmux, N runs")
    ap.add_argument("--no-curriculum", action="store_true",
                    help="launch with --no-curriculum (no lockstep), for comparison")
    ap.add_argument("--child", metavar="RESULT", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.steps)
    tmp = tempfile.mkdtemp(prefix="bench-trl-bin-")
    try:
        pixelis = a.pixelis or build_pixelis(tmp)
        py = stack_python()
        runs = []
        for _ in range(a.runs):
            load = open("/proc/loadavg").read().split()[0]
            r = run_headless(pixelis, py, a.steps, not a.no_curriculum)
            r["load"] = load
            runs.append(r)
        report(runs, a.warmup)
        if a.tmux:
            times = []
            for _ in range(a.tmux):
                load = open("/proc/loadavg").read().split()[0]
                times.append(run_tmux(pixelis, py, a.steps))
                print("console (tmux): first metric on screen %.2f s (load %s)" % (times[-1], load))
            print("console (tmux): median %.2f s" % statistics.median(times))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
