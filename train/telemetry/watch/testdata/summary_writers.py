"""Write TensorBoard event files with the two SummaryWriters users hold:
torch.utils.tensorboard's into OUT/torch and tensorboardX's into OUT/tensorboardx,
then OUT/written.json: for each directory, each scalar tag's [step, value] pairs
as the file holds them (a float32, or a float64 where torch's writer was asked
for double precision). torch's also writes the scalars plugin's tensor form
(new_style). Beside the scalars, summaries `pixelis watch` skips: a histogram,
a text and an image.

    python summary_writers.py OUT

Run by TestSummaryWritersRead (train/telemetry/watch) with the tensorboard
stack's interpreter (clients/python/locks/tensorboard.txt)."""

import json
import math
import os
import sys

import numpy as np
import tensorboardX
from torch.utils.tensorboard import SummaryWriter as TorchWriter

STEPS = range(1, 41)


def value(tag_index, step):
    return math.sin(0.37 * step + tag_index) * 10 ** (tag_index - 1)


def write(writer, tensor_forms=False):
    """Scalars of several shapes and the summaries that are not scalars."""
    written = {}

    def scalar(tag, v, step, **kw):
        writer.add_scalar(tag, v, step, **kw)
        kept = v if kw.get("double_precision") else float(np.float32(v))
        written.setdefault(tag, []).append([step, kept])

    for step in STEPS:
        scalar("train/loss", value(0, step), step)
        scalar("train/reward", value(1, step), step)
        if step % 5 == 0:  # a sparse tag: every fifth step
            scalar("eval/accuracy", value(2, step), step)
        if tensor_forms:  # the scalars plugin's rank-0 tensors, float and double
            scalar("train/lr_tensor", 1e-3 / step, step, new_style=True)
            scalar("train/kl_double", value(3, step) / 7, step, new_style=True, double_precision=True)
        if step % 10 == 0:
            writer.add_histogram("weights/histogram", np.linspace(-1, 1, 64) * step, step)
            writer.add_text("notes", "step %d: **markdown**" % step, step)
            writer.add_image("frames/image", np.full((3, 4, 4), step / 40.0, dtype=np.float32), step)
    writer.flush()
    writer.close()
    return written


def main(out):
    written = {}
    written["torch"] = write(TorchWriter(log_dir=os.path.join(out, "torch")), tensor_forms=True)
    written["tensorboardx"] = write(tensorboardX.SummaryWriter(logdir=os.path.join(out, "tensorboardx")))
    with open(os.path.join(out, "written.json"), "w") as f:
        json.dump(written, f)


if __name__ == "__main__":
    main(sys.argv[1])
