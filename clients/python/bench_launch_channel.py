"""The launch channel's cost to the trainer (the child of `pixelis launch`).

A trainer steps 10 times a second, each step a fixed amount of CPU work
(~100 ms, calibrated), logging 50 metrics and calling step_boundary once a
step. Rounds alternate between the channel (pixelis.sdk connected to a
protocol peer in a process of its own, tests/launch_peer.py, which reads
every line as pixelis does) and no channel (the no-op Run outside launch),
the same loop otherwise. Reported per step, by CPU time (the process's, so
the writer and reader threads count):

- cpu/step: the process's CPU time per step, channel and none;
- channel CPU/step: the process's CPU time outside the step's work, channel
  minus none (the calls, the flusher and reader threads, thread switching);
- cost: that over the step's CPU time, the share of the step the channel takes;
- in-loop: the training thread's CPU time inside log() + step_boundary(),
  and its wall time (median, 99th percentile, max): what the loop waits for.

    /usr/bin/python3 clients/python/bench_launch_channel.py --rounds 4 --steps 100

With --ranks 2 the same trainer runs as two processes under torchrun (gloo,
CPU), each step ending in an all_reduce of 1 MiB of gradients as a
data-parallel step does; with the channel, step_boundary is a collective
(rank 0 broadcasts the commands). Each rank reports its own figures.

    /usr/bin/python3 clients/python/bench_launch_channel.py --rounds 4 --steps 100 --ranks 2
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from pixelis import sdk  # noqa: E402

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
    td = sdk._dist()
    if td is not None:
        import torch
        td.all_reduce(torch.ones(1 << 18))


def one_round(run, steps, n):
    names = ["metric/%02d" % i for i in range(METRICS - 2)]
    in_cpu, in_wall, work_cpu = 0.0, [], 0.0
    cpu0 = time.process_time()
    for step in range(steps):
        w = time.thread_time()
        work(n)
        all_reduce_step()
        work_cpu += time.thread_time() - w
        metrics = {name: 0.001 * step + k for k, name in enumerate(names)}
        metrics["episodes"], metrics["successes"] = 64, 41
        t, c = time.perf_counter(), time.thread_time()
        run.log(step, metrics)
        run.step_boundary(step)
        in_cpu += time.thread_time() - c
        in_wall.append(time.perf_counter() - t)
    cpu = (time.process_time() - cpu0) / steps
    return cpu, (time.process_time() - cpu0 - work_cpu) / steps, in_cpu / steps, in_wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100, help="steps per round (10 a second)")
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
    create = sdk._Board.create
    if collective:
        sdk._Board.create = lambda *a: None
    try:
        for attempt in range(100):
            try:
                return sdk.connect(components=["final", "cost"], reports=["episodes", "successes"], channel=path,
                                   boundary_every=boundary_every)
            except sdk.Refused:
                time.sleep(0.1)
    finally:
        sdk._Board.create = create
    raise RuntimeError("the peer kept refusing")


def measure(path, args, n, who):
    """Alternating rounds with the channel and without (the Run outside launch); prints the figures."""
    modes = ("channel", "none", "collective") if args.collective else ("channel", "none")
    res = {m: [] for m in modes}
    overhead = {m: [] for m in modes}  # the process's CPU time per step outside work()
    in_loop = {m: ([], []) for m in modes}
    for r in range(args.rounds):
        for mode in (modes if r % 2 == 0 else modes[::-1]):
            run = connect("" if mode == "none" else path, args.boundary_every, collective=mode == "collective")
            cpu, over, cpu_in, wall = one_round(run, args.steps, n)
            dropped = run.dropped
            run.close()
            res[mode].append(cpu)
            overhead[mode].append(over)
            in_loop[mode][0].append(cpu_in)
            in_loop[mode][1].extend(wall)
            print(who + "round %d %-7s cpu/step %.2f ms  outside work %.1f us  in-loop cpu %.1f us  dropped %d"
                  % (r, mode, cpu * 1e3, over * 1e6, cpu_in * 1e6, dropped))
    step_cpu = statistics.median(res["none"])
    summary = {
        "steps_per_round": args.steps, "rounds": args.rounds, "metrics_per_step": METRICS,
        "boundary_every": args.boundary_every,
        "cpu_per_step_ms": {k: round(statistics.median(v) * 1e3, 3) for k, v in res.items()},
        "outside_work_us": {k: round(statistics.median(v) * 1e6, 1) for k, v in overhead.items()},
    }
    for mode in modes[:1] + modes[2:]:
        extra = statistics.median(overhead[mode]) - statistics.median(overhead["none"])
        wall = sorted(in_loop[mode][1])
        key = "" if mode == "channel" else mode + "_"
        summary.update({
            key + "cost_pct": round(100 * extra / step_cpu, 3),
            key + "channel_cpu_per_step_us": round(extra * 1e6, 1),
            key + "in_loop_cpu_us": round(statistics.median(in_loop[mode][0]) * 1e6, 1),
            key + "in_loop_wall_us": {"median": round(statistics.median(wall) * 1e6, 1),
                                      "p99": round(wall[int(0.99 * (len(wall) - 1))] * 1e6, 1),
                                      "max": round(wall[-1] * 1e6, 1)},
        })
    print(who + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
