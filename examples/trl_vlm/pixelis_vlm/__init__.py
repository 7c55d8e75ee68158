"""The seeds' system on TRL: a Qwen2.5-VL-architecture policy with LoRA whose
tools are pixelis's five pixel operations, trained on `pixelis data gen --chat`
conversations and `pixelis serve` episodes (docs/trl-vlm.md).

    data   the chat data, loaded with `datasets`
    model  the tiny Qwen2.5-VL, its tokenizer, processor and chat template; LoRA
    tools  PixelWorld, the environment GRPOTrainer's environment_factory makes
"""
