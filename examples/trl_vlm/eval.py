"""Evaluate a checkpoint of the example on pixelis's held-out tasks, under
`pixelis eval --serve`, which scores it with the statistics of pixelis's own
models (greedy, pass@1, pass@n, RaPR, each task's score). Docs:
docs/trl-vlm.md#evaluation.

    pixelis eval --serve --tasks 50 --samples 4 -- \\
        python examples/trl_vlm/eval.py --checkpoint sft/model > sft.json
    pixelis eval --serve --tasks 50 --samples 4 -- \\
        python examples/trl_vlm/eval.py --checkpoint grpo/model > grpo.json
    pixelis eval --paired sft.json grpo.json     # GRPO − SFT, task by task, ± its standard error

The plan (pixelis.evalplan) lists the episodes pixelis opened on its serve,
one an attempt; each is played by the model with the pixel operations as its
tools (pixelis_vlm.play): the greedy attempt greedily, a sampled one at the
plan's temperature from the attempt's seed. `--checkpoint` takes a model
directory (what sft.py saves, a Qwen2.5-VL checkpoint) or a PEFT adapter
directory (adapter_config.json names its base model).
"""

import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from pixelis import evalplan  # noqa: E402
from pixelis_vlm import model, play, tools  # noqa: E402


def arguments(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="a model directory or a PEFT adapter directory")
    ap.add_argument("--image-pixels", type=int, default=model.IMAGE_PIXELS,
                    help="pixels an image is resized to (default %(default)s: 4 tokens a view)")
    ap.add_argument("--max-completion-length", type=int, default=tools.MAX_COMPLETION_LENGTH,
                    help="tokens of a rollout after its prompt, the model's and the tools' (default %(default)s, as grpo_tools.py)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.checkpoint):
        ap.error("--checkpoint %s: not a directory" % args.checkpoint)
    return args


def load(checkpoint, dtype, image_pixels):
    """(model, processor) of a model directory, or of a PEFT adapter's base
    with the adapter merged in."""
    adapter = os.path.join(checkpoint, "adapter_config.json")
    if not os.path.exists(adapter):
        return model.load(checkpoint, dtype=dtype, image_pixels=image_pixels)
    from peft import PeftModel

    with open(adapter) as f:
        base = json.load(f)["base_model_name_or_path"]
    policy, proc = model.load(base, dtype=dtype, image_pixels=image_pixels)
    return PeftModel.from_pretrained(policy, checkpoint).merge_and_unload(), proc


def main(argv=None):
    args = arguments(argv)
    plan = evalplan.load()
    gpu = torch.cuda.is_available()
    policy, proc = load(args.checkpoint, torch.bfloat16 if gpu else torch.float32, args.image_pixels)
    policy.to("cuda" if gpu else "cpu").eval()
    world = tools.PixelWorld(plan.client)
    t0 = time.monotonic()
    for k, a in enumerate(plan.attempts):
        first = world._attach(a.episode)
        play.play(policy, proc, world, a.prompt, first, greedy=a.greedy, temperature=a.temperature, seed=a.seed,
                  max_completion_length=args.max_completion_length)
        print("%d/%d %s %s: %s, %s" % (k + 1, len(plan.attempts), a.task_id, "greedy" if a.greedy else "sampled",
                                       " ".join(op for op, _ in world.calls) or "no tool call",
                                       "right" if (world.finish or {}).get("correct") else "wrong"),
              file=sys.stderr, flush=True)
    print("%d attempts in %.1f s" % (len(plan.attempts), time.monotonic() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
