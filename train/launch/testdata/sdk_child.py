#!/usr/bin/env python3
"""A trainer using the launch SDK (clients/python/pixelis/sdk.py, on
PYTHONPATH) with its plain training loop: the launched child of the tests of
what happens to a trainer when its pixelis dies.

It counts steps, saves checkpoints as small JSON files (atomically: written
aside, then renamed), and resumes from one with --resume.
"""
import argparse
import json
import os
import sys
import time

from pixelis import sdk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10**9)
    ap.add_argument("--step-time", type=float, default=0.02)
    ap.add_argument("--ckpt-dir", default="ckpts")
    ap.add_argument("--resume", help="checkpoint file to resume from")
    ap.add_argument("--hold-save", help="a directory: every save is held until save.release exists in it (save.reached says it is held)")
    a = ap.parse_args()
    start = 0
    if a.resume:
        with open(a.resume) as f:
            saved = json.load(f)["step"]
        print("resuming from %s at step %d" % (a.resume, saved), file=sys.stderr, flush=True)
        start = saved + 1  # the checkpoint is of a finished step
    os.makedirs(a.ckpt_dir, exist_ok=True)

    def train_step(step, stage):
        time.sleep(a.step_time)
        return {"episodes": 8, "successes": 4, "reward/final/raw": 0.5, "train/loss": 1.0 / (step + 1)}

    def save(step):
        p = os.path.join(a.ckpt_dir, "step_%06d.json" % step)
        if a.hold_save:
            open(os.path.join(a.hold_save, "save.reached"), "w").close()
            while not os.path.exists(os.path.join(a.hold_save, "save.release")):
                time.sleep(0.02)
        with open(p + ".tmp", "w") as f:
            json.dump({"step": step}, f)
        os.replace(p + ".tmp", p)
        return p

    with sdk.connect(components=["final"], reports=["episodes", "successes"], config={"steps": a.steps}) as run:
        how = sdk.training_loop(run, train_step, a.steps, save=save, start=start)
    print("%s at step %s" % (how, a.steps), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
