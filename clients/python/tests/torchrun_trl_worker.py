"""PixelisCallback under torchrun for the test: each of two ranks (gloo, CPU)
trains the stand-in GRPOTrainer (trainer_standin) with the callback, an
all_reduce a step keeping the ranks in step as a data-parallel Trainer does,
and writes to OUT/trl-rank<R>.json the reward_weights each step's scoring
used (as a list of changes), its checkpoints and its last step.

Usage: python -m torch.distributed.run --standalone --nproc_per_node 2 torchrun_trl_worker.py OUT
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist

import trainer_standin

trainer_standin.install()

from pixelis.trl import PixelisCallback  # noqa: E402


def accuracy(i):
    return float(i % 2)


def fmt(i):
    return 1.0


def length(i):
    return i / 10


class Collective(trainer_standin.TrainerCallback):
    """A data-parallel step's gradient all_reduce, and the rest of its work."""

    def on_step_begin(self, args, state, control, **kwargs):
        dist.all_reduce(torch.ones(16))
        time.sleep(0.005)


def main(out):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    args = trainer_standin.TrainingArguments(os.path.join(out, "rank%d" % rank), max_steps=100000,
                                             reward_weights=[1.0, 1.0, 0.5])
    tr = trainer_standin.GRPOTrainer([accuracy, fmt, length], args)
    tr.add_callback(Collective())
    tr.add_callback(PixelisCallback(tr))
    tr.train()
    changes, last = [], None
    for step in sorted(tr.weights_used):
        w = tr.weights_used[step].tolist()
        if w != last:
            changes.append([step, w])
            last = w
    with open(os.path.join(out, "trl-rank%d.json" % rank), "w") as f:
        json.dump({"changes": changes, "saved": [os.path.basename(p) for p in tr.saved],
                   "last_step": tr.state.global_step, "dtype": str(tr.reward_weights.dtype)}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
