"""SFT of a Qwen2.5-VL policy on the CoTA conversations of `pixelis data gen
--chat`: the loss on the assistant's turns only, by their CoTA role (imitate,
skip, avoid; pixelis_vlm.sft), under PixelisCallback. Docs: docs/trl-vlm.md.

    pixelis data gen --n 1000 --out cota.jsonl --chat data/train
    python examples/trl_vlm/sft.py --data data/train --tiny OUT          # the tiny model, built from the data
    python examples/trl_vlm/sft.py --data data/train --model DIR OUT     # a real checkpoint (a GPU box)
    python examples/trl_vlm/grpo_tools.py --data data/train --model OUT/model GRPO_OUT

The trained policy is saved to OUTPUT_DIR/model with its processor, the LoRA
adapters merged into it (`--lora-rank 0` trains every weight instead), for
grpo_tools.py --model to go on from.
"""

import argparse
import os
import sys

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from pixelis.trl import PixelisCallback  # noqa: E402
from pixelis_vlm import data, model, sft, tools  # noqa: E402


def arguments(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output_dir")
    ap.add_argument("--data", required=True, help="a directory of `pixelis data gen --chat` (its conversations)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a Qwen2.5-VL checkpoint: a directory or a hub name")
    src.add_argument("--tiny", action="store_true", help="build the tiny model from --data into OUTPUT_DIR/base")
    ap.add_argument("--image-pixels", type=int, default=model.IMAGE_PIXELS,
                    help="pixels an image is resized to (default %(default)s: 4 tokens a view)")
    ap.add_argument("--lora-rank", type=int, default=16, help="LoRA's rank; 0 trains every weight")
    ap.add_argument("--avoid-weight", type=float, default=sft.AVOID_WEIGHT,
                    help="the unlikelihood weight of an `avoid` turn (default %(default)s: sft.avoid_weight's)")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=4, help="conversations a step (per device)")
    ap.add_argument("--learning-rate", type=float, default=2e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resume", help="a checkpoint-N directory to go on from (pixelis resume passes it)")
    args = ap.parse_args(argv)
    if args.lora_rank < 0:
        ap.error("--lora-rank %d: must be 0 (every weight) or more" % args.lora_rank)
    if args.avoid_weight < 0:
        ap.error("--avoid-weight %g: must be 0 or more" % args.avoid_weight)
    if not os.path.isfile(os.path.join(args.data, data.CONVERSATIONS)):
        ap.error("--data %s: no %s in it (pixelis data gen --chat DIR writes it)" % (args.data, data.CONVERSATIONS))
    return args


def main(argv=None):
    args = arguments(argv)
    gpu = torch.cuda.is_available()
    convs = data.conversations(args.data)
    if args.tiny:
        model_dir = os.path.join(args.output_dir, "base")
        model.tiny(convs, tools.schemas(), model_dir, seed=args.seed)
    else:
        model_dir = args.model
    policy, proc = model.load(model_dir, dtype=torch.bfloat16 if gpu else torch.float32,
                              image_pixels=args.image_pixels)
    if args.lora_rank:
        policy = model.lora(policy, rank=args.lora_rank)
    cfg = transformers.TrainingArguments(args.output_dir, max_steps=args.steps, per_device_train_batch_size=args.batch,
                                         learning_rate=args.learning_rate, logging_steps=1, save_strategy="no",
                                         report_to="none", use_cpu=not gpu, bf16=gpu, seed=args.seed,
                                         remove_unused_columns=False, disable_tqdm=True)
    trainer = sft.Trainer(model=policy, args=cfg, train_dataset=convs,
                          data_collator=sft.Collator(proc, tools.schemas(), args.avoid_weight))
    trainer.add_callback(PixelisCallback(trainer))
    trainer.train(resume_from_checkpoint=args.resume)
    trainer.save_state()  # OUTPUT_DIR/trainer_state.json: the steps' logs (log_history)
    model.save(trainer.model, proc, os.path.join(args.output_dir, "model"))


if __name__ == "__main__":
    main()
