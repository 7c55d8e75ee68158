#!/usr/bin/env python3
"""Measures a fork of a live run (docs/console.md, "Forks").

For each of ROUNDS parents: `pixelis rft` of the default config from the SFT
model given, headless; at RFT step AT, `pixelis fork` (what the console's b
sends); the latency is from sending the command to the time stamp of the
fork's first metrics line (its first step). The fork is then stopped, except
in the last round, where the parent's CPU seconds (/proc/PID/stat) and wall
seconds per step are measured over WINDOW steps with the fork training beside
it, after WINDOW steps alone. Prints one JSON object; every process it starts
is stopped before it ends.

  bench/fork_latency.py PIXELIS SFT_CHECKPOINT OUT_DIR [--rounds 5] [--at 150] [--window 20]

With --slowdown PAIRS it measures the parent's slowdown alone: one parent,
from RFT step AT, windows of WINDOW steps alone (A) and with a fork training
beside it (B) in turn, A B A B … A, PAIRS B windows. The machine's load drifts
(it is shared), so each B is set against the mean of the A windows either side
of it; the ratios' median, mean, standard deviation and range are printed with
every window's figures and the load average at its end.

  bench/fork_latency.py PIXELIS SFT_CHECKPOINT OUT_DIR --slowdown 6 --at 30 --window 40
"""

import argparse
import datetime
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def last_step(run):
    """The run-wide step of the run's newest metrics line, and its time stamp."""
    try:
        with open(os.path.join(run, "metrics.jsonl"), "rb") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return -1, None
    for line in reversed(lines):
        try:
            p = json.loads(line)
        except ValueError:
            continue
        if p.get("phase") == "rft":
            return p["step"], p["time"]
    return -1, None


def first_step_after(run, step):
    with open(os.path.join(run, "metrics.jsonl"), "rb") as f:
        for line in f:
            p = json.loads(line)
            if p["step"] > step:
                return p["time"]
    return None


def parse_time(s):
    # RFC 3339 with nanoseconds: Python's parser takes microseconds.
    s = re.sub(r"(\.\d{6})\d*", r"\1", s).replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(s).timestamp()


def wait(cond, limit, what):
    deadline = time.time() + limit
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise SystemExit("timed out waiting for " + what)


def control(run, cmd):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(os.path.join(run, "control.sock"))
        s.sendall((json.dumps(cmd) + "\n").encode())
        return s.recv(4096)
    except OSError:
        return None
    finally:
        s.close()


def live(run):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(os.path.join(run, "control.sock"))
        return True
    except OSError:
        return False
    finally:
        s.close()


def stop(run):
    control(run, {"kind": "stop", "no_checkpoint": True})
    wait(lambda: not live(run), 120, "the stop of " + run)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def pid_of(run):
    with open(os.path.join(run, ".lock")) as f:
        return int(f.read().split()[0])


def window(run, pid, steps):
    """CPU and wall seconds per step of the run over its next steps."""
    s0, _ = last_step(run)
    c0, w0 = cpu_seconds(pid), time.time()
    wait(lambda: last_step(run)[0] >= s0 + steps, 600, f"{steps} steps")
    s1, _ = last_step(run)
    c1, w1 = cpu_seconds(pid), time.time()
    return {"steps": s1 - s0, "cpu_s_per_step": (c1 - c0) / (s1 - s0), "wall_s_per_step": (w1 - w0) / (s1 - s0)}


def fork_now(pixelis, run):
    """Forks run and waits for the fork's first step: the fork's directory,
    step and the time stamp of its first metrics line."""
    out = subprocess.run([pixelis, "fork", run], capture_output=True, text=True, check=True).stdout
    m = re.search(r"forked → (\S+) at step (\d+)", out)
    fork, at = m.group(1), int(m.group(2))
    first = wait(lambda: os.path.exists(os.path.join(fork, "metrics.jsonl")) and first_step_after(fork, at), 600,
                 "the fork's first step")
    return fork, at, first


def slowdown(a):
    """A/B windows of one parent: alone, then with a fork beside it, in turn."""
    run = os.path.join(a.out, "parent")
    steps = a.at + (2 * a.slowdown + 2) * a.window + 100
    parent = subprocess.Popen([a.pixelis, "rft", "--config", "default", "--init", a.sft, "--run-dir", run, "--no-tui",
                               "--set", f"rft.steps={steps}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fork = None
    windows = []
    try:
        wait(lambda: last_step(run)[0] >= a.at, 1800, f"step {a.at}")
        pid = pid_of(run)
        for i in range(2 * a.slowdown + 1):
            if i % 2:
                fork, _, _ = fork_now(a.pixelis, run)
            w = window(run, pid, a.window)
            w["with_fork"] = bool(i % 2)
            w["load_average"] = os.getloadavg()
            windows.append(w)
            if fork:
                stop(fork)
                fork = None
    finally:
        if fork:
            stop(fork)
        if parent.poll() is None:
            stop(run)
        parent.wait()
    out = {"windows": windows, "load_average_range": [min(w["load_average"][0] for w in windows),
                                                      max(w["load_average"][0] for w in windows)]}
    for key in ("cpu_s_per_step", "wall_s_per_step"):
        ratios = [windows[i][key] / ((windows[i - 1][key] + windows[i + 1][key]) / 2) for i in range(1, len(windows), 2)]
        out[key.replace("_s_per_step", "_ratio")] = {
            "each": ratios, "median": statistics.median(ratios), "mean": statistics.mean(ratios),
            "sd": statistics.stdev(ratios) if len(ratios) > 1 else None, "range": [min(ratios), max(ratios)]}
    return out


def round_(a, i, measure_slowdown):
    run = os.path.join(a.out, f"p{i}")
    parent = subprocess.Popen([a.pixelis, "rft", "--config", "default", "--init", a.sft, "--run-dir", run, "--no-tui"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fork = None
    try:
        wait(lambda: last_step(run)[0] >= a.at, 1800, f"step {a.at}")
        t0 = time.time()
        fork, at, first = fork_now(a.pixelis, run)
        res = {"parent_step": at, "latency_s": parse_time(first) - t0}
        if measure_slowdown:
            stop(fork)
            fork = None
            pid = pid_of(run)
            res["alone"] = window(run, pid, a.window)
            fork, _, _ = fork_now(a.pixelis, run)
            res["with_fork"] = window(run, pid, a.window)
        return res
    finally:
        if fork:
            stop(fork)
        if parent.poll() is None:
            stop(run)
        parent.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pixelis")
    p.add_argument("sft")
    p.add_argument("out")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--at", type=int, default=150)
    p.add_argument("--window", type=int, default=20)
    p.add_argument("--slowdown", type=int, default=0, metavar="PAIRS")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.slowdown:
        print(json.dumps(slowdown(a), indent=2))
        return
    rounds = [round_(a, i, i == a.rounds - 1) for i in range(a.rounds)]
    lat = [r["latency_s"] for r in rounds]
    last = rounds[-1]
    print(json.dumps({"rounds": rounds, "latency_median_s": statistics.median(lat), "latency_range_s": [min(lat), max(lat)],
                      "cpu_slowdown": last["with_fork"]["cpu_s_per_step"] / last["alone"]["cpu_s_per_step"],
                      "wall_slowdown": last["with_fork"]["wall_s_per_step"] / last["alone"]["wall_s_per_step"],
                      "load_average": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
