"""GRPO with the five pixel operations as tools: TRL's GRPOTrainer on a
Qwen2.5-VL policy with LoRA, one `pixelis serve` episode a rollout
(pixelis_vlm.tools.PixelWorld), rewarded by pixelis's reward components as
serve scores them, one reward function each (pixelis_vlm.rewards). Docs:
docs/trl-vlm.md.

    pixelis data gen --n 1000 --out cota.jsonl --chat data/train
    pixelis serve &
    python examples/trl_vlm/grpo_tools.py --data data/train --tiny OUT        # the tiny model, built from the data
    python examples/trl_vlm/grpo_tools.py --data data/train --model DIR OUT   # a real checkpoint (a GPU box)
    python examples/trl_vlm/grpo_tools.py --data data/train --model SFT_OUT/model OUT   # after sft.py
    pixelis launch --no-curriculum -- python examples/trl_vlm/grpo_tools.py …

`--model` takes a Qwen2.5-VL checkpoint (Qwen/Qwen2.5-VL-3B-Instruct, a
directory `--tiny` saved, or the model sft.py saved). The serve URL and token come from --serve and
PIXELIS_SERVE_TOKEN. A run that reaches --steps saves its policy, the LoRA
adapters merged, with its processor to OUTPUT_DIR/model (as sft.py does); the
checkpoints the console asks for (OUTPUT_DIR/checkpoint-N) are the adapters
alone, which PeftModel.from_pretrained loads onto --model and --resume goes on from.
"""

import argparse
import os
import sys

import torch
import trl

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pixelis  # noqa: E402
from pixelis.trl import PixelisCallback  # noqa: E402
from pixelis_vlm import console, data, figures, grpo, model, rewards, tools  # noqa: E402


def arguments(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output_dir")
    ap.add_argument("--data", required=True, help="a directory of `pixelis data gen --chat` (its tasks)")
    ap.add_argument("--serve", default="http://127.0.0.1:8765", help="pixelis serve's URL")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a Qwen2.5-VL checkpoint: a directory or a hub name")
    src.add_argument("--tiny", action="store_true", help="build the tiny model from --data into OUTPUT_DIR/base")
    ap.add_argument("--image-pixels", type=int, default=model.IMAGE_PIXELS,
                    help="pixels an image is resized to (default %(default)s: 4 tokens a view)")
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=4, help="rollouts a step (per device)")
    ap.add_argument("--generations", type=int, default=4, help="rollouts a task (GRPO's group)")
    ap.add_argument("--max-completion-length", type=int, default=tools.MAX_COMPLETION_LENGTH,
                    help="tokens of a rollout: the model's turns and the tools' answers (default %(default)s)")
    ap.add_argument("--temperature", type=float, default=1.0,
                    help="the rollouts' sampling temperature (default %(default)s, TRL's)")
    ap.add_argument("--learning-rate", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resume", help="a checkpoint-N directory to go on from (pixelis resume passes it)")
    ap.add_argument("--figures", action="store_true",
                    help="log each step's time, the callback's share of it and the peak GPU memory "
                         "(pixelis_vlm.figures: perf/*)")
    args = ap.parse_args(argv)
    if args.batch % args.generations:
        ap.error("--batch %d: must be a multiple of --generations %d" % (args.batch, args.generations))
    if not os.path.isfile(os.path.join(args.data, data.TASKS)):
        ap.error("--data %s: no %s in it (pixelis data gen --chat DIR writes it)" % (args.data, data.TASKS))
    return args


def main(argv=None):
    args = arguments(argv)
    gpu = torch.cuda.is_available()
    if args.tiny:
        model_dir = os.path.join(args.output_dir, "base")
        model.tiny(data.conversations(args.data), tools.schemas(), model_dir, seed=args.seed)
    else:
        model_dir = args.model
    policy, proc = model.load(model_dir, dtype=torch.bfloat16 if gpu else torch.float32,
                              image_pixels=args.image_pixels)
    client = pixelis.Client(args.serve, token=os.environ.get("PIXELIS_SERVE_TOKEN"))
    cfg = trl.GRPOConfig(args.output_dir, max_steps=args.steps, per_device_train_batch_size=args.batch,
                         num_generations=args.generations, max_completion_length=args.max_completion_length,
                         temperature=args.temperature, learning_rate=args.learning_rate, logging_steps=1,
                         save_strategy="no", report_to="none", use_cpu=not gpu, bf16=gpu, seed=args.seed)
    scores = rewards.Serve(client)
    trainer = grpo.GRPOTrainer(model=model.lora(policy, rank=args.lora_rank), processing_class=proc,
                               reward_funcs=scores.functions(), args=cfg, train_dataset=data.tasks(args.data),
                               environment_factory=lambda: tools.PixelWorld(client))
    scores.on_scored = rewards.counts(trainer)
    callback = PixelisCallback(trainer, reports=rewards.REPORTS)
    scores.on_rollouts = console.Samples(callback.run, trainer)  # the console's sample trajectories
    trainer.add_callback(figures.Timed(callback) if args.figures else callback)
    trainer.train(resume_from_checkpoint=args.resume)
    trainer.save_state()  # OUTPUT_DIR/trainer_state.json: the steps' logs (log_history)
    if trainer.state.global_step >= args.steps:  # finished, not stopped: the trained policy, as sft.py saves it
        model.save(trainer.model, proc, os.path.join(args.output_dir, "model"))


if __name__ == "__main__":
    main()
