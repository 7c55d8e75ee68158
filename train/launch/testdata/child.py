#!/usr/bin/env python3
"""A trainer speaking pixelis's launch channel (docs/launch-protocol.md) with
the standard library alone: the launched child of the launch tests.

It "trains" by counting steps, logs metrics under TRL's names and pixelis's,
saves checkpoints as small JSON files when asked, and honours pause, resume,
evaluate, stop and stage commands. Its success rate and rewards depend on
its reward weights and its seed only, so two runs with the same stages at the
same steps log the same numbers. Version 2 (the default): it applies a stage
from the first step at or after the command's from_step that it can (every
step, or with --apply-every K only at steps 1, K+1, 2K+1, …, as a trainer that
changes weights only at a generation batch), names that step in its ack, sends
each step's weights with its metrics and, under lockstep, waits for pixelis's
observed of each step before the next. --version 1 speaks version 1: a stage
applies when it is read. Flags make it misbehave the ways the tests need:
never read its commands, send garbage, speak another version, die.
"""
import argparse
import json
import os
import random
import select
import socket
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10**9)
    ap.add_argument("--step-time", type=float, default=0.02)
    ap.add_argument("--ckpt-dir", default=os.path.join(os.environ.get("PIXELIS_RUN_DIR", "."), "ckpts"),
                    help="where checkpoints go (default: ckpts in the run directory, so a fork's are its own)")
    ap.add_argument("--resume", help="checkpoint file to resume from")
    ap.add_argument("--deaf", action="store_true", help="never read commands")
    ap.add_argument("--garbage", action="store_true", help="send bad lines after hello")
    ap.add_argument("--version", type=int, default=2)
    ap.add_argument("--apply-every", type=int, default=1, help="apply a stage only at steps 1, K+1, 2K+1, …")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--send", help="a JSON list of extra metrics messages {step, metrics} to send after hello")
    ap.add_argument("--ack-without-step", action="store_true", help="acknowledge a stage without from_step")
    ap.add_argument("--sft-steps", type=int, default=0, help="steps 1..N are phase sft (a loss and accuracy only), then rft")
    ap.add_argument("--send-raw", help="a JSON list of lines to send as they are after hello")
    ap.add_argument("--bounds", help="a JSON object of declared bounds {name: [low, high]}")
    ap.add_argument("--editable", help="a JSON object of settings declared editable {name: [low, high]}, each "
                    "logged as hp/<name> with the value in force at each step (0 at first)")
    ap.add_argument("--hf-log-keys", action="store_true",
                    help="log as a Hugging Face Trainer's on_log names them (loss, not train/loss) and say so in hello")
    ap.add_argument("--fail-at", type=int, help="exit 3 at this step")
    ap.add_argument("--validate-every", type=int, default=0,
                    help="send a validation message every K steps: --val-tasks tasks, --val-attempts attempts and a "
                    "greedy one each, right with a chance that grows with the editable setting lr")
    ap.add_argument("--val-tasks", type=int, default=8)
    ap.add_argument("--val-attempts", type=int, default=4)
    ap.add_argument("--components", default="final,cost")
    ap.add_argument("--entropy-halflife", type=float,
                    help="log policy/entropy falling from 0.7, halved every N steps (a collapse for the alert detectors)")
    ap.add_argument("--heartbeat", type=float, default=1.0)
    ap.add_argument("--hang-at", type=int, help="at this step, go silent until killed")
    ap.add_argument("--reconnect-at", type=int, help="at this step, drop the channel and connect again")
    ap.add_argument("--no-done", action="store_true", help="exit 0 at the end without saying done")
    ap.add_argument("--hold", action="append", default=[], choices=["hello", "save"],
                    help="hold at this point (before hello, inside a save) until --hold-dir/POINT.release exists")
    ap.add_argument("--hold-dir", help="where --hold's POINT.reached and POINT.release files are")
    return ap.parse_args()


def hold(a, point):
    """At a held point: say so (POINT.reached) and wait to be released."""
    if point not in a.hold:
        return
    open(os.path.join(a.hold_dir, point + ".reached"), "w").close()
    print("held at %s" % point, file=sys.stderr, flush=True)
    while not os.path.exists(os.path.join(a.hold_dir, point + ".release")):
        time.sleep(0.02)


class Channel:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.early = []  # lines read with the welcome, after it: the next lines() returns them first

    def send(self, **msg):
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def send_raw(self, data):
        self.sock.sendall(data)

    def lines(self, timeout):
        """The complete lines readable within timeout seconds."""
        out, self.early = self.early, []
        r, _, _ = select.select([self.sock], [], [], timeout)
        if r:
            data = self.sock.recv(1 << 16)
            if not data:
                raise EOFError("channel closed")
            self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            out.append(json.loads(line))
        return out


def connect(path, a, components):
    """Connect, say hello, and return the channel and pixelis's answer."""
    ch = Channel(path)
    hello = dict(type="hello", version=a.version, pid=os.getpid(), rank=0, world_size=1,
                 components=components, reports=["episodes", "successes"],
                 config={"lr": 0.001, "steps": a.steps}, total_steps=a.steps if a.steps < 10**9 else 0)
    if a.bounds:
        hello["bounds"] = json.loads(a.bounds)
    if a.editable:
        hello["editable"] = json.loads(a.editable)
    if a.hf_log_keys:
        hello["log_keys"] = "hf_trainer"
    ch.send(**hello)
    welcome = None
    deadline = time.time() + 30
    while welcome is None and time.time() < deadline:
        for m in ch.lines(1.0):
            if welcome is not None:
                ch.early.append(m)  # a command sent right after the welcome (a fork's edits)
            elif m["type"] in ("welcome", "refused"):
                welcome = m
    if welcome is None or welcome["type"] == "refused":
        print("refused: %s" % (welcome or {}).get("reason"), file=sys.stderr, flush=True)
        sys.exit(2)
    return ch, welcome


class Stages:
    """The weights in use and the stages waiting for their step (version 2)."""

    def __init__(self, weights, a):
        self.weights, self.a, self.waiting = dict(weights), a, []

    def applies_from(self, next_step, from_step):
        """The first step at or after from_step (and next_step) this trainer can change weights at."""
        s = max(next_step, from_step if from_step is not None else next_step)
        while (s - 1) % self.a.apply_every:
            s += 1
        return s

    def take(self, next_step, c):
        """A stage command read before next_step: its weights now (version 1) or from their step."""
        if self.a.version < 2:
            self.weights = dict(c["args"]["weights"])
            return None
        at = self.applies_from(next_step, c.get("from_step"))
        self.waiting.append((at, dict(c["args"]["weights"])))
        return at

    def before(self, step):
        """Put in force what applies from step on."""
        for at, w in list(self.waiting):
            if at <= step:
                self.weights = w
                self.waiting.remove((at, w))


def hf_log_key(name):
    """name as a Hugging Face Trainer's on_log has it: train/loss is loss."""
    return name[len("train/"):] if name.startswith("train/") else name


def step_metrics(step, rng, weights, components):
    """One step's metrics: the success rate and raw rewards drawn from rng, moved by the weights;
    reward/total the weighted sum of the raw means."""
    episodes = 8
    p = min(0.9, 0.2 + step / 200 + 0.3 * weights.get("coherence", 0.0))
    successes = sum(rng.random() < p for _ in range(episodes))
    raw = {"final": successes / episodes, "coherence": rng.random() * (1 + weights.get("coherence", 0.0)),
           "curiosity": rng.random() * weights.get("curiosity", 0.0), "cost": -0.01 * (step % 10)}
    m = {"episodes": episodes, "successes": successes, "train/loss": 1.0 / step, "train/kl": None, "custom/thing": step * 2}
    total = 0.0
    for c in components:
        m["reward/%s/raw" % c] = raw.get(c, 0.0)
        total += weights.get(c, 1.0) * raw.get(c, 0.0)
    m["reward/total"] = total
    return m


def validation(a, step, lr):
    """A validation after step: whether each attempt of each task was right,
    drawn from a stream of the seed, step, task and attempt alone, so that a
    fork with no edit validates exactly as its parent; lr raises the chance."""
    results, greedy = {}, {}
    for t in range(a.val_tasks):
        task = "task-%03d" % t
        p = 0.1 + 0.08 * t + 0.3 * lr
        draws = [random.Random("%d/%d/%s/%d" % (a.seed, step, task, k)).random() for k in range(a.val_attempts + 1)]
        greedy[task] = draws[0] < p
        results[task] = [d < p for d in draws[1:]]
    return dict(type="validation", step=step, split="val", results=results, greedy=greedy)


def main():
    a = parse_args()
    components = [c for c in a.components.split(",") if c]
    path = os.environ.get("PIXELIS_CHANNEL")
    print("child starting, channel %s" % path, file=sys.stderr, flush=True)
    step = 0
    if a.resume:
        with open(a.resume) as f:
            step = json.load(f)["step"]
        print("resuming from %s at step %d" % (a.resume, step), file=sys.stderr, flush=True)
    hold(a, "hello")
    ch, welcome = connect(path, a, components)
    stages = Stages((welcome.get("stage") or {}).get("weights") or {c: 1.0 for c in components}, a)
    lockstep = bool(welcome.get("lockstep"))
    settings = {f: 0.0 for f in json.loads(a.editable or "{}")}  # each editable setting's value in force
    edits = []  # (step it applies from, field, value) acknowledged, not yet in force
    if a.garbage:
        ch.send_raw(b"this is not json\n")
        ch.send_raw(b"[1, 2, 3]\n")
        ch.send_raw(b'{"type": "nonsense"}\n')
        ch.send_raw(b'{"type": "metrics", "step": 0, "metrics": {"x": ' + b"1" * ((1 << 20) + 10) + b"}}\n")
    for m in json.loads(a.send or "[]") or []:
        ch.send(type="metrics", **m)
    for line in json.loads(a.send_raw or "[]"):
        ch.send_raw(line.encode() + b"\n")
    os.makedirs(a.ckpt_dir, exist_ok=True)
    rng = random.Random(a.seed * 100003 + step)
    paused = False
    last_beat = 0.0
    seen = step  # the newest step pixelis said it observed (lockstep)

    def save():
        p = os.path.join(a.ckpt_dir, "step_%06d.json" % step)
        with open(p, "w") as f:
            hold(a, "save")
            json.dump({"step": step, "weights": stages.weights}, f)
        ch.send(type="checkpoint", step=step, path=p)

    ch.send(type="phase", name="sft" if step < a.sft_steps else "rft", step=step)
    while step < a.steps:
        now = time.time()
        if now - last_beat >= a.heartbeat:
            ch.send(type="heartbeat", dropped=0)
            last_beat = now
        wait = 0.5 if paused or (lockstep and seen < step) else 0
        cmds = [] if a.deaf else ch.lines(wait)
        for c in cmds:
            if c["type"] == "observed":
                seen = max(seen, c["step"])
                continue
            if c["type"] != "command":
                continue
            kind = c["kind"]
            ack = dict(type="ack", id=c["id"], ok=True)
            if kind == "checkpoint":
                save()
            elif kind == "pause":
                paused = True
            elif kind == "resume":
                paused = False
            elif kind == "edit":
                at = max(step + 1, c.get("from_step") or 0)
                edits.append((at, c["args"]["field"], c["args"]["value"]))
                ack["from_step"] = at
            elif kind == "stage":
                at = stages.take(step + 1, c)
                if at is not None and not a.ack_without_step:
                    ack["from_step"] = at
            elif kind == "stop":
                if c["args"].get("checkpoint"):
                    save()
                ch.send(**ack)
                print("stopping on request at step %d" % step, file=sys.stderr, flush=True)
                return
            ch.send(**ack)
        if paused or (lockstep and seen < step and not a.deaf):
            continue
        step += 1
        stages.before(step)
        for at, field, value in [e for e in edits if e[0] <= step]:
            settings[field] = value
            edits.remove((at, field, value))
        if a.hang_at is not None and step >= a.hang_at:
            print("hanging at step %d" % step, file=sys.stderr, flush=True)
            time.sleep(3600)
        if a.reconnect_at is not None and step == a.reconnect_at:
            ch.sock.close()
            ch, _ = connect(path, a, components)
            seen = step - 1
        if a.fail_at is not None and step >= a.fail_at:
            print("Traceback (most recent call last):", file=sys.stderr)
            print("RuntimeError: the child failed at step %d" % step, file=sys.stderr, flush=True)
            sys.exit(3)
        if step == a.sft_steps + 1 and a.sft_steps:
            ch.send(type="phase", name="rft", step=step)
        if step <= a.sft_steps:
            msg = dict(type="metrics", step=step, metrics={"train/loss": 2.0 / step, "train/accuracy": step / (step + 1.0)})
        else:
            msg = dict(type="metrics", step=step, metrics=step_metrics(step, rng, stages.weights, components))
        if a.version >= 2:
            msg["weights"] = stages.weights
        for field, value in settings.items():
            msg["metrics"]["hp/" + field] = value
        if a.entropy_halflife:
            msg["metrics"]["policy/entropy"] = 0.7 * 0.5 ** (step / a.entropy_halflife)
        if a.hf_log_keys:
            msg["metrics"] = {hf_log_key(k): v for k, v in msg["metrics"].items()}
        ch.send(**msg)
        if a.validate_every and step % a.validate_every == 0:
            ch.send(**validation(a, step, settings.get("lr", 0.0)))
        if step % 5 == 0:
            ch.send(type="sample", step=step, sample={
                "question": "how many red squares?", "actions": ["ZOOM_IN(1, 2)", {"op": "ANSWER", "args": {"value": 3}}],
                "answer": 3, "ground_truth": 3, "correct": True, "reward": 0.9})
        if step % 50 == 0:
            print("step %d" % step, flush=True)
        time.sleep(a.step_time)
    if not a.no_done:
        ch.send(type="done")
    print("done at step %d" % step, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
