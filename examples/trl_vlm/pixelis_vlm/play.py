"""One episode played by the VLM outside a trainer: what `eval.py` does with
each attempt of `pixelis eval --serve`.

    messages = play(policy, proc, world, prompt, first_view, greedy=True)

The loop is GRPOTrainer's multi-turn tool use, on one conversation: render
the conversation with the tools (the processor's chat template), generate,
parse the completion with TRL's parser (`parse_response`), call the tools it
asks for on the episode (PixelWorld) and append their answers, images
included, until the model answers without a tool call; the answer ends the
episode. As in training, a rollout has max_completion_length tokens after its
prompt (the model's and the tools'); one that runs out, or that serve ends at
its step limit, answers nothing: wrong, as GRPO's reward scores it.
"""

import torch
from trl.chat_template_utils import parse_response

from . import data, tools


def play(policy, proc, world, prompt, first_view, greedy=True, temperature=1.0, seed=0,
         max_completion_length=tools.MAX_COMPLETION_LENGTH):
    """Play world's episode from prompt (the task's chat prompt, its image
    part being first_view) and return the conversation."""
    schemas = tools.schemas()
    messages = data.chat(prompt, [first_view])
    torch.manual_seed(seed)  # the attempt's own stream, whatever was played before it
    sampling = dict(do_sample=False) if greedy else dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
    start = None
    while world.finish is None:
        enc = proc.apply_chat_template(messages, tools=schemas, add_generation_prompt=True, tokenize=True,
                                       return_dict=True, return_tensors="pt").to(policy.device)
        n = enc["input_ids"].shape[1]
        start = n if start is None else start
        budget = max_completion_length - (n - start)
        if budget <= 0:
            break
        with torch.no_grad():
            out = policy.generate(**enc, max_new_tokens=budget, **sampling)
        reply = parse_response(proc.tokenizer, out[0, n:].tolist(), prefix=enc["input_ids"][0].tolist(), tools=schemas)
        reply["role"] = "assistant"
        messages.append(reply)
        if not reply.get("tool_calls"):
            world._answer(_text(reply.get("content")))
            return messages
        for call in reply["tool_calls"]:
            messages.append(_call(world, call))
    world._answer("")  # cut off: no answer
    return messages


def _call(world, call):
    """The tool message answering one tool call: the operation's result, or
    the error, as GRPOTrainer words it."""
    fn = call.get("function") or {}
    name = fn.get("name", "unknown")
    try:
        if call.get("type") != "function" or name not in tools.OPERATIONS:
            raise ValueError("Tool %s not found." % name)
        content = getattr(world, name)(**(fn.get("arguments") or {}))
    except Exception as e:  # a malformed call: the model reads why, as in training
        content = str({"error": str(e)})
    return {"role": "tool", "name": name, "content": content if isinstance(content, list) else str(content)}


def _text(content):
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""
