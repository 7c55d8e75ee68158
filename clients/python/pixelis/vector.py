"""VectorEnv: N episodes of `pixelis serve` with gymnasium's vector API.

One request per vector step (POST /v1/vectors/{id}/step) carries all N
actions and answers with all N next observations and masks, rewards and
endings; the observations arrive as raw little-endian arrays (the npy
encoding) when numpy is installed, as JSON numbers otherwise::

    from pixelis import VectorEnv

    env = VectorEnv("http://127.0.0.1:8765", num_envs=256)   # autoreset next_step
    obs, info = env.reset(seed=0)             # obs: float32 [256, W], the coarse view
    while training:
        logits = policy(obs)
        logits[~info["action_mask"]] = -inf   # the mask of every env's next step
        obs, reward, terminated, truncated, info = env.step(actions)

Semantics are gymnasium's (>= 1.0): reset(seed=, options=) -> (obs, info);
step(actions) -> (obs, reward, terminated, truncated, info); autoreset_mode
next_step (default: an env whose episode ended resets at the next step,
ignoring that step's action), same_step (it resets at once; the ended
episode's last observation is in info["final_obs"]) or disabled (an ended
env reports its ending once, then idles with reward 0 until reset() starts
new episodes). An env whose next action is ignored has a mask allowing
every action, so a policy masking its logits with -inf always has one.
info follows gymnasium's vector convention: every key k holds one entry per
env and "_k" masks the envs that have one, so gymnasium's vector wrappers
(RecordEpisodeStatistics, DictInfoToList, the normalisers, ...) run on it.
VectorEnv subclasses gymnasium.vector.VectorEnv when gymnasium imports and
needs nothing of it otherwise (docs/serve.md: the versions tested).

reward is the part of pixelis's reward known at a step: w_final * final +
penalty + cost (info["reward_terms"] has each). Coherence and curiosity
compare episodes with each other, so they exist only when a batch is scored
(Client.score with the episode ids of info["episode_id"] ... or the tasks
and actions).
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Sequence, cast

from . import spaces as _spaces
from .client import Client

try:
    import numpy as np
except ImportError:
    np = None

if _spaces.gymnasium is not None:
    from gymnasium.vector import VectorEnv as _Base

    try:
        from gymnasium.vector import AutoresetMode as _AutoresetMode
    except ImportError:  # gymnasium < 1.1 names the modes by string
        _AutoresetMode = None
else:
    _Base = object
    _AutoresetMode = None

# autoreset_mode -> (the server's name, gymnasium's AutoresetMode member name).
_MODES = {"next_step": ("next_step", "NEXT_STEP"), "same_step": ("same_step", "SAME_STEP"),
          "disabled": ("off", "DISABLED")}


def _gym_mode(mode):
    """What gymnasium's wrappers read in metadata["autoreset_mode"]: an
    AutoresetMode member from gymnasium 1.1 on (they reject anything else),
    the mode's name on 1.0 (whose wrappers assume next_step)."""
    return getattr(_AutoresetMode, _MODES[mode][1]) if _AutoresetMode else mode


class VectorEnv(_Base):
    """num_envs episodes of `pixelis serve`, stepped together.

    client: a Client or a base URL (token= then applies). Tasks: random
    ones of split (and family) from the vector's own streams, or the tasks
    given (dicts of split, index, seed, family), each played by group
    consecutive envs (a GRPO group: num_envs = len(tasks) * group; with
    tasks or group > 1 autoreset_mode must be "disabled"). Observations:
    coarse (the numbers pixelis's own policy reads, float32 [W]) and/or
    pixels (the view's RGB, uint8 [pixels, pixels, 3]); with both, obs is a
    dict {"coarse", "pixels"}.
    """

    def __init__(self, client: Client | str = "http://127.0.0.1:8765", num_envs: int | None = None, *,
                 tasks: Sequence[Mapping[str, Any]] | None = None, group: int = 1, split: str = "train",
                 family: str | None = None, autoreset_mode: str = "next_step", coarse: bool = True, pixels: int = 0,
                 encoding: str | None = None, token: str | None = None, seed: int | None = None) -> None:
        if not isinstance(client, Client):
            client = Client(client, token=token)
        if autoreset_mode not in _MODES:
            raise ValueError("autoreset_mode %r: want one of %s" % (autoreset_mode, ", ".join(_MODES)))
        if encoding is None:
            encoding = "npy" if np is not None else "json"
        if num_envs is None and tasks is None:
            raise ValueError("give num_envs or tasks")
        self.client = client
        self.autoreset = autoreset_mode
        self._coarse, self._pixels = bool(coarse), int(pixels or 0)
        self._create = {"n": num_envs, "tasks": tasks, "group": group, "split": None if tasks else split,
                        "family": None if tasks else family, "seed": seed, "autoreset": _MODES[autoreset_mode][0],
                        "observation": {"coarse": self._coarse, "pixels": self._pixels, "encoding": encoding}}
        self._id = None
        state = self._open()
        self.num_envs = state["n"]
        space = state["observation"]
        self.num_actions = space["action_mask"]["shape"][0]
        self.single_action_space = _spaces.discrete(self.num_actions)
        self.action_space = _spaces.multi_discrete([self.num_actions] * self.num_envs)
        single, batch = {}, {}
        if space.get("coarse"):
            w = space["coarse"]["shape"]
            single["coarse"] = _spaces.box(-float("inf"), float("inf"), w, "float32")
            batch["coarse"] = _spaces.box(-float("inf"), float("inf"), [self.num_envs] + w, "float32")
        if space.get("pixels"):
            p = space["pixels"]["shape"]
            single["pixels"] = _spaces.box(0, 255, p, "uint8")
            batch["pixels"] = _spaces.box(0, 255, [self.num_envs] + p, "uint8")
        if not single:
            raise ValueError("choose coarse and/or pixels observations")
        if len(single) == 1:
            (key,) = single
            self.single_observation_space, self.observation_space = single[key], batch[key]
        else:
            self.single_observation_space, self.observation_space = _spaces.dict_space(single), _spaces.dict_space(batch)
        self.reward_term_names = state["reward"]["terms"]
        self.metadata = {"autoreset_mode": _gym_mode(autoreset_mode)}
        self._state = state
        self.episode_ids = state["episodes"]
        self._ended = [False] * self.num_envs  # disabled: the envs whose ending was reported
        self.closed = False

    def _open(self):
        state = self.client.create_vector(**{k: v for k, v in self._create.items() if v is not None})
        self._id = state["vector"]
        return state

    @property
    def id(self) -> str | None:
        """The server's id of the vector (vec-…)."""
        return self._id

    # -- gymnasium's API ------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start new episodes in every env: options["tasks"] (each played by
        group envs), else the tasks the VectorEnv was made with, else random
        tasks (of options["split"] and ["family"] when given; their streams
        reseeded with seed when given). options["reset_mask"] (gymnasium's:
        one bool per env, whole groups) resets only those envs; the others
        keep their episodes. Returns (obs, info) with info["action_mask"],
        info["task"], info["episode_id"] and info["seed"], one entry per
        env, each with gymnasium's mask ("_task", ...: the envs reset)."""
        options = options or {}
        unknown = set(options) - {"tasks", "split", "family", "reset_mask"}
        if unknown:
            raise ValueError("reset options %s: want tasks, split, family or reset_mask" % sorted(unknown))
        tasks = options.get("tasks", self._create["tasks"])
        reset = options.get("reset_mask")
        reset = [True] * self.num_envs if reset is None else [bool(x) for x in reset]
        state = self.client.reset_vector(cast(str, self._id), tasks=tasks, split=options.get("split"),
                                         family=options.get("family"), seed=seed,
                                         slots=None if all(reset) else reset)
        self._state = state
        self.episode_ids = state["episodes"]
        self._ended = [e and not r for e, r in zip(self._ended, reset)]
        info = {"action_mask": _allow_all(state["action_mask"], self._idle_next({})),
                "task": self._per_env(state["tasks"]), "episode_id": self._per_env(state["episodes"]),
                "seed": self._per_env([state["seed"]] * self.num_envs)}
        mask = np.asarray(reset) if np is not None else reset
        for k in ("task", "episode_id", "seed"):
            info["_" + k] = mask
        return self._obs(state), _with_masks(info, self.num_envs)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Apply one action index per env (an array, a list, numpy scalars).
        Returns (obs, reward, terminated, truncated, info), info in
        gymnasium's vector convention (each key k one entry per env, and a
        bool mask "_k" of the envs that have it): info["action_mask"] every
        env's mask for its next step, info["reward_terms"] the terms of
        reward by name, info["finished"] the episode that ended in each env
        that ended (slot, task, steps, answered, correct, ground truth; None
        elsewhere: `info["finished"][info["_finished"]]` lists them), and
        with same_step info["final_obs"], the ended episodes' last observations.

        An episode's ending is reported once. An env whose next action is
        ignored has a mask allowing every action, so a masked policy always
        has one to draw: with next_step the step after an ending (it resets
        the env), with disabled every step of an ended env (it idles with
        reward 0, not ended again, until reset())."""
        ans = self.client.step_vector(cast(str, self._id), _action_list(actions, self.num_envs))
        terms = ans["reward_terms"]
        terminated, truncated = ans["terminated"], ans["truncated"]
        if self.autoreset == "disabled":
            terminated, truncated = self._first_endings(terminated, truncated)
        finished = {f["slot"]: f for f in ans["finished"]}
        mask = _allow_all(ans["action_mask"], self._idle_next(finished))
        info = {"action_mask": mask,
                "reward_terms": {n: self._column(terms, k) for k, n in enumerate(self.reward_term_names)}}
        info["finished"], info["_finished"] = self._sparse(finished)
        if self.autoreset == "same_step" and finished:
            self._final(ans, info)
        return self._obs(ans), ans["reward"], terminated, truncated, _with_masks(info, self.num_envs)

    def ended(self) -> Any:
        """Which envs' episodes have ended and wait for reset() (disabled
        mode; always none in the other modes, which reset by themselves)."""
        return np.asarray(self._ended) if np is not None else list(self._ended)

    def close(self, **kwargs: Any) -> None:
        if not self.closed and self._id is not None:
            try:
                self.client.close_vector(self._id)
            except Exception:  # the server may be gone or the vector expired: nothing is left to free
                pass
        self.closed = True

    # -- helpers --------------------------------------------------------------

    def _obs(self, ans):
        if self._coarse and self._pixels:
            return {"coarse": ans["obs"], "pixels": ans["pixels"]}
        return ans["obs"] if self._coarse else ans["pixels"]

    def _per_env(self, values):
        """One entry per env: an object array with numpy, else the list."""
        if np is None:
            return list(values)
        arr = np.empty(self.num_envs, dtype=object)
        arr[:] = list(values)
        return arr

    def _sparse(self, by_slot):
        """{slot: value} as gymnasium's (entries, mask): None where absent."""
        present = [i in by_slot for i in range(self.num_envs)]
        values = self._per_env([by_slot.get(i) for i in range(self.num_envs)])
        return values, (np.asarray(present) if np is not None else present)

    def _column(self, rows, k):
        return rows[:, k] if np is not None else [row[k] for row in rows]

    def _idle_next(self, finished):
        """The envs whose action at the next step is ignored."""
        if self.autoreset == "next_step":
            return set(finished)
        if self.autoreset == "disabled":
            return {i for i, e in enumerate(self._ended) if e}
        return set()

    def _first_endings(self, terminated, truncated):
        """disabled: the server repeats an ended env's ending at every step;
        gymnasium's wrappers count each ending as an episode, so report it once."""
        repeat = list(self._ended)
        self._ended = [e or bool(t) or bool(u) for e, t, u in zip(self._ended, terminated, truncated)]
        if np is not None:
            keep = ~np.asarray(repeat)
            return np.asarray(terminated) & keep, np.asarray(truncated) & keep
        return ([bool(t) and not r for t, r in zip(terminated, repeat)],
                [bool(u) and not r for u, r in zip(truncated, repeat)])

    def _final(self, ans, info):
        """gymnasium's same_step convention: final_obs per env, with a mask."""
        final = {}
        for k, f in enumerate(ans["finished"]):
            if self._coarse and self._pixels:
                final[f["slot"]] = {"coarse": ans["final_obs"][k], "pixels": ans["final_pixels"][k]}
            else:
                final[f["slot"]] = ans["final_obs"][k] if self._coarse else ans["final_pixels"][k]
        info["final_obs"], info["_final_obs"] = self._sparse(final)

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit the client may be half torn down
            pass


def _action_list(actions, n):
    """One int per env from an array, a list or tuple (of ints or numpy
    integers), or a single int or numpy scalar when n is 1."""
    if hasattr(actions, "tolist"):
        actions = actions.tolist()  # an array, or a numpy scalar (then an int)
    if isinstance(actions, int):
        actions = [actions]
    try:
        out = [int(a) for a in actions]
    except TypeError:
        raise ValueError("actions: want one action index per env (%d), got %r" % (n, actions)) from None
    if len(out) != n:
        raise ValueError("actions: want one action index per env (%d), got %d" % (n, len(out)))
    return out


def _allow_all(mask, slots):
    """The masks with the rows of slots allowing every action (the step after
    an ending resets those envs and ignores their actions)."""
    if not slots:
        return mask
    if np is not None:
        mask = np.array(mask, copy=True)
        mask[list(slots)] = True
        return mask
    return [[True] * len(row) if i in slots else row for i, row in enumerate(mask)]


def _with_masks(info, n):
    """gymnasium's vector info: each key k gets the bool mask "_k" of the envs
    that have it (all of them unless given), recursively in dicts."""
    out = dict(info)
    for k, v in info.items():
        if k.startswith("_"):
            continue
        if isinstance(v, dict):
            out[k] = _with_masks(v, n)
        if "_" + k not in out:
            out["_" + k] = np.ones(n, dtype=bool) if np is not None else [True] * n
    return out
