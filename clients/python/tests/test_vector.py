"""Property tests of pixelis.VectorEnv against a real `pixelis serve`.

- A vector step is the same as stepping each episode alone: the same
  observations (coarse view and pixels), masks, rewards, reward terms,
  endings and trajectories, for the same actions.
- The mask after every step equals the server's (GET /v1/episodes/{id}),
  but for an env whose episode just ended under next_step: its next step
  resets it and ignores the action, so its mask allows every action.
- Auto-reset follows gymnasium's modes; the encodings agree to the bit.
"""

import random
import unittest

from pixelis import Client, PixelisError, VectorEnv, _arrays
from serve_fixture import Server, need

np = need("numpy")


def setUpModule():
    global SERVER, CLIENT
    SERVER = Server("--max-episodes", "512")
    CLIENT = Client(SERVER.url, token=SERVER.token)


def tearDownModule():
    CLIENT.close()
    SERVER.stop()


def random_masked(rng, mask):
    """A uniformly random allowed action per row of mask."""
    u = rng.random(mask.shape)
    u[~mask] = -1
    return u.argmax(1)


def val_tasks(n, start=0):
    return [{"split": "val", "index": i} for i in range(start, start + n)]


class VectorTest(unittest.TestCase):
    def test_vector_step_is_one_at_a_time_stepping(self):
        n = 8
        obs_opt = {"coarse": True, "pixels": 16, "encoding": "npy"}
        env = VectorEnv(CLIENT, tasks=val_tasks(n), autoreset_mode="disabled", pixels=16)
        eps = [CLIENT.new_episode(split="val", index=i, observation=obs_opt) for i in range(n)]
        rng = np.random.default_rng(3)
        obs, info = env.reset(options={"tasks": val_tasks(n)})
        done = [False] * n
        steps = 0
        while not all(done):
            for i, ep in enumerate(eps):
                if not done[i]:
                    np.testing.assert_array_equal(obs["coarse"][i], ep.obs)
                    np.testing.assert_array_equal(obs["pixels"][i], ep.pixels)
                    self.assertEqual(list(np.flatnonzero(info["action_mask"][i])), ep.state["allowed_actions"])
            acts = random_masked(rng, info["action_mask"])
            obs, reward, term, trunc, info = env.step(acts)
            steps += 1
            for i, ep in enumerate(eps):
                if done[i]:
                    self.assertTrue(info["action_mask"][i].all(), "an ended env ignores its action: any goes")
                    continue
                s = ep.step(index=int(acts[i]))
                self.assertEqual((bool(term[i]), bool(trunc[i])), (s["terminated"], s["truncated"]))
                self.assertEqual(reward[i], s["reward"])
                for name in env.reward_term_names:
                    self.assertEqual(info["reward_terms"][name][i], s["reward_terms"][name])
                done[i] = s["done"]
        self.assertGreater(steps, 1)
        for i, ep in enumerate(eps):
            got, want = CLIENT.trajectory(env.episode_ids[i]), ep.trajectory()
            self.assertEqual(got["steps"], want["steps"])
            self.assertEqual(got["finish"], want["finish"])
            ep.close()
        env.close()

    def test_mask_after_every_step_is_the_servers(self):
        env = VectorEnv(CLIENT, 6, autoreset_mode="next_step", seed=5)
        rng = np.random.default_rng(4)
        obs, info = env.reset(seed=5)
        for _ in range(12):
            obs, reward, term, trunc, info = env.step(random_masked(rng, info["action_mask"]))
            for i, eid in enumerate(env.episode_ids):
                if term[i] or trunc[i]:  # the next step resets the env and ignores its action: any goes
                    self.assertTrue(info["action_mask"][i].all())
                    continue
                self.assertEqual(list(np.flatnonzero(info["action_mask"][i])), CLIENT.episode(eid)["allowed_actions"])
        env.close()

    def test_autoreset_modes(self):
        # The same seed gives the same tasks whatever the mode; same_step's
        # final_obs is what disabled shows of the ended episode, and
        # next_step's reset step has reward 0 and no ending.
        n, seed = 6, 21
        same = VectorEnv(CLIENT, n, autoreset_mode="same_step", seed=seed)
        off = VectorEnv(CLIENT, n, autoreset_mode="disabled", seed=seed)
        nxt = VectorEnv(CLIENT, n, autoreset_mode="next_step", seed=seed)
        o_same, i_same = same.reset(seed=seed)
        o_off, i_off = off.reset(seed=seed)
        o_nxt, i_nxt = nxt.reset(seed=seed)
        self.assertEqual(list(i_same["task"]), list(i_off["task"]))
        np.testing.assert_array_equal(o_same, o_off)
        rng = np.random.default_rng(8)
        acts = random_masked(rng, i_off["action_mask"])
        ended = np.zeros(n, bool)
        pending = np.zeros(n, bool)
        seen_final = seen_reset = False
        for _ in range(20):
            live = ~ended
            a = np.where(live, acts, 0)
            o_same, r_same, t_same, u_same, i_same = same.step(a)
            o_off, r_off, t_off, u_off, i_off = off.step(a)
            o_nxt, r_nxt, t_nxt, u_nxt, i_nxt = nxt.step(a)
            for i in range(n):
                if pending[i]:  # next_step: this step reset the env
                    self.assertEqual((r_nxt[i], t_nxt[i], u_nxt[i]), (0, False, False))
                    seen_reset = True
                    pending[i] = False
                if not live[i]:
                    continue
                self.assertEqual((t_same[i], u_same[i], r_same[i]), (t_off[i], u_off[i], r_off[i]))
                self.assertEqual((t_nxt[i], u_nxt[i], r_nxt[i]), (t_off[i], u_off[i], r_off[i]))
                if t_off[i] or u_off[i]:
                    ended[i] = pending[i] = True
                    self.assertTrue(i_same["_final_obs"][i])
                    np.testing.assert_array_equal(i_same["final_obs"][i], o_off[i])
                    np.testing.assert_array_equal(o_nxt[i], o_off[i])  # next_step shows the end first
                    seen_final = True
                else:
                    np.testing.assert_array_equal(o_same[i], o_off[i])
            acts = random_masked(rng, i_off["action_mask"] | ~live[:, None])
            if ended.all():
                break
        self.assertTrue(seen_final and seen_reset, "no episode ended within 20 steps")
        for e in (same, off, nxt):
            e.close()

    def test_encodings_agree(self):
        a = VectorEnv(CLIENT, 4, seed=2, encoding="npy", pixels=8)
        b = VectorEnv(CLIENT, 4, seed=2, encoding="json", pixels=8)
        oa, ia = a.reset(seed=2)
        ob, ib = b.reset(seed=2)
        for k in ("coarse", "pixels"):
            self.assertEqual(oa[k].dtype, ob[k].dtype)
            self.assertEqual(oa[k].tobytes(), ob[k].tobytes(), k)
        np.testing.assert_array_equal(ia["action_mask"], ib["action_mask"])
        acts = random_masked(np.random.default_rng(1), ia["action_mask"])
        ra, rb = a.step(acts), b.step(acts)
        self.assertEqual(ra[0]["coarse"].tobytes(), rb[0]["coarse"].tobytes())
        for x, y in zip(ra[1:4], rb[1:4]):
            np.testing.assert_array_equal(x, y)
        a.close()
        b.close()

    def test_standard_library_decoding(self):
        # Without numpy an npy frame decodes into nested lists of the same values.
        ans_np = CLIENT.create_vector(n=3, seed=4, observation={"encoding": "npy", "pixels": 8})
        keep = _arrays.np
        try:
            _arrays.np = None
            ans_py = CLIENT.vector(ans_np["vector"])
        finally:
            _arrays.np = keep
        for k in ("obs", "pixels", "action_mask"):
            self.assertIsInstance(ans_py[k], list)
            self.assertEqual(np.asarray(ans_py[k]).tolist(), ans_np[k].tolist(), k)
        CLIENT.close_vector(ans_np["vector"])

    def test_spaces_and_groups(self):
        spec = CLIENT.spec()
        env = VectorEnv(CLIENT, tasks=val_tasks(3), group=4, autoreset_mode="disabled")
        obs, info = env.reset()
        w = spec["observation"]["coarse"]["shape"][0]
        self.assertEqual(env.num_envs, 12)
        self.assertEqual(tuple(env.single_observation_space.shape), (w,))
        self.assertEqual(tuple(env.observation_space.shape), (12, w))
        self.assertEqual(obs.shape, (12, w))
        self.assertEqual(obs.dtype, np.float32)
        self.assertEqual(env.single_action_space.n, spec["action_space"]["size"])
        self.assertEqual([t["index"] for t in info["task"]], [0] * 4 + [1] * 4 + [2] * 4)
        obs, info = env.reset(options={"tasks": val_tasks(3, start=5)})
        self.assertEqual([t["index"] for t in info["task"]], [5] * 4 + [6] * 4 + [7] * 4)
        env.close()
        with self.assertRaises(PixelisError) as cm:
            VectorEnv(CLIENT, tasks=val_tasks(2), group=2, autoreset_mode="next_step")
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "autoreset"))

    def test_expert_actions_through_the_vector(self):
        # The expert's demonstrations played through a vector: the
        # observations along them are POST /v1/experts', and every one answers right.
        tasks = [{"split": "train", "index": i} for i in range(10)]  # expert data of training tasks only
        demo = CLIENT.experts(tasks, observation={"encoding": "npy"})
        env = VectorEnv(CLIENT, tasks=tasks, autoreset_mode="disabled")
        obs, info = env.reset(options={"tasks": tasks})
        plans = [[a["index"] for a in ex["actions"]] for ex in demo["experts"]]
        correct = {}
        for t in range(max(map(len, plans))):
            for i, ex in enumerate(demo["experts"]):
                if t < len(plans[i]):
                    np.testing.assert_array_equal(obs[i], demo["obs"][ex["rows"][0] + t])
                    np.testing.assert_array_equal(info["action_mask"][i], demo["action_mask"][ex["rows"][0] + t])
            acts = [p[t] if t < len(p) else 0 for p in plans]
            obs, reward, term, trunc, info = env.step(acts)
            for f in info["finished"][info["_finished"]]:
                correct[f["slot"]] = f["correct"]
        self.assertEqual(correct, {i: True for i in range(10)})
        env.close()


if __name__ == "__main__":
    random.seed(0)
    unittest.main()
