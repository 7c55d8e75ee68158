"""pixelis.VectorEnv under gymnasium's own checks and vector wrappers, against
a real `pixelis serve`: run by both gymnasium stacks (locks/gymnasium-1.0.txt,
locks/gymnasium-1.txt), the oldest and the newest gymnasium the package's
`gymnasium` extra admits.

- it builds in every autoreset mode, and its metadata["autoreset_mode"] is
  what gymnasium's wrappers read;
- spaces: real observations are in the spaces, samples of the action space
  step, the batched spaces are gymnasium's batch_space of the single ones;
- reset(seed=) gives the same tasks and observations again;
- actions as arrays, lists or numpy scalars step alike;
- info follows gymnasium's vector convention (every key with its `_key` mask),
  so DictInfoToList splits it per env;
- a masked policy always has an allowed action, also in the step after an
  episode ends;
- RecordEpisodeStatistics counts exactly the episodes serve finished, with
  their lengths and returns;
- the normalisers and the other wrappers that apply to a discrete-action,
  box-observation env run on it.
"""

import importlib.metadata
import os
import tomllib
import unittest

import gymnasium
import numpy as np
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers import vector as wrappers

from pixelis import Client, VectorEnv
from serve_fixture import Server

# AutoresetMode exists from gymnasium 1.1; 1.0's wrappers assume next_step.
AutoresetMode = getattr(gymnasium.vector, "AutoresetMode", None)
MODES = ("next_step", "same_step", "disabled")
HERE = os.path.dirname(os.path.abspath(__file__))


def setUpModule():
    global SERVER, CLIENT
    SERVER = Server("--max-episodes", "1024")
    CLIENT = Client(SERVER.url, token=SERVER.token)


def tearDownModule():
    CLIENT.close()
    SERVER.stop()


def masked_random(rng, mask):
    """A uniformly random allowed action per row, as a masked policy draws it:
    the logits of forbidden actions are -inf, so a row without an allowed
    action gives NaN probabilities."""
    logits = np.where(mask, rng.random(mask.shape), -np.inf)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    if np.isnan(p).any():
        raise AssertionError("a row of the action mask allows no action: %s" % np.flatnonzero(~mask.any(1)))
    return np.array([rng.choice(len(row), p=row) for row in p])


def check_info(test, info, n):
    """gymnasium's vector info: every key k has a bool mask _k of n entries,
    its value an array of n entries or a dict of such (recursively)."""
    for k, v in info.items():
        if k.startswith("_"):
            continue
        test.assertIn("_" + k, info, "info[%r] has no mask" % k)
        m = info["_" + k]
        test.assertIsInstance(m, np.ndarray, k)
        test.assertEqual((m.dtype, m.shape), (np.bool_, (n,)), k)
        if isinstance(v, dict):
            check_info(test, v, n)
        else:
            test.assertIsInstance(v, np.ndarray, k)
            test.assertEqual(len(v), n, k)


class ExtraTest(unittest.TestCase):
    def test_the_gymnasium_extra_is_in_the_installed_metadata(self):
        # pip reads extras from the wheel's metadata, which the in-tree build
        # backend writes: pyproject.toml's extras must all reach it.
        with open(os.path.join(HERE, "..", "..", "pyproject.toml"), "rb") as f:
            extras = tomllib.load(f)["project"]["optional-dependencies"]
        self.assertEqual(extras["gymnasium"], ["gymnasium>=1.0,<2", "numpy"])
        meta = importlib.metadata.metadata("pixelis")
        self.assertEqual(sorted(meta.get_all("Provides-Extra")), sorted(extras))
        want = sorted('%s; extra == "%s"' % (r, name) for name, reqs in extras.items() for r in reqs)
        self.assertEqual(sorted(importlib.metadata.requires("pixelis")), want)
        major, minor = map(int, gymnasium.__version__.split(".")[:2])
        self.assertEqual(major, 1, "gymnasium %s is outside the extra's bounds" % gymnasium.__version__)


class GymnasiumVectorTest(unittest.TestCase):
    def env(self, n=4, **kw):
        env = VectorEnv(CLIENT, n, **kw)
        self.addCleanup(env.close)
        return env

    def test_builds_in_every_mode(self):
        for mode in MODES:
            env = self.env(autoreset_mode=mode, seed=1)
            self.assertIsInstance(env, gymnasium.vector.VectorEnv)
            want = getattr(AutoresetMode, mode.upper()) if AutoresetMode else mode
            self.assertEqual(env.metadata["autoreset_mode"], want, mode)
            if AutoresetMode:
                self.assertIsInstance(env.metadata["autoreset_mode"], AutoresetMode)

    def test_spaces(self):
        for pixels in (0, 8):
            env = self.env(5, pixels=pixels, seed=2)
            self.assertEqual(env.observation_space, batch_space(env.single_observation_space, 5))
            self.assertEqual(env.action_space, batch_space(env.single_action_space, 5))
            obs, info = env.reset(seed=2)
            rng = np.random.default_rng(0)
            for _ in range(6):
                self.assertTrue(env.observation_space.contains(obs), "obs not in observation_space")
                first = {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]
                self.assertTrue(env.single_observation_space.contains(first))
                self.assertIn(env.observation_space.sample(), env.observation_space)
                a = env.action_space.sample()
                self.assertIn(a, env.action_space)
                self.assertIn(env.single_action_space.sample(), env.single_action_space)
                obs, *_ = env.step(masked_random(rng, info["action_mask"]) if rng.random() < 0.5 else a)
                info = _[-1]

    def test_reset_seed_is_deterministic(self):
        env = self.env(6)
        o1, i1 = env.reset(seed=7)
        o2, i2 = env.reset(seed=7)
        np.testing.assert_array_equal(o1, o2)
        self.assertEqual(list(i1["task"]), list(i2["task"]))
        o3, i3 = env.reset(seed=8)
        self.assertNotEqual(list(i1["task"]), list(i3["task"]))
        other = self.env(6)
        o4, i4 = other.reset(seed=7)
        np.testing.assert_array_equal(o1, o4)

    def test_actions_as_arrays_lists_and_numpy_scalars(self):
        ref = self.env(3, seed=4)
        obs, info = ref.reset(seed=4)
        acts = masked_random(np.random.default_rng(1), info["action_mask"])
        want = ref.step(acts)
        for form in (acts.astype(np.int32), acts.tolist(), [np.int64(a) for a in acts], [np.int32(a) for a in acts],
                     tuple(int(a) for a in acts)):
            env = self.env(3, seed=4)
            env.reset(seed=4)
            got = env.step(form)
            np.testing.assert_array_equal(got[0], want[0], repr(form))
            for x, y in zip(got[1:4], want[1:4]):
                np.testing.assert_array_equal(x, y)
        one = self.env(1, seed=4)
        _, info = one.reset(seed=4)
        a = np.int64(np.flatnonzero(info["action_mask"][0])[0])
        one.step(a)  # a numpy scalar for a single env
        one.step(np.array([a]))

    def test_info_convention_and_dict_info_to_list(self):
        for mode in MODES:
            env = wrappers.DictInfoToList(self.env(4, autoreset_mode=mode, seed=3))
            obs, infos = env.reset(seed=3)
            self.assertEqual(len(infos), 4)
            self.assertIn("task", infos[0])
            rng = np.random.default_rng(2)
            ended = 0
            for _ in range(30):
                mask = np.array([i["action_mask"] for i in infos])
                obs, r, term, trunc, infos = env.step(masked_random(rng, mask))
                self.assertEqual(len(infos), 4)
                for i, d in enumerate(infos):
                    self.assertEqual("finished" in d, bool(term[i] or trunc[i]), (mode, i, d.keys()))
                    if "finished" in d:
                        self.assertEqual(d["finished"]["slot"], i)
                        ended += 1
                if env.unwrapped.ended().all():
                    break
            self.assertGreater(ended, 0, mode)

    def test_info_keys_have_masks(self):
        for mode in MODES:
            env = self.env(4, autoreset_mode=mode, seed=5)
            obs, info = env.reset(seed=5)
            check_info(self, info, 4)
            rng = np.random.default_rng(5)
            for _ in range(10):
                obs, r, term, trunc, info = env.step(masked_random(rng, info["action_mask"]))
                check_info(self, info, 4)

    def test_masked_policy_after_an_episode_ends(self):
        # next_step: the step after an ending resets the env and ignores its
        # action; disabled: an ended env ignores its actions until reset. Their
        # masks allow every action, so a masked policy still has one to draw.
        # same_step: the new episode's mask at once.
        for mode in MODES:
            env = self.env(6, autoreset_mode=mode, seed=9)
            obs, info = env.reset(seed=9)
            rng = np.random.default_rng(9)
            seen = 0
            for _ in range(25):
                obs, r, term, trunc, info = env.step(masked_random(rng, info["action_mask"]))
                for i in np.flatnonzero(term | trunc):
                    seen += 1
                    self.assertTrue(info["action_mask"][i].any(), mode)
                    if mode == "same_step":  # the ended episode's last observation, in the env's space
                        self.assertTrue(info["_final_obs"][i])
                        self.assertIn(info["final_obs"][i], env.single_observation_space)
                if mode == "disabled":
                    self.assertTrue(info["action_mask"][env.ended()].all())
                    if env.ended().all():
                        break
            self.assertGreater(seen, 0, mode)

    def test_record_episode_statistics_counts_serves_episodes(self):
        modes = MODES if AutoresetMode else ("next_step", "disabled")  # 1.0's wrapper assumes next_step
        for mode in modes:
            env = wrappers.RecordEpisodeStatistics(self.env(5, autoreset_mode=mode, seed=11))
            obs, info = env.reset(seed=11)
            rng = np.random.default_rng(11)
            finished, returns, run = [], [], np.zeros(5)
            fresh = np.zeros(5, bool)  # next_step: this step resets the env
            for _ in range(40):
                obs, r, term, trunc, info = env.step(masked_random(rng, info["action_mask"]))
                run[~fresh] += r[~fresh]
                done = term | trunc
                got = np.flatnonzero(info["_finished"]) if "_finished" in info else np.array([], int)
                np.testing.assert_array_equal(np.flatnonzero(done), got, mode)
                for i in got:
                    f = info["finished"][i]
                    finished.append(f)
                    returns.append(run[i])
                    self.assertTrue(info["_episode"][i])
                    self.assertEqual(info["episode"]["l"][i], f["steps"], mode)
                    self.assertAlmostEqual(info["episode"]["r"][i], run[i], places=5)
                    run[i] = 0
                fresh = done & (mode == "next_step")
                if mode == "disabled" and done.any():
                    run[done] = 0
                    if env.unwrapped.ended().all():
                        obs, info = env.reset()
            self.assertGreater(len(finished), 0, mode)
            self.assertEqual(env.episode_count, len(finished), mode)
            np.testing.assert_allclose(list(env.return_queue)[-len(finished):][-min(len(finished), 100):],
                                       returns[-min(len(finished), 100):], atol=1e-5)

    def test_disabled_resets_only_the_ended_envs(self):
        # gymnasium's DISABLED loop: step, then reset(options={"reset_mask":
        # ended}) - the ended envs start new episodes, the others play on;
        # RecordEpisodeStatistics (1.1 on: it knows reset_mask) counts each once.
        base = self.env(6, autoreset_mode="disabled", seed=13)
        env = wrappers.RecordEpisodeStatistics(base) if AutoresetMode else base
        obs, info = env.reset(seed=13)
        rng = np.random.default_rng(13)
        finished = partial = 0
        for _ in range(60):
            obs, r, term, trunc, info = env.step(masked_random(rng, info["action_mask"]))
            finished += int(info["_finished"].sum())
            ended = base.ended()
            if not ended.any():
                continue
            steps_before = [CLIENT.episode(e)["steps"] for e in base.episode_ids]
            obs, info = env.reset(options={"reset_mask": ended})
            partial += int(not ended.all())
            np.testing.assert_array_equal(info["_task"], ended)
            self.assertFalse(base.ended().any())
            for i, eid in enumerate(base.episode_ids):
                ep = CLIENT.episode(eid)
                self.assertEqual(ep["steps"], 0 if ended[i] else steps_before[i], i)
                self.assertEqual(list(np.flatnonzero(info["action_mask"][i])), ep["allowed_actions"], i)
            self.assertIn(obs, base.observation_space)
        self.assertGreater(partial, 0, "no env ended alone within 60 steps")
        if AutoresetMode:
            self.assertEqual(env.episode_count, finished)

    def test_normalisers_and_transforms(self):
        rng = np.random.default_rng(12)
        env = self.env(4, seed=12)
        w = env.single_observation_space.shape[0]
        stack = wrappers.NormalizeReward(wrappers.NormalizeObservation(env), gamma=0.99)
        stack = wrappers.ClipReward(stack, -5, 5)
        stack = wrappers.DtypeObservation(stack, np.float64)
        stack = wrappers.TransformReward(stack, lambda r: 2 * r)
        stack = wrappers.ReshapeObservation(stack, (w, 1))
        stack = wrappers.RecordEpisodeStatistics(stack)
        obs, info = stack.reset(seed=12)
        self.assertEqual(obs.shape, (4, w, 1))
        self.assertEqual(obs.dtype, np.float64)
        for _ in range(30):
            obs, r, term, trunc, info = stack.step(masked_random(rng, info["action_mask"]))
            self.assertTrue(np.isfinite(obs).all() and np.isfinite(r).all())
            self.assertIn(obs, stack.observation_space)
        self.assertGreater(env_normaliser(stack).obs_rms.count, 30 * 4 - 1)
        stack.close()


def env_normaliser(env):
    while not isinstance(env, wrappers.NormalizeObservation):
        env = env.env
    return env


if __name__ == "__main__":
    unittest.main()
