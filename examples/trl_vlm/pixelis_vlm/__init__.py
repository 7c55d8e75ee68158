"""The seeds' system on TRL: a Qwen2.5-VL-architecture policy with LoRA whose
tools are pixelis's five pixel operations, trained on `pixelis data gen --chat`
conversations and `pixelis serve` episodes (docs/trl-vlm.md).

    data     the chat data, loaded with `datasets`
    model    the tiny Qwen2.5-VL, its tokenizer, processor and chat template; LoRA
    tools    PixelWorld, the environment GRPOTrainer's environment_factory makes
    grpo     GRPOTrainer with the one change tools on a VLM need at TRL 1.16
    sft      SFT's collator and loss: the assistant's turns, each by its CoTA role
    rewards  pixelis's reward components, scored by serve, as TRL reward functions
"""
