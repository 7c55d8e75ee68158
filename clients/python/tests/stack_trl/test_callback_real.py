"""pixelis.trl.PixelisCallback under the real transformers.Trainer and TRL's
GRPOTrainer (the pinned TRL stack, clients/python/locks/trl.txt), training a
tiny randomly initialised causal LM (tiny.py) with a protocol peer
(launch_peer.ProtocolPeer) on the other end of the channel: a checkpoint
command makes the Trainer write checkpoint-N and the event names it; pause
holds the optimizer steps while heartbeats go on; evaluate runs the Trainer's
evaluation; stop ends training with a checkpoint; resume_from_checkpoint goes
on from the checkpoint's step; SIGTERM under transformers' own handler saves,
reports and stops; a stage changes the weighted reward GRPOTrainer computes,
from the step after the one it was applied at; a fork's edits, carried by
its welcome, train its first optimizer step; under `accelerate launch` (two
processes, gloo) pause, a stage and stop reach both ranks at the same step.

Run by `go test ./clients/python` (TestTRLStack) with the stack's interpreter;
these tests need transformers and TRL, which Debian's interpreter lacks, so
they live outside the directory its tests are discovered in."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import transformers

import pixelis
import tiny
from launch_peer import ProtocolPeer, WAIT_S
from pixelis.trl import PixelisCallback

transformers.logging.set_verbosity_error()


class Base(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="pxl-real-")
        self.addCleanup(shutil.rmtree, self.out, True)

    def peer(self, weights=None, resume=None):
        p = ProtocolPeer(stage={"index": 0, "name": "warmup", "weights": weights or {}}, heartbeat_every_s=0.2,
                         resume=resume)
        self.addCleanup(p.close)
        return p

    def start(self, trainer):
        th = threading.Thread(target=trainer.train, daemon=True)
        th.start()
        self.addCleanup(th.join, WAIT_S)
        return th

    def stop(self, p, th, checkpoint=False):
        self.assertTrue(p.wait_ack(p.command("stop", {"checkpoint": checkpoint}))["ok"])
        th.join(WAIT_S)
        self.assertFalse(th.is_alive(), "the Trainer did not stop")


class Installed(unittest.TestCase):
    def test_pixelis_is_the_installed_package_not_the_source_tree(self):
        src = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "pixelis")
        self.assertNotEqual(os.path.dirname(os.path.abspath(pixelis.__file__)), src)


class SFT(Base):
    """transformers.Trainer on next-token prediction."""

    def trainer(self, max_steps=10 ** 6, **args):
        return tiny.sft_trainer(self.out, max_steps, **args)

    def test_a_run_to_its_end_logs_every_step_and_says_done(self):
        p = self.peer()
        tr = self.trainer(max_steps=3)
        tr.add_callback(PixelisCallback(tr, channel=p.path))
        tr.train()
        p.wait_type("done")
        self.assertEqual(p.of("phase"), [{"type": "phase", "name": "sft", "step": 0}])
        steps = [m["step"] for m in p.of("metrics") if "loss" in m["metrics"]]
        self.assertEqual(steps, [1, 2, 3])

    def test_checkpoint_evaluate_and_stop_are_carried_out_by_the_trainer(self):
        p = self.peer()
        tr = self.trainer()
        tr.add_callback(PixelisCallback(tr, channel=p.path))
        th = self.start(tr)
        p.wait_type("metrics")
        self.assertTrue(p.wait_ack(p.command("checkpoint"))["ok"])
        ev = p.of("checkpoint")[0]
        self.assertEqual(os.path.basename(ev["path"]), "checkpoint-%d" % ev["step"])
        self.assertTrue(os.path.isfile(os.path.join(ev["path"], "trainer_state.json")), os.listdir(ev["path"]))
        self.assertTrue(p.wait_ack(p.command("evaluate"))["ok"])
        p.wait_for(lambda ms: any(m.get("type") == "metrics" and "eval_loss" in m["metrics"] for m in ms), "eval_loss")
        self.stop(p, th, checkpoint=True)
        last = p.of("checkpoint")[-1]
        self.assertEqual(last["step"], tr.state.global_step)
        self.assertTrue(os.path.isdir(last["path"]))
        p.wait_disconnected()
        self.assertEqual(p.of("done"), [])  # stopped early

    def test_pause_holds_the_optimizer_steps_while_heartbeats_go_on(self):
        p = self.peer()
        tr = self.trainer()
        cb = PixelisCallback(tr, channel=p.path)
        tr.add_callback(cb)
        th = self.start(tr)
        p.wait_type("metrics")
        p.wait_ack(p.command("pause"))
        p.wait_for(lambda ms: cb.run.paused, "paused")
        at = tr.state.global_step
        beats = len(p.of("heartbeat"))
        p.wait_type("heartbeat", beats + 3)
        self.assertEqual(tr.state.global_step, at)
        p.wait_ack(p.command("resume"))
        p.wait_for(lambda ms: any(m.get("type") == "metrics" and m["step"] > at + 2 for m in ms), "steps after resume")
        self.stop(p, th)


    def test_resume_from_checkpoint_goes_on_from_its_step(self):
        p = self.peer()
        tr = self.trainer()
        tr.add_callback(PixelisCallback(tr, channel=p.path))
        th = self.start(tr)
        p.wait_type("metrics", 2)
        self.assertTrue(p.wait_ack(p.command("checkpoint"))["ok"])
        ck = p.of("checkpoint")[0]
        self.stop(p, th)
        # `pixelis resume` restarts the trainer; its welcome names the checkpoint.
        p2 = self.peer(resume={"step": ck["step"], "checkpoint": ck["path"]})
        tr2 = self.trainer(max_steps=ck["step"] + 3)
        cb = PixelisCallback(tr2, channel=p2.path)
        tr2.add_callback(cb)
        self.assertEqual(cb.run.resume, {"step": ck["step"], "checkpoint": ck["path"]})
        tr2.train(resume_from_checkpoint=cb.run.resume["checkpoint"])
        p2.wait_type("done")
        self.assertEqual(p2.of("phase")[0]["step"], ck["step"])
        steps = [m["step"] for m in p2.of("metrics") if "loss" in m["metrics"]]
        self.assertEqual(steps, [ck["step"] + 1, ck["step"] + 2, ck["step"] + 3])

    def test_sigterm_with_transformers_own_handler_saves_and_stops(self):
        """transformers' handler (enable_jit_checkpoint) stays; the checkpoint
        it saves reaches pixelis, and the run is stopped, not done."""
        p = self.peer()
        here = os.path.dirname(os.path.abspath(__file__))
        log = open(os.path.join(self.out, "trainer.log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen([sys.executable, os.path.join(here, "sigterm_trainer.py"), os.path.join(self.out, "run")],
                                env=p.env(), stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(proc.kill)
        p.wait_for(lambda ms: any(m.get("type") == "metrics" for m in ms) or proc.poll() is not None, "metrics")
        self.assertIsNone(proc.poll(), "the trainer exited before training")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(WAIT_S)
        log.seek(0)
        self.assertEqual(code, 0, log.read()[-3000:])
        p.wait_disconnected()
        cks = p.of("checkpoint")
        self.assertEqual(len(cks), 1, p.messages[-5:])
        self.assertEqual(os.path.basename(cks[0]["path"]), "checkpoint-%d" % cks[0]["step"])
        self.assertTrue(os.path.isfile(os.path.join(cks[0]["path"], "trainer_state.json")))
        self.assertFalse(os.path.exists(os.path.join(cks[0]["path"], "checkpoint-is-incomplete.txt")))
        self.assertEqual(p.of("done"), [])


class GRPO(Base):
    """TRL's GRPOTrainer, two constant reward functions: the weighted reward it
    logs is the weights' dot product with (1, 0.5), whatever the completions."""

    def trainer(self, max_steps=10 ** 6):
        return tiny.grpo_trainer(self.out, max_steps=max_steps)

    def test_checkpoint_pause_evaluate_and_stop(self):
        p = self.peer()
        tr = self.trainer()
        cb = PixelisCallback(tr, channel=p.path)
        tr.add_callback(cb)
        th = self.start(tr)
        p.wait_type("metrics")
        self.assertTrue(p.wait_ack(p.command("checkpoint"))["ok"])
        ck = p.of("checkpoint")[0]
        self.assertEqual(os.path.basename(ck["path"]), "checkpoint-%d" % ck["step"])
        self.assertTrue(os.path.isfile(os.path.join(ck["path"], "trainer_state.json")))
        p.wait_ack(p.command("pause"))
        p.wait_for(lambda ms: cb.run.paused, "paused")
        at = tr.state.global_step
        p.wait_type("heartbeat", len(p.of("heartbeat")) + 3)
        self.assertEqual(tr.state.global_step, at)
        p.wait_ack(p.command("resume"))
        self.assertTrue(p.wait_ack(p.command("evaluate"))["ok"])
        p.wait_for(lambda ms: any(m.get("type") == "metrics" and "eval_reward" in m["metrics"] for m in ms), "eval_reward")
        self.stop(p, th, checkpoint=True)
        self.assertEqual(p.of("checkpoint")[-1]["step"], tr.state.global_step)
        self.assertTrue(os.path.isdir(p.of("checkpoint")[-1]["path"]))

    def test_a_stage_changes_the_weighted_reward_from_the_next_step(self):
        p = self.peer(weights={"one": 1.0})
        tr = self.trainer()
        tr.add_callback(PixelisCallback(tr, channel=p.path))
        th = self.start(tr)
        p.wait_type("metrics")
        hello = p.of("hello")[0]
        self.assertEqual(hello["components"], ["one", "half"])
        cid = p.command("stage", {"index": 1, "name": "more", "weights": {"one": 3.0}})
        self.assertTrue(p.wait_ack(cid)["ok"])
        with p._cv:
            at = next(i for i, (_, m) in enumerate(p.messages) if m.get("type") == "ack" and m.get("id") == cid)
        # The step whose boundary applied the stage logs after the ack, scored before it.
        p.wait_for(lambda ms: len([m for m in ms[at:] if m.get("type") == "metrics"]) >= 3, "three steps after the stage")
        self.stop(p, th)
        with p._cv:  # the steps' metrics (not the summary train() logs at its end)
            before = [m for _, m in p.messages[:at] if m.get("type") == "metrics" and "reward" in m["metrics"]]
            after = [m for _, m in p.messages[at:] if m.get("type") == "metrics" and "reward" in m["metrics"]]
        applied = after[0]["step"]
        self.assertEqual({m["metrics"]["reward"] for m in before + after[:1]}, {1.5}, "before the stage")
        self.assertEqual({m["metrics"]["reward"] for m in after[1:]}, {3.5}, "after the stage (applied at step %d)" % applied)
        self.assertEqual(after[1]["step"], applied + 1)
        self.assertEqual(after[1]["metrics"]["reward/one/raw"], 1.0)

    def test_a_forks_edits_train_its_first_step(self):
        # A fork's trainer: its welcome carries the edits, from the step it starts from + 1.
        edits = [{"type": "command", "id": i + 1, "kind": "edit", "args": {"field": f, "value": v, "source": "fork"},
                  "from_step": 1} for i, (f, v) in enumerate((("beta", 0.25), ("learning_rate", 2e-3)))]
        p = ProtocolPeer(stage={"index": 0, "name": "warmup", "weights": {}}, heartbeat_every_s=0.2, welcome_commands=edits)
        self.addCleanup(p.close)
        saved = tiny.saved_model(os.path.join(self.out, "model"))
        tr = tiny.grpo_trainer(self.out, max_steps=2, model_path=saved, beta=0.04, lr_scheduler_type="constant")
        seen = {}

        class Probe(transformers.TrainerCallback):  # what the first optimizer step trains with
            def on_pre_optimizer_step(self, args, state, control, **kwargs):
                seen.setdefault("beta", tr.beta)
                seen.setdefault("lr", tr.optimizer.param_groups[0]["lr"])

        tr.add_callback(PixelisCallback(tr, channel=p.path))
        tr.add_callback(Probe())
        tr.train()
        p.wait_type("done")
        self.assertEqual(p.of("hello")[0].get("welcome_commands"), True)
        self.assertEqual(seen["beta"], 0.25)
        self.assertAlmostEqual(seen["lr"], 2e-3)
        first = next(m for m in p.of("metrics") if m["step"] == 1)
        self.assertAlmostEqual(first["metrics"]["learning_rate"], 2e-3, msg="the rate the Trainer logs for step 1")
        for c in edits:
            ack = p.wait_ack(c["id"])
            self.assertTrue(ack["ok"], ack)
            self.assertEqual(ack["from_step"], 1, "the edit of %s applies from the fork's first step" % c["args"]["field"])

    def test_a_resumed_run_goes_on_with_the_edited_beta_and_learning_rate(self):
        p = self.peer()
        saved = tiny.saved_model(os.path.join(self.out, "model"))  # beta > 0: GRPOTrainer loads a reference model from it
        tr = tiny.grpo_trainer(self.out, model_path=saved, beta=0.04)
        tr.add_callback(PixelisCallback(tr, channel=p.path))
        th = self.start(tr)
        p.wait_type("metrics")
        for field, value in (("beta", 0.25), ("learning_rate", 2e-3)):
            self.assertTrue(p.wait_ack(p.command("edit", {"field": field, "value": value}))["ok"])
        self.assertTrue(p.wait_ack(p.command("checkpoint"))["ok"])
        ck = p.of("checkpoint")[0]
        self.stop(p, th)
        with open(os.path.join(ck["path"], "trainer_state.json")) as f:
            self.assertEqual(json.load(f)["stateful_callbacks"]["pixelis"], {"edits": {"beta": 0.25, "learning_rate": 2e-3}})
        # `pixelis resume`: a new trainer, built with the constructor's beta and learning rate.
        p2 = self.peer(resume={"step": ck["step"], "checkpoint": ck["path"]})
        tr2 = tiny.grpo_trainer(self.out, max_steps=ck["step"] + 2, model_path=saved, beta=0.04, lr_scheduler_type="constant")
        seen = {}

        class Probe(transformers.TrainerCallback):  # what the first resumed step trains with
            def on_step_begin(self, args, state, control, **kwargs):
                seen.setdefault("beta", tr2.beta)
                seen.setdefault("lr", tr2.optimizer.param_groups[0]["lr"])

        cb = PixelisCallback(tr2, channel=p2.path)
        tr2.add_callback(cb)
        tr2.add_callback(Probe())
        self.assertEqual(tr2.beta, 0.04)
        tr2.train(resume_from_checkpoint=cb.run.resume["checkpoint"])
        p2.wait_type("done")
        self.assertEqual(seen["beta"], 0.25)
        self.assertAlmostEqual(seen["lr"], 2e-3)
        self.assertEqual(tr2.args.learning_rate, 2e-3)  # the rate a further edit scales from


class Accelerate(Base):
    """GRPOTrainer as two processes under `accelerate launch` (CPU, gloo):
    pause, a stage and stop reach both ranks at the same step."""

    def test_pause_stage_and_stop_reach_both_ranks_at_the_same_step(self):
        p = self.peer(weights={"one": 1.0})
        here = os.path.dirname(os.path.abspath(__file__))
        with socket.socket() as sk:  # a free port for the rendezvous
            sk.bind(("127.0.0.1", 0))
            port = sk.getsockname()[1]
        log = open(os.path.join(self.out, "accelerate.log"), "w+")
        self.addCleanup(log.close)
        # --multi_gpu: accelerate launch starts several processes only through torchrun (or mpirun);
        # the Trainer (use_cpu) then runs them on the CPU over gloo.
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port),
               os.path.join(here, "accelerate_worker.py"), self.out]
        proc = subprocess.Popen(cmd, env=dict(p.env(), OMP_NUM_THREADS="1"), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.addCleanup(lambda: proc.poll() is None and os.killpg(proc.pid, signal.SIGKILL))

        def failed():
            log.seek(0)
            return "accelerate exited %s:\n%s" % (proc.poll(), log.read()[-4000:])

        p.wait_for(lambda ms: any(m.get("type") == "metrics" for m in ms) or proc.poll() is not None, "metrics", 300)
        self.assertIsNone(proc.poll(), failed())
        self.assertEqual(len(p.of("hello")), 1)  # one channel, rank 0's
        p.wait_ack(p.command("pause"))
        paused_at = time.monotonic()
        p.wait_type("heartbeat", len(p.of("heartbeat")) + 3)
        resumed_at = time.monotonic()
        p.wait_ack(p.command("resume"))
        self.assertTrue(p.wait_ack(p.command("stage", {"index": 1, "name": "more", "weights": {"one": 3.0}}))["ok"])
        p.wait_for(lambda ms: len([m for m in ms if m.get("type") == "metrics"]) >= 8, "steps after the stage")
        self.assertTrue(p.wait_ack(p.command("stop", {"checkpoint": False}))["ok"])
        self.assertEqual(proc.wait(WAIT_S), 0, failed())
        ranks = []
        for r in (0, 1):
            with open(os.path.join(self.out, "rank%d.json" % r)) as f:
                ranks.append(json.load(f))
        self.assertEqual([(rk["world_size"], rk["distributed"]) for rk in ranks], [(2, 2), (2, 2)])
        self.assertEqual(ranks[0]["changes"], ranks[1]["changes"])  # the same weights from the same step
        self.assertEqual([w for _, w in ranks[0]["changes"]], [[1.0, 1.0], [3.0, 1.0]])
        self.assertEqual(ranks[0]["last_step"], ranks[1]["last_step"])
        for rk in ranks:  # paused: at most the step that was ending when the pause came
            held = [step for step, t in rk["ends"] if paused_at < t < resumed_at]
            self.assertLessEqual(len(held), 1, "steps ended while paused: %s" % held)


if __name__ == "__main__":
    unittest.main()
