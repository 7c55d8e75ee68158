"""examples/pixel_grpo.py, CI-sized, against a real `pixelis serve`: a few SFT and GRPO steps with a
checkpoint after every step. The behaviour-cloning loss on the expert's actions falls; a run resumed
from a mid-GRPO checkpoint ends bit for bit where the uninterrupted run ended, at the same step; a stop
command with a checkpoint saves at the step it arrived and ends the run without results; a non-finite
gradient leaves the weights as they were; two ranks under torchrun (DDP, gloo) resume exactly too.

Needs torch and numpy: without them the test skips, except under CI=true, where it fails.
"""

import importlib.util
import io
import os
import socket
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

from pixelis import Client
from serve_fixture import REPO, Server, need

torch = need("torch")
need("numpy")

SFT_STEPS, GRPO_STEPS = 30, 4


def load_example():
    spec = importlib.util.spec_from_file_location("pixel_grpo", os.path.join(REPO, "examples", "pixel_grpo.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Command:
    """A console command as pixelis.sdk hands it to the trainer: kind, args, ack."""

    def __init__(self, kind, args=None):
        self.kind, self.args, self.acks = kind, args or {}, []

    def ack(self, ok=True, reason=""):
        self.acks.append((ok, reason))


class ScriptedRun:
    """A launch channel that delivers the given commands at the given steps (pixelis.sdk's Run
    surface, without the socket) and records what the trainer reports."""

    def __init__(self, commands, weights):
        self.commands, self.active, self.rank = commands, True, 0
        self.stage = type("Stage", (), {"index": 0, "name": "Phase1_Learn_Goal", "weights": weights})()
        self.saved, self.logged, self.samples, self.finished = [], [], [], False
        self.weights_logged = []  # (step, the weights the step said its rewards used)

    def phase(self, name):
        pass

    def log(self, step, metrics, weights=None):
        self.logged.append((step, dict(metrics)))
        self.weights_logged.append((step, weights))

    def sample(self, step, sample):
        self.samples.append((step, sample))

    def checkpoint_saved(self, path, step):
        self.saved.append((path, step))

    def step_boundary(self, step):
        return self.commands.pop(step, [])

    def done(self):
        self.finished = True


class ExampleGRPOTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.ex = load_example()
        torch.set_num_threads(1)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp.cleanup()

    def argv(self, run_dir, *extra):
        return ["--serve", self.server.url, "--run-dir", run_dir, "--sft-tasks", "200", "--sft-steps", str(SFT_STEPS),
                "--sft-warmup", "5", "--val-tasks", "24", "--val-every", str(SFT_STEPS), "--grpo-steps", str(GRPO_STEPS),
                "--tasks-per-step", "4", "--group-size", "4", "--grpo-lr", "1e-3", "--test-tasks", "24",
                "--test-samples", "2", "--eval-envs", "128", "--log-every", "5", *extra]

    def run_example(self, *argv):
        os.environ["PIXELIS_SERVE_TOKEN"] = self.server.token
        out = io.StringIO()
        with redirect_stdout(out):
            self.ex.main(list(argv))
        return out.getvalue()

    def ckpt(self, run_dir, step):
        return os.path.join(run_dir, "checkpoints", "step_%07d.pt" % step)

    def test_sft_loss_falls_and_resume_is_exact(self):
        full = os.path.join(self.tmp.name, "full")
        self.run_example(*self.argv(full, "--checkpoint-every", "1"))
        last = SFT_STEPS + GRPO_STEPS
        self.assertTrue(os.path.exists(os.path.join(full, "results.json")))

        # the loss on the expert's actions of tasks SFT trained on: step 1 against the end of SFT
        client = Client(self.server.url, token=self.server.token)
        x, m, y = self.ex.demonstrations(client, [{"split": "train", "index": i} for i in range(64)])
        client.close()

        def loss(step):
            blob = torch.load(self.ckpt(full, step))
            net = self.ex.Policy(self.layout(), m.shape[1])
            net.load_state_dict(blob["model"])
            with torch.no_grad():
                return torch.nn.functional.cross_entropy(self.ex.masked_logits(net, x, m), y).item()
        first, end = loss(1), loss(SFT_STEPS)
        self.assertLess(end, first - 0.5, "SFT loss %.3f at step 1, %.3f at step %d" % (first, end, SFT_STEPS))

        # resume two steps before the end: the same step count, the same weights, optimiser and results
        resumed = os.path.join(self.tmp.name, "resumed")
        self.run_example(*self.argv(resumed, "--resume", self.ckpt(full, last - 2)))
        a, b = torch.load(self.ckpt(full, last)), torch.load(self.ckpt(resumed, last))
        self.assertEqual((a["step"], a["grpo_step"], a["phase"]), (b["step"], b["grpo_step"], b["phase"]))
        for k in a["model"]:
            self.assertTrue(torch.equal(a["model"][k], b["model"][k]), "weight %s differs after resume" % k)
        for sa, sb in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values()):
            self.assertTrue(torch.equal(sa["exp_avg"], sb["exp_avg"]))
        self.assertEqual(a["results"], b["results"])
        self.assertEqual(os.listdir(os.path.join(resumed, "checkpoints")), [os.path.basename(self.ckpt(resumed, last))])

    def test_stop_command_checkpoints_at_its_step(self):
        stop_at = SFT_STEPS + 2
        ck, stop = Command("checkpoint"), Command("stop", {"checkpoint": True})
        run = ScriptedRun({5: [ck], stop_at: [stop]}, {"final": 1.0, "coherence": 0.0, "curiosity": 0.0})
        original = self.ex.connect
        self.ex.connect = lambda args: run
        try:
            d = os.path.join(self.tmp.name, "stopped")
            self.run_example(*self.argv(d, "--log-every", "2"))
        finally:
            self.ex.connect = original
        self.assertEqual([s for _, s in run.saved], [5, stop_at])
        self.assertEqual((ck.acks, stop.acks), ([(True, "")], [(True, "")]))
        self.assertFalse(run.finished, "a stopped run must not say done")
        self.assertFalse(os.path.exists(os.path.join(d, "results.json")))
        self.assertEqual(torch.load(run.saved[-1][0])["grpo_step"], 2)
        # every GRPO step reported its episodes, successes and each component's raw mean
        grpo = [m for s, m in run.logged if s > SFT_STEPS and "episodes" in m]
        self.assertEqual(len(grpo), 2)
        used = dict(run.weights_logged)
        self.assertTrue(all(w == {} for s, w in run.weights_logged if s <= SFT_STEPS), "an SFT step weighed no reward")
        for (s, m) in [(s, m) for s, m in run.logged if s > SFT_STEPS and "episodes" in m]:
            # the step's total is its raw components under the weights it logged (penalty and cost as they are)
            w = used[s]
            want = m["reward/penalty/raw"] + m["reward/cost/raw"] + sum(w.get(c, 0.0) * m["reward/%s/raw" % c] for c in self.ex.WEIGHTED)
            self.assertAlmostEqual(m["reward/total"], want, places=9)
        for m in grpo:
            self.assertEqual(m["episodes"], 16)
            for c in self.ex.COMPONENTS:
                self.assertIn("reward/%s/raw" % c, m)
            # the policy's statistics are means over the trained rows: none when no group had a signal
            if m["grpo/informative_groups"] == 0:
                self.assertEqual([m[k] for k in ("policy/loss", "policy/kl", "policy/entropy")], [None] * 3)
            else:
                self.assertGreater(m["policy/entropy"], 0)
                self.assertGreaterEqual(m["policy/kl"], 0)
        # a sampled trajectory for the console at the logging step
        (step, sample), = run.samples
        self.assertEqual(step, stop_at)
        self.assertTrue(sample["question"].endswith("?"))
        self.assertTrue(sample["actions"] and all(isinstance(a, str) for a in sample["actions"]))

    def test_edits_apply_from_their_step_and_resume_keeps_them(self):
        at = SFT_STEPS + 1  # edits taken at the boundary after this step: GRPO steps from at + 1 on use them
        lr, kl = Command("edit", {"field": "grpo_lr", "value": 3e-3}), Command("edit", {"field": "kl_coef", "value": 0.2})
        run = ScriptedRun({at: [lr, kl]}, {"final": 1.0, "coherence": 0.0, "curiosity": 0.0})
        original = self.ex.connect
        self.ex.connect = lambda args: run
        try:
            full = os.path.join(self.tmp.name, "edited")
            self.run_example(*self.argv(full, "--checkpoint-every", "1"))
        finally:
            self.ex.connect = original
        self.assertEqual((lr.acks, kl.acks), ([(True, "")], [(True, "")]))
        last = SFT_STEPS + GRPO_STEPS
        before, after = torch.load(self.ckpt(full, at - 1)), torch.load(self.ckpt(full, last))
        self.assertEqual((before["args"]["grpo_lr"], before["args"]["kl_coef"]), (1e-3, 0.05))
        self.assertEqual((after["args"]["grpo_lr"], after["args"]["kl_coef"]), (3e-3, 0.2))
        self.assertEqual(after["optimizer"]["param_groups"][0]["lr"], 3e-3)
        # resumed after the edits, with no channel: the same run as the edited one
        resumed = os.path.join(self.tmp.name, "edited-resumed")
        self.run_example(*self.argv(resumed, "--resume", self.ckpt(full, at + 1)))
        b = torch.load(self.ckpt(resumed, last))
        for k in after["model"]:
            self.assertTrue(torch.equal(after["model"][k], b["model"][k]), "weight %s differs after resume" % k)
        self.assertEqual(after["results"], b["results"])

    def test_two_ranks_under_torchrun_resume_exactly(self):
        """DDP over gloo, each rank its own vectors: a run resumed from a mid-GRPO checkpoint ends with
        the weights of the uninterrupted one."""
        full, resumed = os.path.join(self.tmp.name, "ddp-full"), os.path.join(self.tmp.name, "ddp-resumed")
        last = SFT_STEPS + GRPO_STEPS
        small = ("--val-tasks", "8", "--test-tasks", "8")  # two processes start twice: keep the rest small
        self.torchrun(*self.argv(full, "--checkpoint-every", str(last - 2), *small))
        self.torchrun(*self.argv(resumed, "--resume", self.ckpt(full, last - 2), *small))
        a, b = torch.load(self.ckpt(full, last)), torch.load(self.ckpt(resumed, last))
        self.assertEqual((a["world_size"], len(a["generators"])), (2, 2))
        for k in a["model"]:
            self.assertTrue(torch.equal(a["model"][k], b["model"][k]), "weight %s differs after resume" % k)
        self.assertEqual(a["results"], b["results"])

    def torchrun(self, *argv):
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # Debian's torch 1.13 under Python 3.11 cannot parse torchrun's default --redirects 0 / --tee 0
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
               "--master_port", str(port), "--redirects", "1:1", "--tee", "0:1",
               os.path.join(REPO, "examples", "pixel_grpo.py"), *argv]
        env = dict(os.environ, PIXELIS_SERVE_TOKEN=self.server.token, OMP_NUM_THREADS="1")
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, "torchrun: %s\n%s" % (p.stdout[-3000:], p.stderr[-3000:]))

    def test_no_server_is_one_line_naming_it(self):
        """Without a running serve: exit 1, one line naming the URL and how to start serve, no traceback."""
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            url = "http://127.0.0.1:%d" % s.getsockname()[1]
        p = subprocess.run([sys.executable, os.path.join(REPO, "examples", "pixel_grpo.py"), "--serve", url],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot reach pixelis serve at %s (Connection refused): start it with `pixelis serve`" % url, p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_non_finite_gradient_never_reaches_the_weights(self):
        args = self.ex.parse_args(["--serve", self.server.url])
        spec_layout = self.layout()
        st = self.ex.State(args, spec_layout, 100, self.ex.Ranks())
        before = {k: v.clone() for k, v in st.net.state_dict().items()}
        obs = torch.zeros(2, spec_layout["width"])
        self.ex.update(st, st.net(obs).sum() * float("nan"), args)
        self.assertEqual(st.skipped, 1)
        for k, v in st.net.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), "%s changed by a NaN loss" % k)
        self.ex.update(st, st.net(obs).logsumexp(1).sum(), args)  # a finite one does change them
        self.assertEqual(st.skipped, 1)
        self.assertFalse(all(torch.equal(v, before[k]) for k, v in st.net.state_dict().items()))

    def layout(self):
        client = Client(self.server.url, token=self.server.token)
        try:
            return client.spec()["observation"]["coarse"]["layout"]
        finally:
            client.close()


if __name__ == "__main__":
    unittest.main()
