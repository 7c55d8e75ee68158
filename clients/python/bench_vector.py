"""Environment steps per second from one Python process through the vector
endpoints of `pixelis serve`, against pixelis's own in-process rollout of the
same policy, measured alternately in one run.

    /usr/bin/python3 clients/python/bench_vector.py [--rounds 3] [--seconds 8]

Both sides run 256 environments of the embedded default world with a
uniformly random policy over the actions the mask allows, every ended episode
starting a new random training task at once (same_step auto-reset):

  - in process: BenchmarkRandomPolicyInProcess of train/serve (the rollout
    loop of train/rollout.go with the random policy: observe, mask, choose,
    step, on GOMAXPROCS workers), from a `go test -c` binary;
  - Python: pixelis.VectorEnv against `pixelis serve` started with its
    defaults on this machine, the coarse view in the npy encoding, numpy
    choosing the actions; then the same with the view's pixels at 64 px
    instead of the coarse view.

Reported per round: env steps per second (wall) and per CPU-second (the
Python process and the server together, or the in-process benchmark), the
server's CPU per environment per vector step, the client's CPU and its
decoding time per vector step. Figures go to docs/benchmarks.md.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)  # the package from this tree, installed or not

import numpy as np  # noqa: E402

from pixelis import Client, VectorEnv  # noqa: E402

ENVS = 256
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """User + system CPU seconds of a process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def build(tmp):
    pixelis = os.environ.get("PIXELIS_BIN") or os.path.join(tmp, "pixelis")
    if not os.environ.get("PIXELIS_BIN"):
        subprocess.run(["go", "build", "-o", pixelis, "./cmd/pixelis"], cwd=REPO, check=True)
    test = os.path.join(tmp, "serve.test")
    subprocess.run(["go", "test", "-c", "-o", test, "./train/serve"], cwd=REPO, check=True)
    return pixelis, test


def start_server(pixelis):
    proc = subprocess.Popen([pixelis, "serve", "--addr", "127.0.0.1:0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"listening on (http://\S+)", proc.stdout.readline())
    if not m:
        proc.kill()
        raise RuntimeError("pixelis serve did not start")
    return proc, m.group(1)


def in_process(test, seconds, steps_per_s_guess):
    """One run of the in-process benchmark lasting about `seconds`."""
    n = max(20, int(seconds * steps_per_s_guess / ENVS))
    out = subprocess.run([test, "-test.run", "^$", "-test.bench", "^BenchmarkRandomPolicyInProcess$",
                          "-test.benchtime", "%dx" % n], capture_output=True, text=True, check=True).stdout
    m = re.search(r"([\d.]+) steps/cpu-s\s+([\d.]+) steps/s", out)
    if not m:
        raise RuntimeError("no figures in the benchmark's output:\n" + out)
    return {"steps/s": float(m.group(2)), "steps/cpu-s": float(m.group(1))}


def through_vector(client, server_pid, seconds, **obs):
    """The random masked policy through VectorEnv for about `seconds`."""
    env = VectorEnv(client, ENVS, autoreset_mode="same_step", seed=7, **obs)
    rng = np.random.default_rng(7)
    _, info = env.reset(seed=7)
    for _ in range(5):  # warm up: connection, buffers
        u = rng.random(info["action_mask"].shape)
        u[~info["action_mask"]] = -1
        _, _, _, _, info = env.step(u.argmax(1))
    client.decode_seconds = 0.0
    steps, w0, c0, s0 = 0, time.monotonic(), time.process_time(), proc_cpu(server_pid)
    while time.monotonic() - w0 < seconds:
        mask = info["action_mask"]
        u = rng.random(mask.shape)
        u[~mask] = -1
        _, _, _, _, info = env.step(u.argmax(1))
        steps += 1
    wall, client_cpu, server_cpu = time.monotonic() - w0, time.process_time() - c0, proc_cpu(server_pid) - s0
    env.close()
    n = steps * ENVS
    return {"steps/s": n / wall, "steps/cpu-s": n / (client_cpu + server_cpu),
            "server cpu-µs/env/step": server_cpu / n * 1e6, "client cpu-ms/step": client_cpu / steps * 1e3,
            "client decode-ms/step": client.decode_seconds / steps * 1e3}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pixelis, test = build(tmp)
        proc, url = start_server(pixelis)
        try:
            client = Client(url)
            rows = {"in process": [], "vector, coarse npy": [], "vector, pixels 64": []}
            guess = 5000.0
            for r in range(args.rounds):
                a = in_process(test, args.seconds, guess)
                guess = a["steps/s"]
                rows["in process"].append(a)
                rows["vector, coarse npy"].append(through_vector(client, proc.pid, args.seconds))
                rows["vector, pixels 64"].append(through_vector(client, proc.pid, args.seconds, coarse=False, pixels=64))
                for name, rs in rows.items():
                    print("round %d %-20s %s" % (r + 1, name, "  ".join("%s %.4g" % kv for kv in rs[-1].items())), flush=True)
            print()
            base = rows["in process"]
            for name in ("vector, coarse npy", "vector, pixels 64"):
                wall = [v["steps/s"] / b["steps/s"] for v, b in zip(rows[name], base)]
                cpu = [v["steps/cpu-s"] / b["steps/cpu-s"] for v, b in zip(rows[name], base)]
                print("%-20s / in process: steps/s %.0f %% (rounds %s), steps/cpu-s %.0f %% (rounds %s)" % (
                    name, 100 * statistics.median(wall), " ".join("%.0f" % (100 * x) for x in wall),
                    100 * statistics.median(cpu), " ".join("%.0f" % (100 * x) for x in cpu)))
            client.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
