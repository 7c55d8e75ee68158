"""pixelis's reward, scored by `pixelis serve`, as TRL reward functions: one a
component (final, coherence, curiosity, penalty, cost), so that GRPOTrainer
logs each (`rewards/<name>/mean`) and its `reward_weights` weigh them.

    scores = rewards.Serve(client)
    trainer = GRPOTrainer(..., reward_funcs=scores.functions(),
                          environment_factory=lambda: PixelWorld(client))

GRPOTrainer calls the functions one after another on the same rollouts. The
first answers each rollout's episode with its last message (PixelWorld) and
scores the batch with one scorer of serve (POST /v1/scorers/{id}/score): one
reward orchestrator for the run, as a pixelis run keeps one, so that the ICM
curiosity trains on every batch it scores and RaPR compares the rollouts of a
task (serve groups them by task). The others read the same answer. Each
function returns its component's raw value: GRPOTrainer normalises the
weighted sum within the group itself, and serve's formula adds the penalty and
the cost unweighted, which their weight of 1 does (the reward curriculum
weighs final, coherence and curiosity only).

`counts(trainer)` makes each scored batch's episodes and right answers metrics
of the step TRL logs (`episodes`, `successes`): the reports pixelis's KPI
curriculum reads its success rate from (docs/launch-curriculum.md); and what
reached serve: the rollouts that called a tool (`tools/rollouts_calling`) and
the calls of each operation (`tools/calls/<OP>`).
"""

from pixelis.client import PixelisError

from . import tools

# serve's answer for a scorer it no longer holds: closed, or idle past its
# --idle-timeout (a run paused from the console for longer, say).
GONE = 404


class Serve:
    """One serve scorer; its components as reward functions."""

    def __init__(self, client):
        self.client = client
        self.scorer = client.create_scorer()
        self.names = list(self.scorer.state["names"])  # the orchestrator's components, in its order
        self.on_scored = None  # called with serve's items of each batch scored and its PixelWorlds
        # called with each batch's completions, environments, serve's items and
        # the reward functions' other arguments (console.Samples sends one)
        self.on_rollouts = None
        self._episodes = None  # the episodes of the batch last scored
        self._items = None     # serve's items for them

    def functions(self):
        """One reward function a component, named as the component."""
        return [self._function(name) for name in self.names]

    def _function(self, name):
        def component(completions, environments, **kwargs):
            return [item["raw"][name] for item in self.score(completions, environments, kwargs)]

        component.__name__ = component.__qualname__ = name
        return component

    def score(self, completions, environments, kwargs=None):
        """serve's scored items of the rollouts, in order: the episodes are
        answered and scored once a batch, whichever function asks first.
        kwargs are the rest of what GRPOTrainer gives a reward function (the
        prompts, the dataset's columns, the trainer's state): on_rollouts
        receives them with the batch."""
        episodes = [w.episode for w in environments]
        if episodes != self._episodes:
            for completion, world in zip(completions, environments):
                world._answer(answer_text(completion))
            self._items = self._score([{"episode": e} for e in episodes])
            self._episodes = episodes
            if self.on_scored is not None:
                self.on_scored(self._items, environments)
            if self.on_rollouts is not None:
                self.on_rollouts(completions, environments, self._items, kwargs or {})
        return self._items

    def _score(self, items):
        """serve's items of one batch on the scorer; a scorer serve no
        longer holds is replaced by a new one, whose curiosity model starts
        untrained (serve kept no state of the old one)."""
        try:
            return self.scorer.score(items)["items"]
        except PixelisError as e:
            if e.status != GONE:
                raise
        self.scorer = self.client.create_scorer()
        return self.scorer.score(items)["items"]


# What counts() adds to the logs of a step: the launch channel's reports.
REPORTS = ("episodes", "successes")
# What else counts() logs, from serve's record of each rollout's episode (its
# trajectory), not from what the model wrote: the rollouts whose model called
# at least one tool (a well-formed call, parsed by TRL, of a tool that exists,
# that stepped their serve episode), and each operation's steps, so that a run
# shows which of the tools it uses.
ROLLOUTS_CALLING = "tools/rollouts_calling"
CALLS = "tools/calls/"  # + the operation's name


def counts(trainer):
    """An on_scored for trainer (a GRPOTrainer): the batch's episodes, right
    answers and tool calls go into the metrics TRL logs for the step, as its
    own metrics do, so that they are in trainer_state.json's log_history too.
    With one generation batch a step (gradient_accumulation_steps and
    steps_per_generation 1, the scripts' default) a step's value is its batch's."""
    def record(items, worlds):
        metrics = trainer._metrics["train" if trainer.model.training else "eval"]
        metrics["episodes"].append(float(len(items)))
        metrics["successes"].append(float(sum(1 for it in items if it["correct"])))
        served = [w._served() for w in worlds]
        metrics[ROLLOUTS_CALLING].append(float(sum(1 for ops in served if ops)))
        for op in tools.OPERATIONS:
            metrics[CALLS + op].append(float(sum(ops.count(op) for ops in served)))
    return record


def answer_text(completion):
    """The rollout's answer: the text of its last message when that is the
    model's turn without a tool call, else "" (the rollout was cut off before
    it answered, which scores as a wrong answer)."""
    last = completion[-1] if completion else {}
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return ""
    content = last.get("content") or ""
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text") or "" for p in content if p.get("type") == "text")
    return content
