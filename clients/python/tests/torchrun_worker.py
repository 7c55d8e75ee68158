"""A data-parallel trainer for the torchrun test: two ranks (gloo, CPU) take a
collective step (all_reduce of their gradients) and meet at step_boundary;
checkpoints are collective saves of both ranks; each rank writes what
step_boundary gave it, with the stage it saw, to OUT/rank<R>.json when it
stops. Under `pixelis launch` the channel is rank 0's.

Usage: python -m torch.distributed.run --standalone --nproc_per_node 2 torchrun_worker.py OUT
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist

from pixelis import sdk

MAX_STEPS = 100000  # a trainer that is never stopped ends here, and the test fails


def main(out):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    run = sdk.connect(components=["final", "cost"], reports=["episodes", "successes"],
                      config={"world_size": dist.get_world_size()}, default_weights={"final": 1.0})
    events = []
    w = torch.zeros(8)
    for step in range(MAX_STEPS):
        g = torch.full((8,), float(rank + 1)) * run.stage.weights.get("final", 0.0)
        dist.all_reduce(g)                  # the collective part of a training step
        w -= 0.01 * g / dist.get_world_size()
        time.sleep(0.005)                   # the rest of a step's work
        if rank == 0:
            run.log(step, {"loss": float(w.sum()), "episodes": 8, "successes": 4})
        for c in run.step_boundary(step):
            events.append({"step": step, "kind": c.kind, "args": c.args, "stage": run.stage.weights})
            if c.kind == "checkpoint" or (c.kind == "stop" and c.args.get("checkpoint")):
                path = os.path.join(out, "ckpt-step%d-rank%d.pt" % (step, rank))
                torch.save(w, path)         # every rank saves its shard
                dist.barrier()              # the save is done on all ranks before it is announced
                run.checkpoint_saved(path, step)
                events[-1]["saved"] = path
            if c.kind == "stop":
                c.ack()
                with open(os.path.join(out, "rank%d.json" % rank), "w") as f:
                    json.dump({"rank": rank, "events": events, "last_step": step}, f)
                run.close()
                dist.destroy_process_group()
                return 0
            c.ack()
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
