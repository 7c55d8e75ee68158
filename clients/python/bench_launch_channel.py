"""The launch channel's cost to the trainer (the child of `pixelis launch`).

A trainer steps 10 times a second, each step a fixed amount of CPU work
(~100 ms, calibrated), logging 50 metrics and calling step_boundary once a
step. Rounds alternate between the channel (pixelis.sdk connected to a
protocol peer in a process of its own, tests/launch_peer.py, which reads
every line as pixelis does) and no channel (the no-op Run outside launch),
the same loop otherwise. Reported per step, by CPU time (the process's, so
the SDK's threads and torch's count):

- cpu/step: the process's CPU time per step, channel and none;
- channel CPU/step: the process's CPU time outside the step's work() (so
  everything else a step costs: the SDK's calls and threads, the
  collectives and their threads), channel minus none — what the trainer
  pays; the mean over rounds of each round's difference (a round runs the
  modes one after the other, in alternating order), with its standard
  error: many short rounds cancel the busy machine's drift;
- cost: that over the step's CPU time;
- its parts that only the channel has: the training thread's CPU inside
  log() + step_boundary() (in-loop) and the SDK's writer and reader threads';
- in-loop wall time (median, 99th percentile, max): what the loop waits for.

    /usr/bin/python3 clients/python/bench_launch_channel.py --rounds 20 --steps 20

With --ranks 2 the same trainer runs as two processes under torchrun (gloo,
CPU). Each step ends in an all_reduce of 1 MiB of gradients, as a
data-parallel (DDP) step does, so the ranks are synchronised once a step
by it, with or without the channel; rank 0 holds the channel. Each rank
reports its own figures. --collective adds rounds in which step_boundary
is a collective (the SDK's way for ranks on several nodes) instead of the
command board.

    /usr/bin/python3 clients/python/bench_launch_channel.py --rounds 20 --steps 20 --ranks 2 --collective
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from pixelis import _board, _ranks, sdk  # noqa: E402

METRICS = 50


def work(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def calibrate(seconds):
    """Iterations of work() that take `seconds` of CPU time."""
    n = 100000
    while True:
        t = time.thread_time()
        work(n)
        dt = time.thread_time() - t
        if dt > 0.05:
            return int(n * seconds / dt)
        n *= 2


def all_reduce_step():
    """A data-parallel step's collective, when torch.distributed is initialised."""
    td = _ranks.dist()
    if td is not None:
        import torch
        td.all_reduce(torch.ones(1 << 18))


def sdk_threads_cpu():
    """CPU seconds of each of the SDK's own threads (writer and reader) so far, by thread."""
    out = {}
    for t in threading.enumerate():
        if t.name.startswith("pixelis-channel"):
            try:
                out[t.ident] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            except OSError:  # ended meanwhile
                pass
    return out


def one_round(run, steps, n):
    """steps steps; per step: the process's CPU, its CPU outside work(), the training
    thread's CPU in log + step_boundary, the SDK threads' CPU, and the wall time of each
    log + step_boundary."""
    names = ["metric/%02d" % i for i in range(METRICS - 2)]
    in_cpu, in_wall, work_cpu = 0.0, [], 0.0
    cpu0, sdk0 = time.process_time(), sdk_threads_cpu()
    for step in range(steps):
        w = time.thread_time()
        work(n)
        work_cpu += time.thread_time() - w
        all_reduce_step()
        metrics = {name: 0.001 * step + k for k, name in enumerate(names)}
        metrics["episodes"], metrics["successes"] = 64, 41
        t, c = time.perf_counter(), time.thread_time()
        run.log(step, metrics)
        run.step_boundary(step)
        in_cpu += time.thread_time() - c
        in_wall.append(time.perf_counter() - t)
    cpu = time.process_time() - cpu0
    return {"cpu": cpu / steps, "outside": (cpu - work_cpu) / steps, "in_loop": in_cpu / steps,
            "sdk_threads": sum(c - sdk0.get(t, 0.0) for t, c in sdk_threads_cpu().items()) / steps}, in_wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=20, help="steps per round (10 a second)")
    ap.add_argument("--step-seconds", type=float, default=0.1)
    ap.add_argument("--ranks", type=int, default=1, help="processes under torchrun (gloo, CPU)")
    ap.add_argument("--boundary-every", type=int, default=1, help="connect(boundary_every=): a collective every k steps")
    ap.add_argument("--collective", action="store_true",
                    help="with --ranks: also rounds whose step boundaries are collectives (no command board)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        n = calibrate(args.step_seconds)
        n = int(broadcast_int(n))  # the same work on both ranks
        measure(os.environ["PIXELIS_CHANNEL"], args, n, "rank %d " % dist.get_rank())
        dist.destroy_process_group()
        return
    tmp = tempfile.mkdtemp(prefix="pxl-bench-")
    path = os.path.join(tmp, "ch.sock")
    peer = subprocess.Popen([sys.executable, os.path.join(HERE, "tests", "launch_peer.py"), path],
                            stdout=subprocess.PIPE, text=True)
    try:
        peer.stdout.readline()  # "serving PATH": listening
        if args.ranks > 1:
            torchrun(path, args)
        else:
            measure(path, args, calibrate(args.step_seconds), "")
    finally:
        peer.kill()
        peer.wait()
        try:
            os.unlink(path)
            os.rmdir(tmp)
        except OSError:
            pass


def broadcast_int(v):
    import torch
    import torch.distributed as dist
    t = torch.tensor([v], dtype=torch.int64)
    dist.broadcast(t, 0)
    return t.item()


def torchrun(path, args):
    """This script's --worker on args.ranks processes under torchrun."""
    from torch.distributed.elastic.multiprocessing.api import Std
    flags = ["--redirects", "9:1", "--tee", "9:1"] if Std.from_str("0") is None else []  # see the README
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(args.ranks), *flags,
           os.path.abspath(__file__), "--worker", "--rounds", str(args.rounds), "--steps", str(args.steps),
           "--step-seconds", str(args.step_seconds), "--boundary-every", str(args.boundary_every),
           *(["--collective"] if args.collective else [])]
    env = dict(os.environ, PIXELIS_CHANNEL=path, OMP_NUM_THREADS="1")
    subprocess.run(cmd, env=env, check=True)


def connect(path, boundary_every, collective=False):
    """sdk.connect, tried again while the peer has not yet seen the last round's connection close.
    collective: no command board, so that under torch.distributed every step boundary is a
    collective (what the SDK falls back to when the ranks are on several nodes)."""
    create = _board.Board.create
    if collective:
        _board.Board.create = lambda *a: None
    try:
        for attempt in range(100):
            try:
                return sdk.connect(components=["final", "cost"], reports=["episodes", "successes"], channel=path,
                                   boundary_every=boundary_every)
            except sdk.Refused:
                time.sleep(0.1)
    finally:
        _board.Board.create = create
    raise RuntimeError("the peer kept refusing")


def measure(path, args, n, who):
    """Alternating rounds with the channel and without (the Run outside launch); prints the figures."""
    modes = ("channel", "none", "collective") if args.collective else ("channel", "none")
    rounds = {m: [] for m in modes}  # one_round's figures
    walls = {m: [] for m in modes}
    for r in range(args.rounds):
        for mode in (modes if r % 2 == 0 else modes[::-1]):
            run = connect("" if mode == "none" else path, args.boundary_every, collective=mode == "collective")
            fig, wall = one_round(run, args.steps, n)
            dropped = run.dropped
            run.close()
            rounds[mode].append(fig)
            walls[mode].extend(wall)
            print(who + "round %d %-10s cpu/step %.2f ms  outside work %.1f us  in-loop cpu %.1f us  "
                  "SDK threads %.1f us  dropped %d" % (r, mode, fig["cpu"] * 1e3, fig["outside"] * 1e6,
                                                       fig["in_loop"] * 1e6, fig["sdk_threads"] * 1e6, dropped))
    med = {m: {k: statistics.median(f[k] for f in rounds[m]) for k in rounds[m][0]} for m in modes}
    step_cpu = med["none"]["cpu"]
    summary = {
        "steps_per_round": args.steps, "rounds": args.rounds, "metrics_per_step": METRICS,
        "boundary_every": args.boundary_every,
        "cpu_per_step_ms": {m: round(med[m]["cpu"] * 1e3, 3) for m in modes},
        "outside_work_us": {m: round(med[m]["outside"] * 1e6, 1) for m in modes},
        "outside_work_range_us": {m: [round(min(f["outside"] for f in rounds[m]) * 1e6, 1),
                                      round(max(f["outside"] for f in rounds[m]) * 1e6, 1)] for m in modes},
    }
    for mode in modes[:1] + modes[2:]:
        # paired by round (the modes of a round ran one after the other): the machine's drift cancels
        diffs = [f["outside"] - g["outside"] for f, g in zip(rounds[mode], rounds["none"])]
        extra = statistics.mean(diffs)
        se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
        wall = sorted(walls[mode])
        key = "" if mode == "channel" else mode + "_"
        summary.update({
            key + "cost_pct": round(100 * extra / step_cpu, 3),
            key + "cost_pct_se": round(100 * se / step_cpu, 3),
            key + "channel_cpu_per_step_us": round(extra * 1e6, 1),
            key + "channel_cpu_per_step_us_median": round(statistics.median(diffs) * 1e6, 1),
            key + "in_loop_cpu_us": round(med[mode]["in_loop"] * 1e6, 1),
            key + "sdk_threads_cpu_us": round(med[mode]["sdk_threads"] * 1e6, 1),
            key + "in_loop_wall_us": {"median": round(statistics.median(wall) * 1e6, 1),
                                      "p99": round(wall[int(0.99 * (len(wall) - 1))] * 1e6, 1),
                                      "max": round(wall[-1] * 1e6, 1)},
        })
    print(who + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
