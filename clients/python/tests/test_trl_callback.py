"""pixelis.trl.PixelisCallback against a stand-in of transformers' callback
interface and TRL's GRPOTrainer reward weighting (trainer_standin), with a
protocol peer (launch_peer.ProtocolPeer) on the other end of the channel:
on_log keeps None and maps reward means, a stage sets reward_weights in
reward_funcs order, a stage naming a function the trainer lacks is refused
at connect, and the Trainer's SIGTERM handler stays. Commands, pause and two
ranks are tested under the real Trainer (stack_trl/test_callback_real.py).
Needs torch (skips without it, fails under CI=true)."""

import os
import shutil
import signal
import tempfile
import threading
import unittest

from launch_peer import ProtocolPeer, WAIT_S
from serve_fixture import need

torch = need("torch")

import trainer_standin  # noqa: E402 (needs torch)

trainer_standin.install()

from pixelis import sdk  # noqa: E402
from pixelis.trl import PixelisCallback  # noqa: E402


def accuracy(i):
    return float(i % 2)


def fmt(i):
    return 1.0


def length(i):
    return i / 10


class Callback(unittest.TestCase):
    def setUp(self):
        self.old_sigterm = signal.getsignal(signal.SIGTERM)
        self.addCleanup(signal.signal, signal.SIGTERM, self.old_sigterm)
        self.out = tempfile.mkdtemp(prefix="pxl-trl-")
        self.addCleanup(shutil.rmtree, self.out, True)

    def trainer(self, max_steps=10 ** 6, weights=(1.0, 1.0, 0.5)):
        args = trainer_standin.TrainingArguments(self.out, max_steps=max_steps, reward_weights=list(weights))
        return trainer_standin.GRPOTrainer([accuracy, fmt, length], args)

    def peer(self, weights=None):
        p = ProtocolPeer(stage={"index": 0, "name": "warmup", "weights": weights or {"accuracy": 1.0}}, heartbeat_every_s=0.2)
        self.addCleanup(p.close)
        return p

    def start(self, trainer):
        th = threading.Thread(target=trainer.train, daemon=True)
        th.start()
        return th

    def test_built_outside_launch_it_changes_nothing(self):
        tr = self.trainer(max_steps=3)
        env = os.environ.pop(sdk.CHANNEL_ENV, None)
        try:
            cb = PixelisCallback(tr)
        finally:
            if env is not None:
                os.environ[sdk.CHANNEL_ENV] = env
        tr.add_callback(cb)
        tr.train()
        self.assertFalse(cb.run.active)
        self.assertEqual(tr.state.global_step, 3)
        self.assertEqual(tr.reward_weights.tolist(), [1.0, 1.0, 0.5])

    def test_logs_keep_none_and_reward_means_become_raw_components(self):
        p = self.peer()
        tr = self.trainer(max_steps=3)
        cb = PixelisCallback(tr, channel=p.path)
        tr.add_callback(cb)
        tr.train()
        hello = p.of("hello")[0]
        self.assertEqual(hello["components"], ["accuracy", "fmt", "length"])
        self.assertEqual(hello["config"]["max_steps"], 3)
        p.wait_type("done")
        ms = p.of("metrics")
        self.assertEqual([m["step"] for m in ms], [1, 2, 3])
        self.assertIsNone(ms[0]["metrics"]["kl"])
        self.assertIn("kl", ms[0]["metrics"])
        self.assertEqual(ms[0]["metrics"]["reward/accuracy/raw"], ms[0]["metrics"]["rewards/accuracy/mean"])
        self.assertEqual(ms[0]["metrics"]["reward/length/raw"], tr.state.log_history[0]["rewards/length/mean"])
        self.assertEqual(p.of("phase"), [{"type": "phase", "name": "rft", "step": 0}])

    def test_a_stage_sets_reward_weights_in_reward_funcs_order(self):
        p = self.peer(weights={"accuracy": 2.0})
        tr = self.trainer()
        cb = PixelisCallback(tr, channel=p.path)
        self.assertEqual(tr.reward_weights.tolist(), [2.0, 1.0, 0.5])  # pixelis's first stage, from the welcome
        tr.add_callback(cb)
        th = self.start(tr)
        p.wait_type("metrics")
        cid = p.command("stage", {"index": 1, "name": "format", "weights": {"fmt": 0.25, "accuracy": 3.0}})
        self.assertTrue(p.wait_ack(cid)["ok"])
        self.assertEqual(tr.reward_weights.dtype, torch.float32)
        self.assertEqual(tr.reward_weights.tolist(), [3.0, 0.25, 0.5])  # length kept its own weight
        bad = p.command("stage", {"index": 2, "name": "bleu", "weights": {"bleu": 1.0}})
        ack = p.wait_ack(bad)
        self.assertFalse(ack["ok"])
        self.assertIn("'bleu'", ack["reason"])
        p.wait_ack(p.command("stop"))
        th.join(WAIT_S)
        self.assertEqual(tr.reward_weights.tolist(), [3.0, 0.25, 0.5])
        self.assertEqual(cb.run.stage.name, "format")
        # The scoring after the stage used the new weights.
        last = tr.weights_used[max(tr.weights_used)]
        self.assertEqual(last.tolist(), [3.0, 0.25, 0.5])

    def test_a_stage_applies_from_the_next_generation_batch_and_steps_log_their_weights(self):
        p = self.peer(weights={"accuracy": 2.0})
        args = trainer_standin.TrainingArguments(self.out, max_steps=10 ** 6, reward_weights=[1.0, 1.0, 0.5],
                                                 steps_per_generation=6, gradient_accumulation_steps=2)
        tr = trainer_standin.GRPOTrainer([accuracy, fmt, length], args)  # a generation batch every 3 steps
        cb = PixelisCallback(tr, channel=p.path)
        tr.add_callback(cb)
        th = self.start(tr)
        p.wait_type("metrics", 4)
        cid = p.command("stage", {"index": 1, "name": "format", "weights": {"fmt": 0.25}})
        at = p.wait_ack(cid)["from_step"]
        self.assertEqual((at - 1) % 3, 0, "the stage applies from step %d, not the first of a generation batch" % at)
        p.wait_for(lambda ms: any(m.get("type") == "metrics" and m["step"] >= at + 3 for m in ms), "steps after the stage")
        p.wait_ack(p.command("stop"))
        th.join(WAIT_S)
        for m in p.of("metrics"):
            used = dict(zip(["accuracy", "fmt", "length"], tr.weights_used[m["step"] - 1].tolist()))
            self.assertEqual(m["weights"], used, "step %d" % m["step"])
            self.assertEqual(m["weights"]["fmt"], 0.25 if m["step"] >= at else 1.0, "step %d" % m["step"])

    def test_edits_of_the_learning_rate_and_beta_keep_the_schedules_shape(self):
        p = self.peer()
        tr = self.trainer()
        tr.beta = 0.04
        w = torch.nn.Parameter(torch.zeros(2))
        tr.optimizer = torch.optim.SGD([w], lr=tr.args.learning_rate)
        tr.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(tr.optimizer, lambda step: 0.5)  # the schedule at this step: ½ the base
        cb = PixelisCallback(tr, channel=p.path)
        self.assertEqual(p.wait_type("hello")[0]["editable"], {"learning_rate": [0.0, 1.0], "beta": [0.0, 100.0]})
        tr.add_callback(cb)
        th = self.start(tr)
        p.wait_type("metrics")
        lr = p.command("edit", {"field": "learning_rate", "value": 4 * tr.args.learning_rate}, from_step=1)
        beta = p.command("edit", {"field": "beta", "value": 0.1}, from_step=1)
        bad = p.command("edit", {"field": "epsilon", "value": 0.1}, from_step=1)
        self.assertTrue(p.wait_ack(lr)["ok"])
        self.assertTrue(p.wait_ack(beta)["ok"])
        self.assertFalse(p.wait_ack(bad)["ok"])
        p.wait_ack(p.command("stop"))
        th.join(WAIT_S)
        self.assertEqual(tr.beta, 0.1)
        self.assertAlmostEqual(tr.lr_scheduler.base_lrs[0], 4e-6)
        self.assertAlmostEqual(tr.optimizer.param_groups[0]["lr"], 2e-6)  # still ½ the (new) base

    def test_after_a_reconnect_the_welcomes_stage_sets_reward_weights(self):
        p = self.peer(weights={"accuracy": 2.0})
        tr = self.trainer()
        tr.add_callback(PixelisCallback(tr, channel=p.path))
        th = self.start(tr)
        p.wait_type("metrics")
        p.stage = {"index": 2, "name": "late", "weights": {"length": 0.0}}
        p.drop()
        p.wait_type("hello", 2)
        p.wait_for(lambda ms: tr.reward_weights.tolist() == [1.0, 1.0, 0.0], "the new stage's weights")
        p.wait_ack(p.command("stop"))
        th.join(WAIT_S)
        self.assertFalse(th.is_alive())

    def test_a_stage_naming_a_function_the_trainer_lacks_is_refused_at_connect(self):
        with self.assertRaisesRegex(ValueError, "'bleu' names no reward function"):
            PixelisCallback(self.trainer(), default_weights={"accuracy": 1.0, "bleu": 1.0}, channel="")
        p = self.peer(weights={"accuracy": 1.0, "bleu": 0.5})
        with self.assertRaisesRegex((ValueError, sdk.Refused), "'bleu'"):
            PixelisCallback(self.trainer(), channel=p.path)
        p.wait_disconnected()

    def test_the_trainers_sigterm_handler_stays(self):
        p = self.peer()
        tr = self.trainer(max_steps=2)
        handler = signal.getsignal(signal.SIGTERM)
        self.assertIs(handler, tr.sigterm_handler)
        tr.add_callback(PixelisCallback(tr, channel=p.path))
        tr.train()
        self.assertIs(signal.getsignal(signal.SIGTERM), handler)


if __name__ == "__main__":
    unittest.main()
