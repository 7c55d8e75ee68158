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
env stays ended, ignores its actions and repeats its ending with reward 0
until reset() starts new episodes in every env).
VectorEnv subclasses gymnasium.vector.VectorEnv when gymnasium imports and
needs nothing of it otherwise.

reward is the part of pixelis's reward known at a step: w_final * final +
penalty + cost (info["reward_terms"] has each). Coherence and curiosity
compare episodes with each other, so they exist only when a batch is scored
(Client.score with the episode ids of info["episode_id"] ... or the tasks
and actions).
"""

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

_MODES = {"next_step": "next_step", "same_step": "same_step", "disabled": "off"}


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

    def __init__(self, client="http://127.0.0.1:8765", num_envs=None, *, tasks=None, group=1, split="train",
                 family=None, autoreset_mode="next_step", coarse=True, pixels=0, encoding=None, token=None,
                 seed=None):
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
                        "family": None if tasks else family, "seed": seed, "autoreset": _MODES[autoreset_mode],
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
        self.metadata = {"autoreset_mode": _AutoresetMode(autoreset_mode) if _AutoresetMode else autoreset_mode}
        self._state = state
        self.episode_ids = state["episodes"]
        self.closed = False

    def _open(self):
        state = self.client.create_vector(**{k: v for k, v in self._create.items() if v is not None})
        self._id = state["vector"]
        return state

    @property
    def id(self):
        """The server's id of the vector (vec-…)."""
        return self._id

    # -- gymnasium's API ------------------------------------------------------

    def reset(self, *, seed=None, options=None):
        """Start new episodes in every env: options["tasks"] (each played by
        group envs), else the tasks the VectorEnv was made with, else random
        tasks (of options["split"] and ["family"] when given; their streams
        reseeded with seed when given). Returns (obs, info) with
        info["action_mask"], info["task"] and info["episode_id"]."""
        options = options or {}
        unknown = set(options) - {"tasks", "split", "family"}
        if unknown:
            raise ValueError("reset options %s: want tasks, split or family" % sorted(unknown))
        tasks = options.get("tasks", self._create["tasks"])
        state = self.client.reset_vector(self._id, tasks=tasks, split=options.get("split"),
                                         family=options.get("family"), seed=seed)
        self._state = state
        info = {"action_mask": state["action_mask"], "task": state["tasks"], "episode_id": state["episodes"], "seed": state["seed"]}
        return self._obs(state), info

    def step(self, actions):
        """Apply one action index per env. Returns (obs, reward, terminated,
        truncated, info): info["action_mask"] is every env's mask for its
        next step, info["reward_terms"] the terms of reward by name,
        info["finished"] the episodes that ended (slot, task, answered,
        correct, ground truth), and with same_step info["final_obs"] (and
        its mask "_final_obs")."""
        ans = self.client.step_vector(self._id, actions)
        terms = ans["reward_terms"]
        info = {"action_mask": ans["action_mask"], "finished": ans["finished"]}
        if np is not None:
            info["reward_terms"] = {n: terms[:, k] for k, n in enumerate(self.reward_term_names)}
        else:
            info["reward_terms"] = {n: [row[k] for row in terms] for k, n in enumerate(self.reward_term_names)}
        if self.autoreset == "same_step" and ans["finished"]:
            self._final(ans, info)
        return self._obs(ans), ans["reward"], ans["terminated"], ans["truncated"], info

    def close(self, **kwargs):
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

    def _final(self, ans, info):
        """gymnasium's same_step convention: final_obs per env, with a mask."""
        n = self.num_envs
        final = [None] * n
        present = [False] * n
        for k, f in enumerate(ans["finished"]):
            i = f["slot"]
            present[i] = True
            if self._coarse and self._pixels:
                final[i] = {"coarse": ans["final_obs"][k], "pixels": ans["final_pixels"][k]}
            else:
                final[i] = ans["final_obs"][k] if self._coarse else ans["final_pixels"][k]
        if np is not None:
            arr = np.empty(n, dtype=object)
            arr[:] = final
            final, present = arr, np.asarray(present)
        info["final_obs"], info["_final_obs"] = final, present

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit the client may be half torn down
            pass
