"""The plan `pixelis eval --serve -- CMD` hands the agent it evaluates.

pixelis starts a `pixelis serve` of its world, opens one episode an attempt
(each held-out task's greedy attempt and its sampled ones) and runs CMD with
the server's address, token and the plan's path in its environment. The agent
plays every episode of the plan to its end (its answer) and exits; pixelis
reads the episodes back from the server and scores them::

    from pixelis import evalplan

    plan = evalplan.load()                  # from PIXELIS_EVAL_PLAN
    for a in plan.attempts:
        ep = plan.client.episode(a.episode)  # already started on a.task_id
        ...                                  # step it; greedy, or sample at
                                             # a.temperature seeded with a.seed

An episode must be played once: not reset, not closed (pixelis reads it).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from .client import Client

__all__ = ["ENV_URL", "ENV_TOKEN", "ENV_PLAN", "Attempt", "Plan", "load"]

ENV_URL = "PIXELIS_SERVE_URL"
ENV_TOKEN = "PIXELIS_SERVE_TOKEN"
ENV_PLAN = "PIXELIS_EVAL_PLAN"


@dataclass
class Attempt:
    """One episode of the plan."""

    episode: str  # serve's episode id, started on the task
    task: int  # the task's place in the plan
    task_id: str
    split: str
    index: int
    greedy: bool  # the most likely action; else sample at temperature, seeded with seed
    temperature: float
    seed: int
    prompt: list[dict[str, Any]]  # the task's chat prompt (`pixelis data gen --chat`); its image is the first view


@dataclass
class Plan:
    split: str
    first: int  # the split's first task index
    tasks: int
    samples: int  # sampled attempts a task, beside the greedy one
    temperature: float
    attempts: list[Attempt]
    client: Client = field(repr=False)


def load(path: str | None = None) -> Plan:
    """The plan at path (default: $PIXELIS_EVAL_PLAN), with a client of its server."""
    path = path or os.environ.get(ENV_PLAN)
    if not path:
        raise RuntimeError("%s is not set: run this under `pixelis eval --serve -- CMD`" % ENV_PLAN)
    with open(path) as f:
        raw = json.load(f)
    client = Client(os.environ[ENV_URL], token=os.environ.get(ENV_TOKEN))
    return Plan(split=raw["split"], first=raw["from"], tasks=raw["tasks"], samples=raw["samples"],
                temperature=raw["temperature"], attempts=[Attempt(**a) for a in raw["attempts"]], client=client)
