"""Tests of pixelis.Client against a real `pixelis serve`.

Run from this directory with the package installed (or clients/python on
PYTHONPATH):

    python3 -m unittest -v test_client

It plays the expert's episodes through the server and checks them against
in-process play:

  - `pixelis data gen` (the same binary, in process): questions, the expert's
    actions, every step's result and the finished CoTA records of its expert
    demonstrations;
  - $PIXELIS_REFERENCE, a JSON file of episodes played and scored in process
    (written by clients/python/python_test.go, which runs this test from
    `go test ./...`): step results of spoiled episodes, pixels, observations
    and rewards. Without it those comparisons are skipped (a failure under
    CI=true).
"""

import hashlib
import json
import math
import os
import subprocess
import tempfile
import unittest

import pixelis
import pixelis_client
from pixelis import Client, PixelisError, decode_png
from pixelis.png import decode_png_stdlib
from serve_fixture import IN_CI, Server


class ServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--max-episodes", "64")
        cls.url, cls.token = cls.server.url, cls.server.token
        cls.client = Client(cls.url, token=cls.token)
        # In-process play by the CLI: the CoTA records of 24 training tasks.
        cls.tmp = tempfile.TemporaryDirectory()
        out = os.path.join(cls.tmp.name, "train.jsonl")
        subprocess.run([cls.server.bin, "data", "gen", "--config", "smoke", "--split", "train", "--n", "24", "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            cls.samples = [json.loads(line) for line in f if line.strip()]
        cls.reference = None
        ref = os.environ.get("PIXELIS_REFERENCE")
        if ref:
            with open(ref) as f:
                cls.reference = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.tmp.cleanup()
        cls.server.stop()

    def need_reference(self):
        if not self.reference:
            msg = "no $PIXELIS_REFERENCE (written by clients/python/python_test.go under go test)"
            if IN_CI:
                self.fail(msg)
            self.skipTest(msg)

    def test_spec_and_health(self):
        spec = self.client.spec()
        self.assertEqual(len(spec["families"]), 6)
        self.assertEqual(spec["action_space"]["size"],
                         spec["action_space"]["first_answer_action"] + len(spec["answer_vocab"]))
        self.assertIn("ANSWER", [o["name"] for o in spec["operations"]])
        self.assertEqual(spec["reward"]["components"], ["final", "coherence", "curiosity", "penalty", "cost"])
        self.assertEqual(self.client.health()["status"], "ok")
        self.assertTrue(self.client.openapi()["openapi"].startswith("3."))

    def test_token_is_required(self):
        anonymous = Client(self.url)
        with self.assertRaises(PixelisError) as cm:
            anonymous.spec()
        self.assertEqual(cm.exception.status, 401)
        self.assertEqual(cm.exception.field, "Authorization")
        self.assertEqual(anonymous.health()["status"], "ok")  # health needs none
        anonymous.close()

    def test_expert_episodes_match_data_gen(self):
        # data gen's expert demonstrations: positive records whose every step is imitated.
        expert = [s for s in self.samples
                  if s["sample_type"] == "positive" and not any(st.get("role") for st in s["trajectory"])]
        self.assertGreaterEqual(len(expert), 6, "too few expert records in pixelis data gen's output")
        for sample in expert:
            i = sample["index"]
            with self.subTest(task=sample["sample_id"]):
                with self.client.new_episode(split="train", index=i) as ep:
                    self.assertEqual(ep.task["question"], sample["question"])
                    self.assertEqual(ep.task["family"], sample["task_type"])
                    self.assertNotIn("finish", ep.state)
                    plan = self.client.expert(split="train", index=i)
                    self.assertEqual(len(plan["actions"]), len(sample["trajectory"]))
                    for a, want in zip(plan["actions"], sample["trajectory"]):
                        self.assertEqual(a["op"], want["action"])
                        self.assertEqual({k: a[k] for k in ("x", "y", "answer") if k in a}, want["parameters"])
                        step = ep.step(op=a["op"], x=a.get("x"), y=a.get("y"), answer=a.get("answer"))
                        self.assertEqual(step["action"], want["action"])
                        self.assertEqual(step["parameters"], want["parameters"])
                        self.assertEqual(step["result"], want["result"])
                    self.assertTrue(step["done"])
                    self.assertEqual(step["finish"]["answer"], sample["answer"])
                    self.assertTrue(step["finish"]["correct"])
                    self.assertEqual(ep.results(), [s["result"] for s in sample["trajectory"]])
                    cota = ep.trajectory(cota=True)
                    self.assertIn(cota["difficulty"], ("simple", "medium", "hard"))
                    cota["difficulty"] = sample["difficulty"]  # data gen ranks within its file, the server against a reference
                    self.assertEqual(cota, sample)

    def test_action_indices(self):
        # The discrete action space plays the same episode as named operations.
        spec = self.client.spec()
        plan = self.client.expert(split="train", index=1)
        with self.client.new_episode(split="train", index=1) as ep:
            for a in plan["actions"]:
                self.assertGreaterEqual(a["index"], 0)
                self.assertLess(a["index"], spec["action_space"]["size"])
                step = ep.step(index=a["index"])
            self.assertTrue(step["finish"]["correct"])

    def test_bad_requests_name_the_field(self):
        with self.client.new_episode(split="train", index=0) as ep:
            for action, field in [({"op": "SEGMENT_OBJECT_AT", "x": 3}, "y"),
                                  ({"op": "ANSWER"}, "answer"),
                                  ({"op": "FLY"}, "op"),
                                  ({"op": "ZOOM_IN", "x": 1}, "x"),
                                  ({"index": 10 ** 6}, "index")]:
                with self.assertRaises(PixelisError) as cm:
                    ep.step(**action)
                self.assertEqual((cm.exception.status, cm.exception.field), (400, field), cm.exception.message)
                self.assertTrue(cm.exception.message.startswith(field + ": "))
            self.assertEqual(ep.refresh()["steps"], 0)
        with self.assertRaises(PixelisError) as cm:
            self.client.episode(ep.id)
        self.assertEqual(cm.exception.status, 404)
        with self.assertRaises(PixelisError) as cm:
            self.client.create_episode(split="train", index=0, family="text_extraction")
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "family"))

    def test_one_package_two_names(self):
        self.assertIs(pixelis_client.Client, pixelis.Client)
        self.assertIs(pixelis_client.PixelisError, pixelis.PixelisError)
        if os.environ.get("PIXELIS_EXPECT_INSTALLED"):  # the Go driver installs the package first
            self.assertNotIn(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), pixelis.__file__)

    def test_connection_is_kept_alive(self):
        c = Client(self.url, token=self.token)
        c.spec()
        conn = c._local.conn
        sock = conn.sock
        for i in range(5):
            with c.new_episode(split="val", index=i) as ep:
                ep.step(index=0)
        self.assertIs(c._local.conn, conn)
        self.assertIs(conn.sock, sock)
        c.close()

    def test_scheme_name_in_any_case(self):
        import http.client
        host = self.url.split("//")[1]
        for scheme in ("bearer", "BEARER", "Bearer"):
            conn = http.client.HTTPConnection(host, timeout=60)  # a safety net
            conn.request("GET", "/v1/spec", headers={"Authorization": scheme + " " + self.token})
            resp = conn.getresponse()
            resp.read()
            conn.close()
            self.assertEqual(resp.status, 200, scheme)

    def test_mask_and_observation_after_every_step(self):
        # The episode's mask after each step is the server's; its observation
        # is the one pixelis's own policy reads in process.
        self.need_reference()
        ref = self.reference["episodes"][5]
        for enc in ("npy", "json"):
            with self.client.new_episode(split=ref["split"], index=ref["index"], observation={"encoding": enc}) as ep:
                hashes = [_obs_sha(ep.obs)]
                for a in ref["actions"]:
                    ep.step(**a)
                    hashes.append(_obs_sha(ep.obs))
                    fresh = self.client.episode(ep.id)
                    self.assertEqual(ep.state["allowed_actions"], fresh["allowed_actions"])
                    self.assertEqual([i for i, ok in enumerate(ep.mask) if ok], fresh["allowed_actions"])
                self.assertEqual(hashes, ref["obs_sha256"], enc)

    def test_lone_scores_tell_right_from_wrong(self):
        plan = self.client.expert(split="train", index=2)
        right = [{"index": a["index"]} for a in plan["actions"]]
        other = "cross" if plan["actions"][-1]["answer"] != "cross" else "red"
        wrong = right[:-1] + [{"op": "ANSWER", "answer": other}]
        totals = []
        for acts in (right, wrong):
            res = self.client.score([{"task": {"split": "train", "index": 2}, "actions": acts}])
            self.assertEqual(res["normalization"]["mode"], "none")
            item = res["items"][0]
            want = sum(res["weights"].get(n, 1.0) * item["raw"][n] for n in res["names"])
            self.assertAlmostEqual(item["total"], want, places=12)
            totals.append(item["total"])
        self.assertGreater(totals[0], totals[1])
        both = self.client.score([{"task": {"split": "train", "index": 2}, "actions": a} for a in (right, wrong)])
        self.assertEqual(both["normalization"]["mode"], "batch")

    def test_images(self):
        with self.client.new_episode(split="train", index=1) as ep:
            w, h, ch, pix = decode_png(ep.frame_png(0))
            self.assertEqual((w, h, ch), (128, 128, 3))
            png = ep.view_png()
            w, h, ch, view = decode_png(png)
            self.assertEqual((w, h, ch), (64, 64, 3))
            self.assertEqual(decode_png_stdlib(png), (w, h, ch, view))  # PIL or not, the same pixels
        # The pixels an observation carries are the view's.
        with self.client.new_episode(split="train", index=1, observation={"coarse": False, "pixels": 64, "encoding": "npy"}) as ep2:
            got = bytes(_flat(ep2.pixels)) if isinstance(ep2.pixels, list) else ep2.pixels.tobytes()
            self.assertEqual(got, view)
            self.assertIsNone(ep2.obs)
        with self.client.new_episode(split="train", index=1) as ep:
            if self.reference:
                ref = self.reference["episodes"][1]
                self.assertEqual(hashlib.sha256(pix).hexdigest(), ref["frames_rgb_sha256"][0])
                self.assertEqual(hashlib.sha256(view).hexdigest(), ref["view_rgb_sha256"])
            # After ZOOM_IN the view is the zoomed region, here enlarged to 256 pixels.
            for a in self.client.expert(split="train", index=1)["actions"][:2]:
                ep.step(index=a["index"])
            data, region = self.client.view_png_with_region(ep.id, size=256)
            self.assertNotEqual(region, (0, 0, 128, 128))
            self.assertEqual(tuple(ep.refresh()["region"]), region)
            w, h, ch, big = decode_png(data)
            self.assertEqual((w, h), (256, 256))
            x0, y0, x1, y1 = region
            # Each enlarged pixel is one source pixel of the region.
            for px, py in [(0, 0), (255, 255), (100, 37)]:
                sx, sy = x0 + px * (x1 - x0) // 256, y0 + py * (y1 - y0) // 256
                self.assertEqual(big[(py * 256 + px) * 3:(py * 256 + px) * 3 + 3], pix[(sy * 128 + sx) * 3:(sy * 128 + sx) * 3 + 3])

    def play_reference(self):
        """Play the reference episodes through the server; return their ids."""
        ids = []
        for ref in self.reference["episodes"]:
            ep = self.client.new_episode(split=ref["split"], index=ref["index"])
            self.assertEqual(ep.task["question"], ref["question"])
            if self.reference["episodes"][0] is ref:
                for k in range(len(ref["frames_rgb_sha256"])):
                    _, _, _, pix = decode_png(ep.frame_png(k))
                    self.assertEqual(hashlib.sha256(pix).hexdigest(), ref["frames_rgb_sha256"][k])
            for a, want, cut in zip(ref["actions"], ref["steps"], ref["cut_off"]):
                step = ep.step(**a)
                self.assertEqual(step["result"], want["result"], "task %s step %d" % (ref["index"], step["step"]))
                self.assertEqual(step["cut_off"], cut)
            fin = step["finish"]
            self.assertEqual((fin["answered"], fin.get("answer", ""), fin["correct"], fin["ground_truth"]),
                             (ref["answered"], ref["answer"], ref["correct"], ref["ground_truth"]))
            ids.append(ep.id)
        return ids

    def assertRewards(self, got, want, what):
        self.assertEqual(len(got["items"]), len(want))
        for i, (g, w) in enumerate(zip(got["items"], want)):
            where = "%s item %d" % (what, i)
            self.assertTrue(math.isclose(g["total"], w["total"], rel_tol=1e-12, abs_tol=1e-12), where)
            for key in ("raw", "norm"):
                self.assertEqual(sorted(g[key]), sorted(w[key]), where)
                for c in w[key]:
                    self.assertTrue(math.isclose(g[key][c], w[key][c], rel_tol=1e-12, abs_tol=1e-12),
                                    "%s %s %s: %r != %r" % (where, key, c, g[key][c], w[key][c]))
            self.assertEqual(len(g["per_step"]), len(w["per_step"]), where)
            for gs, ws in zip(g["per_step"], w["per_step"]):
                for c in ws:
                    self.assertTrue(math.isclose(gs[c], ws[c], rel_tol=1e-12, abs_tol=1e-12), where)

    def test_rewards_match_in_process(self):
        self.need_reference()
        ids = self.play_reference()
        items = [{"episode": i} for i in ids]
        self.assertRewards(self.client.score(items), self.reference["stateless"], "stateless")
        # The same trajectories sent as task + actions score the same.
        as_actions = [{"task": {"split": r["split"], "index": r["index"]}, "actions": r["actions"]}
                      for r in self.reference["episodes"]]
        self.assertRewards(self.client.score(as_actions), self.reference["stateless"], "task+actions")
        scorer = self.client.create_scorer(stage=self.reference["scorer_stage"])
        try:
            for b, want in enumerate(self.reference["scorer_batches"]):
                got = scorer.score(items)
                self.assertEqual(got["batch"], b + 1)
                self.assertRewards(got, want, "scorer batch %d" % (b + 1))
        finally:
            scorer.close()
        for i in ids:
            self.client.close(i)


def _flat(v):
    if isinstance(v, list):
        for e in v:
            yield from _flat(e)
    else:
        yield v


def _obs_sha(obs):
    """sha256 of an observation's float32 little-endian bytes."""
    import struct
    if hasattr(obs, "astype"):
        data = obs.astype("<f4").tobytes()
    else:
        data = struct.pack("<%df" % len(obs), *obs)
    return hashlib.sha256(data).hexdigest()


if __name__ == "__main__":
    unittest.main()
