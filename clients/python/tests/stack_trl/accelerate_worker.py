"""TRL's GRPOTrainer with PixelisCallback as one of two processes under
`accelerate launch` (CPU, gloo), for the test: each rank writes to
OUT/rank<R>.json the reward_weights each step began with (as a list of
changes), the monotonic time each step ended at, and its last step.

Usage: accelerate launch --cpu --num_processes 2 accelerate_worker.py OUT
"""

import json
import os
import sys
import time

import torch.distributed as dist
import transformers

import tiny
from pixelis.trl import PixelisCallback


class Record(transformers.TrainerCallback):
    def __init__(self, trainer):
        self.trainer, self.changes, self.ends, self.distributed = trainer, [], [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self.distributed = dist.is_initialized() and dist.get_world_size()
        w = self.trainer.reward_weights.tolist()
        if not self.changes or self.changes[-1][1] != w:
            self.changes.append([state.global_step + 1, w])

    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append([state.global_step, time.monotonic()])


def main(out):
    tr = tiny.grpo_trainer(os.path.join(out, "run"))
    rec = Record(tr)
    tr.add_callback(rec)
    tr.add_callback(PixelisCallback(tr))
    tr.train()
    # The launcher's environment: the process group may be gone once train() returns.
    with open(os.path.join(out, "rank%s.json" % os.environ["RANK"]), "w") as f:
        json.dump({"changes": rec.changes, "ends": rec.ends, "last_step": tr.state.global_step,
                   "world_size": int(os.environ["WORLD_SIZE"]), "distributed": rec.distributed}, f)


if __name__ == "__main__":
    main(sys.argv[1])
