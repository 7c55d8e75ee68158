"""TRL's GRPOTrainer (grpo) or transformers' Trainer (sft) on the tiny model
with PixelisCallback, as a user's script runs under `pixelis launch`
(cmd/pixelis's TestLaunchTRLConsole and TestLaunchTRLConsoleSFT).

Usage: launch_trl.py grpo|sft OUTPUT_DIR [--resume CHECKPOINT]
"""

import argparse

import tiny
from pixelis.trl import PixelisCallback


# pixelis's reward curriculum weighs the components named final, coherence and
# curiosity (docs/launch-curriculum.md): two constant rewards so named make the
# weighted reward GRPOTrainer logs, final + w_coherence / 2, show the stage.
def final(prompts, completions, **kwargs):
    return [1.0] * len(completions)


def coherence(prompts, completions, **kwargs):
    return [0.5] * len(completions)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=("grpo", "sft"))
    ap.add_argument("output_dir")
    ap.add_argument("--resume", help="a checkpoint-N directory to resume from (pixelis resume passes it)")
    args = ap.parse_args()
    if args.kind == "grpo":
        trainer = tiny.grpo_trainer(args.output_dir, (final, coherence))
    else:
        trainer = tiny.sft_trainer(args.output_dir)
    trainer.add_callback(PixelisCallback(trainer))
    trainer.train(resume_from_checkpoint=args.resume)


if __name__ == "__main__":
    main()
