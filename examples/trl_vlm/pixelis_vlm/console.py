"""GRPO's rollouts as sample trajectories in pixelis's console: the tool
calls the model made, what serve answered, and the images — the task's view
and the views the tools returned — which the console draws.

    scores.on_rollouts = console.Samples(callback.run, trainer)

rewards.Serve calls it with each scored batch; it sends the batch's first
rollout on the launch channel (`pixelis.sdk` Run.sample, a no-op outside
`pixelis launch`), at the step being trained.
"""

import base64
import io


def png64(image):
    """A PIL image as a PNG in standard base64, as the channel carries images."""
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _text(content):
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content or ""


def _images(content):
    if isinstance(content, list):
        return [p["image"] for p in content if isinstance(p, dict) and p.get("type") == "image" and p.get("image")]
    return []


def sample(prompt, first_view, completion, item, finish, family=""):
    """The channel's sample of one rollout: prompt (its messages), the task's
    view, the completion (the model's turns and the tools' answers), serve's
    scored item, the episode's finish and the task's family."""
    question = next((_text(m["content"]) for m in prompt if m.get("role") == "user"), "")
    actions, images = [], [png64(first_view)] if first_view is not None else []
    answer = ""
    for m in completion:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                fn = call.get("function") or {}
                actions.append({"op": fn.get("name", "?"), "args": fn.get("arguments") or {}})
        elif m.get("role") == "tool":
            if actions:
                actions[-1]["result"] = _text(m.get("content"))
            images += [png64(im) for im in _images(m.get("content"))]
        elif m.get("role") == "assistant":
            answer = _text(m.get("content"))
            actions.append({"op": "ANSWER", "args": {"answer": answer}})
    for a, rewards in zip(actions, item.get("per_step") or []):
        a["rewards"] = rewards
    return {"question": question, "family": family or "", "actions": actions, "answer": answer,
            "ground_truth": (finish or {}).get("ground_truth", ""), "correct": bool(item.get("correct")),
            "reward": float(item.get("total", 0.0)), "images": images}


class Samples:
    """An on_rollouts of rewards.Serve sending each batch's first rollout to
    the console through run (a pixelis.sdk Run)."""

    def __init__(self, run, trainer):
        self.run = run
        self.trainer = trainer
        self.sent = 0

    def __call__(self, completions, environments, items, kwargs):
        if not completions:
            return
        prompts = kwargs.get("prompts") or [[]]
        views = kwargs.get("images") or [[]]
        first = views[0][0] if views[0] else None
        finish = getattr(environments[0], "finish", None)
        step = self.trainer.state.global_step + 1  # the step these rollouts train
        family = (kwargs.get("task_type") or [""])[0]
        self.run.sample(step, sample(prompts[0], first, completions[0], items[0], finish, family))
        self.sent += 1
