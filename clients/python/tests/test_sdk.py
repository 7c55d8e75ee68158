"""The launch SDK (pixelis.sdk) against a protocol peer on a real unix socket
(launch_peer.ProtocolPeer, the pixelis side of docs/launch-protocol.md):
the handshake, metrics with None, commands and their acks, stages, pause
blocking while heartbeats go on, the queue that drops and counts instead of
blocking, reconnects, done, the no-op Run outside launch and the plain
training loop; the command board that gives several ranks of one node the
same commands at the same step boundary. Every wait is for a state of the peer or of the Run."""

import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from pixelis import _board, _channel, sdk
from launch_peer import ProtocolPeer, WAIT_S

COMPONENTS = ["final", "coherence", "cost"]


class Trainer(threading.Thread):
    """A training loop in a thread: log and step_boundary each step, until a
    stop command or `steps`; what step_boundary returned is kept per step."""

    def __init__(self, run, steps=10 ** 9, on_command=None):
        super().__init__(daemon=True)
        self.r, self.steps, self.on_command = run, steps, on_command
        self.halt = threading.Event()
        self.step = -1
        self.returned = {}
        self.error = None
        self.cv = threading.Condition()

    def run_loop(self):
        for step in range(self.steps):
            if self.halt.is_set():
                return
            self.r.log(step, {"episodes": 4, "successes": 2, "reward/final/raw": 0.5})
            cmds = self.r.step_boundary(step)
            with self.cv:
                self.step = step
                if cmds:
                    self.returned[step] = cmds
                self.cv.notify_all()
            for c in cmds:
                if self.on_command:
                    self.on_command(step, c)
                if c.kind == "stop":
                    c.ack()
                    return

    def run(self):  # noqa: the thread's body
        try:
            self.run_loop()
        except BaseException as e:  # reported by the test
            self.error = e

    def wait_step(self, pred, what):
        deadline = time.monotonic() + WAIT_S
        with self.cv:
            while not pred(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the trainer never reached: " + what)
                self.cv.wait(left)


class Standalone(unittest.TestCase):
    def test_without_channel_a_run_does_nothing(self):
        env = os.environ.pop(sdk.CHANNEL_ENV, None)
        try:
            with sdk.connect(components=COMPONENTS, reports=["episodes"], default_weights={"final": 1.0}) as run:
                self.assertFalse(run.active)
                self.assertFalse(run.holds_channel)
                self.assertEqual(run.stage.weights, {"final": 1.0})
                run.log(0, {"x": 1.0})
                run.sample(0, {"question": "q"})
                run.checkpoint_saved("/tmp/x", 0)
                run.phase("sft")
                self.assertEqual(run.step_boundary(0), [])
                self.assertEqual(run.dropped, 0)
        finally:
            if env is not None:
                os.environ[sdk.CHANNEL_ENV] = env

    def test_default_weights_naming_an_undeclared_component_are_refused(self):
        with self.assertRaisesRegex(ValueError, "'accuracy' names no declared component"):
            sdk.connect(components=COMPONENTS, default_weights={"accuracy": 1.0}, channel="")


class ObservedLine(unittest.TestCase):
    def test_pixelis_form_is_read_without_json_and_any_other_form_is_left_to_json(self):
        self.assertEqual(_channel.observed_step(b'{"type":"observed","step":12}\n'), 12)
        self.assertEqual(_channel.observed_step(json.dumps({"type": "observed", "step": 7}, separators=(",", ":")).encode() + b"\n"), 7)
        for other in (b'{"type": "observed", "step": 12}\n', b'{"step":12,"type":"observed"}\n',
                      b'{"type":"observed","step":12,"x":1}\n', b'{"type":"observed","step":-1}\n',
                      b'{"type":"observed","step":12}', b'{"type":"observed","step":}\n', b'{"type":"command"}\n'):
            self.assertIsNone(_channel.observed_step(other), other)


class Channel(unittest.TestCase):
    def setUp(self):
        self.peer = ProtocolPeer(stage={"index": 1, "name": "shaping", "weights": {"final": 1.0, "coherence": 0.5}},
                                 heartbeat_every_s=0.2)
        self.addCleanup(self.peer.close)

    def connect(self, **kw):
        kw.setdefault("components", COMPONENTS)
        kw.setdefault("reports", ["episodes", "successes"])
        run = sdk.connect(channel=self.peer.path, **kw)
        self.addCleanup(run.close, 1.0)
        return run

    def test_handshake_declares_the_trainer_and_takes_the_welcome_stage(self):
        run = self.connect(config={"lr": 1e-4, "dir": os.path})  # a value JSON cannot hold goes as text
        hello = self.peer.wait_type("hello")[0]
        self.assertEqual(hello["version"], 2)
        self.assertEqual(hello["pid"], os.getpid())
        self.assertEqual((hello["rank"], hello["world_size"]), (0, 1))
        self.assertEqual(hello["components"], COMPONENTS)
        self.assertEqual(hello["reports"], ["episodes", "successes"])
        self.assertEqual(hello["config"]["lr"], 1e-4)
        self.assertIsInstance(hello["config"]["dir"], str)
        self.assertTrue(run.active and run.holds_channel)
        self.assertEqual(run.stage, sdk.Stage(1, "shaping", {"final": 1.0, "coherence": 0.5}))
        self.assertEqual(run.run_dir, "/nonexistent/run")

    def test_without_a_curriculum_the_default_weights_stay_and_resume_is_told(self):
        peer = ProtocolPeer(stage=None, resume={"step": 120, "checkpoint": "/ckpt/step-120.pt"})
        self.addCleanup(peer.close)
        run = sdk.connect(components=COMPONENTS, default_weights={"final": 1.0, "cost": 1.0}, total_steps=500,
                          channel=peer.path)
        self.addCleanup(run.close, 1.0)
        self.assertEqual(run.stage.weights, {"final": 1.0, "cost": 1.0})
        self.assertEqual(run.resume, {"step": 120, "checkpoint": "/ckpt/step-120.pt"})
        self.assertEqual(peer.of("hello")[0]["total_steps"], 500)

    def test_metrics_keep_none_and_send_non_finite_as_missing(self):
        run = self.connect()
        run.log(7, {"policy/loss": 0.25, "kl": None, "nan": float("nan"), "inf": math.inf, "episodes": 64, "flag": True})
        m = self.peer.wait_type("metrics")[0]
        self.assertEqual(m["step"], 7)
        self.assertEqual(m["metrics"], {"policy/loss": 0.25, "kl": None, "nan": None, "inf": None, "episodes": 64, "flag": 1})
        with self.assertRaisesRegex(TypeError, "metric 'bad'"):
            run.log(8, {"bad": "text"})

    def test_sample_checkpoint_phase_in_order(self):
        run = self.connect()
        run.phase("sft", step=0)
        run.sample(3, {"question": "which is red?", "actions": ["SEGMENT_OBJECT_AT"], "answer": "left", "correct": True,
                       "reward": 0.9})
        run.checkpoint_saved("ckpt/step-3.pt", 3)
        self.peer.wait_type("checkpoint")
        got = [m for m in self.peer.of("phase") + self.peer.of("sample") + self.peer.of("checkpoint")]
        self.assertEqual(got[0], {"type": "phase", "name": "sft", "step": 0})
        self.assertEqual(got[1]["sample"]["answer"], "left")
        self.assertEqual(got[2], {"type": "checkpoint", "step": 3, "path": os.path.abspath("ckpt/step-3.pt")})

    def test_a_validation_carries_each_tasks_attempts_and_greedy(self):
        run = self.connect()
        run.validation(12, {"t1": [True, False, 1], "t0": (False,)}, greedy={"t1": True, "t0": 0}, split="val")
        run.validation(13, {"t2": [True]})
        m = self.peer.wait_type("validation", 2)
        self.assertEqual(m[0], {"type": "validation", "step": 12, "split": "val",
                                "results": {"t1": [True, False, True], "t0": [False]}, "greedy": {"t1": True, "t0": False}})
        self.assertEqual(m[1], {"type": "validation", "step": 13, "split": "val", "results": {"t2": [True]}})
        with self.assertRaisesRegex(ValueError, "validation at step 14: results need at least one task, each with at least one attempt"):
            run.validation(14, {"t3": []})

    def test_commands_reach_the_trainer_and_are_acknowledged(self):
        run = self.connect()
        t = Trainer(run, on_command=lambda step, c: c.ack() if c.kind == "checkpoint" else
                    c.ack(False, "no evaluation here") if c.kind == "evaluate" else None)
        t.start()
        ck = self.peer.command("checkpoint")
        self.assertTrue(self.peer.wait_ack(ck)["ok"])
        ev = self.peer.command("evaluate")
        ack = self.peer.wait_ack(ev)
        self.assertEqual((ack["ok"], ack["reason"]), (False, "no evaluation here"))
        bad = self.peer.command("launch-missiles")
        self.assertIn("unknown command kind", self.peer.wait_ack(bad)["reason"])
        stop = self.peer.command("stop", {"checkpoint": False})
        self.assertTrue(self.peer.wait_ack(stop)["ok"])
        t.join(WAIT_S)
        self.assertIsNone(t.error)
        kinds = [c.kind for cmds in t.returned.values() for c in cmds]
        self.assertEqual(kinds, ["checkpoint", "evaluate", "stop"])  # the unknown kind was answered, not returned
        stop_cmd = [c for cmds in t.returned.values() for c in cmds][-1]
        self.assertEqual(stop_cmd.args, {"checkpoint": False})

    def test_a_stage_updates_run_stage_before_step_boundary_returns(self):
        run = self.connect()
        seen = {}
        t = Trainer(run, on_command=lambda step, c: seen.setdefault(c.kind, run.stage))
        t.start()
        st = {"index": 2, "name": "explore", "weights": {"final": 1.0, "coherence": 0.2, "cost": 1.0}}
        cid = self.peer.command("stage", st)
        self.assertTrue(self.peer.wait_ack(cid)["ok"])
        bad = self.peer.command("stage", {"index": 3, "name": "x", "weights": {"accuracy": 1.0}})
        ack = self.peer.wait_ack(bad)
        self.assertFalse(ack["ok"])
        self.assertIn("'accuracy' names no declared component", ack["reason"])
        self.peer.wait_ack(self.peer.command("stop"))
        t.join(WAIT_S)
        self.assertEqual(seen["stage"], sdk.Stage(2, "explore", st["weights"]))
        self.assertEqual(run.stage, sdk.Stage(2, "explore", st["weights"]))  # the refused one changed nothing

    def test_metrics_carry_the_weights_the_step_ran_with(self):
        run = self.connect()
        run.log(1, {"episodes": 4})
        run.log(2, {"episodes": 4}, weights={"final": 2.0})  # a trainer whose step used other weights says so
        ms = self.peer.wait_type("metrics", 2)
        self.assertEqual(ms[0]["weights"], {"final": 1.0, "coherence": 0.5})
        self.assertEqual(ms[1]["weights"], {"final": 2.0})

    def test_a_stage_applies_from_its_step_and_the_ack_names_it(self):
        run = self.connect()
        st = {"index": 2, "name": "explore", "weights": {"final": 1.0, "coherence": 0.2}}
        cid = self.peer.command("stage", st, from_step=5)
        with run._channel._inbox_cv:  # arrived: the first boundary takes it
            run._channel._inbox_cv.wait_for(lambda: run._channel._inbox, WAIT_S)
        stages = {}
        for step in range(1, 6):
            run.log(step, {"episodes": 4})
            run.step_boundary(step)
            stages[step + 1] = run.stage.name
        self.assertEqual(stages, {2: "shaping", 3: "shaping", 4: "shaping", 5: "explore", 6: "explore"})
        self.assertEqual(self.peer.wait_ack(cid)["from_step"], 5)
        ms = self.peer.wait_type("metrics", 5)
        self.assertEqual([m["weights"].get("coherence") for m in ms], [0.5, 0.5, 0.5, 0.5, 0.2])  # step 5 ran with it

    def test_an_edit_is_declared_and_reaches_its_callback_at_the_boundary_before_its_step(self):
        run = self.connect(editable={"lr": (0, 1)})
        self.assertEqual(self.peer.wait_type("hello")[0]["editable"], {"lr": [0.0, 1.0]})
        lr = {"now": 0.1}
        seen = []

        def take(c):
            seen.append((c.args["field"], c.args["value"], c.applies_from))
            lr["now"] = c.args["value"]

        run.on("edit", take)
        cid = self.peer.command("edit", {"field": "lr", "value": 0.5, "source": "console"}, from_step=4)
        with run._channel._inbox_cv:
            run._channel._inbox_cv.wait_for(lambda: run._channel._inbox, WAIT_S)
        used = {}
        for step in range(1, 5):
            run.step_boundary(step)
            used[step + 1] = lr["now"]
        self.assertEqual(used, {2: 0.1, 3: 0.1, 4: 0.5, 5: 0.5})
        self.assertEqual(seen, [("lr", 0.5, 4)])
        self.assertEqual(self.peer.wait_ack(cid)["from_step"], 4)

    def test_a_welcomes_edits_are_taken_at_the_boundary_before_the_first_step(self):
        edit = {"type": "command", "id": 7, "kind": "edit", "from_step": 41, "args": {"field": "lr", "value": 0.5, "source": "fork"}}
        peer = ProtocolPeer(stage=None, welcome_commands=[edit])
        self.addCleanup(peer.close)
        run = sdk.connect(components=COMPONENTS, channel=peer.path, editable={"lr": (0, 1)})
        self.addCleanup(run.close, 1.0)
        self.assertIs(peer.wait_type("hello")[0]["welcome_commands"], True)
        cmds = run.step_boundary(40)  # resumed at step 40: the boundary before step 41, no wait for the channel
        self.assertEqual([(c.kind, c.args["field"], c.applies_from) for c in cmds], [("edit", "lr", 41)])
        cmds[0].ack()
        self.assertEqual(peer.wait_ack(7)["from_step"], 41)

    def test_under_lockstep_the_boundary_waits_for_the_step_to_be_observed(self):
        peer = ProtocolPeer(stage=ProtocolPeer.WARMUP, lockstep=True)
        self.addCleanup(peer.close)
        run = sdk.connect(components=COMPONENTS, channel=peer.path)
        self.addCleanup(run.close, 1.0)
        peer.observing.clear()  # pixelis is still deciding on step 1
        run.log(1, {"episodes": 4})
        peer.wait_type("metrics")
        returned = []
        t = threading.Thread(target=lambda: returned.append(run.step_boundary(1)), daemon=True)
        t.start()
        cid = peer.command("stage", {"index": 1, "name": "next", "weights": {"final": 0.5}}, from_step=2)
        peer.observing.set()  # step 1 observed, after the stage it decided
        t.join(WAIT_S)
        self.assertEqual([c.kind for c in returned[0]], ["stage"])
        self.assertEqual(run.stage, sdk.Stage(1, "next", {"final": 0.5}))  # before step 2 began
        self.assertEqual(peer.wait_ack(cid)["from_step"], 2)

    def test_under_lockstep_a_pixelis_not_answering_is_waited_for_once(self):
        # pixelis alive but silent (SIGSTOP, stuck I/O): one step waits its
        # OBSERVED_TIMEOUT_S, warned once; the next go on until an observed
        # arrives, and then the wait is back.
        timeout = 0.5
        saved = sdk.OBSERVED_TIMEOUT_S
        sdk.OBSERVED_TIMEOUT_S = timeout
        self.addCleanup(setattr, sdk, "OBSERVED_TIMEOUT_S", saved)
        peer = ProtocolPeer(stage=ProtocolPeer.WARMUP, lockstep=True)
        self.addCleanup(peer.close)
        self.addCleanup(peer.observing.set)  # the peer's reader, held below, ends
        run = sdk.connect(components=COMPONENTS, channel=peer.path)
        self.addCleanup(run.close, 1.0)
        ch = run._channel

        def boundary(step):
            run.log(step, {"episodes": 4})
            t0 = time.monotonic()
            run.step_boundary(step)
            return time.monotonic() - t0

        peer.observing.clear()  # pixelis stops answering
        with self.assertLogs(sdk.log, "WARNING") as logs:
            self.assertGreaterEqual(boundary(1), timeout)
            for step in (2, 3, 4):
                self.assertLess(boundary(step), timeout / 2, "step %d waited for a pixelis not answering" % step)
            peer.observing.set()  # pixelis answers again, steps 1 to 4
            with ch._cv:
                self.assertTrue(ch._cv.wait_for(lambda: ch.observed == 4 and not ch.unanswered, WAIT_S))
            peer.observing.clear()
            self.assertGreaterEqual(boundary(5), timeout, "the wait did not come back with pixelis's answers")
        warned = [r for r in logs.output if "did not observe" in r]
        self.assertEqual(len(warned), 2, logs.output)

    def test_pause_blocks_step_boundary_while_heartbeats_go_on(self):
        run = self.connect()
        t = Trainer(run)
        t.start()
        t.wait_step(lambda t: t.step >= 2, "step 2")
        pause = self.peer.command("pause")
        self.peer.wait_ack(pause)
        t.wait_step(lambda t: run.paused, "paused")
        with t.cv:
            paused_at = t.step
        beats = len(self.peer.of("heartbeat"))
        self.peer.wait_type("heartbeat", beats + 3)  # three more heartbeats (0.2 s apart) while paused
        with t.cv:
            self.assertEqual(t.step, paused_at, "a step ran while paused")
        last_logged = max(m["step"] for m in self.peer.of("metrics"))
        self.assertEqual(last_logged, paused_at + 1)  # the step that was in progress logged, then blocked
        resume = self.peer.command("resume")
        self.peer.wait_ack(resume)
        t.wait_step(lambda t: t.step > paused_at + 3, "steps after resume")
        self.assertEqual([c.kind for c in t.returned[paused_at + 1]], ["pause", "resume"])
        self.peer.wait_ack(self.peer.command("stop"))
        t.join(WAIT_S)
        self.assertIsNone(t.error)

    def test_stop_while_paused_ends_the_pause(self):
        run = self.connect()
        t = Trainer(run)
        t.start()
        self.peer.wait_ack(self.peer.command("pause"))
        t.wait_step(lambda t: run.paused, "paused")
        self.peer.wait_ack(self.peer.command("stop", {"checkpoint": True}))
        t.join(WAIT_S)
        self.assertFalse(t.is_alive())
        self.assertEqual([c.kind for c in list(t.returned.values())[-1]], ["pause", "stop"])

    def test_callbacks_run_while_paused(self):
        run = self.connect()
        saved = []
        run.on("checkpoint", lambda c: saved.append(c.id))
        t = Trainer(run)
        t.start()
        self.peer.wait_ack(self.peer.command("pause"))
        t.wait_step(lambda t: run.paused, "paused")
        ck = self.peer.command("checkpoint")
        self.assertTrue(self.peer.wait_ack(ck)["ok"])
        self.assertEqual(saved, [ck])
        self.assertTrue(run.paused)
        self.peer.wait_ack(self.peer.command("stop"))
        t.join(WAIT_S)
        kinds = [c.kind for cmds in t.returned.values() for c in cmds]
        self.assertNotIn("checkpoint", kinds)  # a callback handled it

    def test_a_full_queue_drops_and_counts_and_never_blocks(self):
        run = self.connect(queue_size=64)
        self.peer.wait_type("hello")
        self.peer.reading.clear()  # the peer stops reading: the socket's buffers fill, then the queue
        sent = 20000
        payload = {"m%02d" % i: float(i) for i in range(50)}
        for step in range(sent):
            run.log(step, payload)  # returns at once whether or not the message fits
        self.assertGreater(run.dropped, 0)
        self.peer.reading.set()
        dropped = run.dropped
        # Every message either arrived or was counted: the next heartbeat says how many were dropped.
        beat = self.peer.wait_for(
            lambda ms: next((m for m in reversed(ms) if m.get("type") == "heartbeat" and m["dropped"] >= dropped), None),
            "a heartbeat counting the drops")
        got = self.peer.wait_for(lambda ms: len([m for m in ms if m.get("type") == "metrics"]) + beat["dropped"] >= sent
                                 and [m for m in ms if m.get("type") == "metrics"], "the queued metrics")
        self.assertEqual(len(got) + beat["dropped"], sent)
        steps = [m["step"] for m in got]
        self.assertEqual(steps, sorted(steps))

    def test_an_oversized_sample_is_dropped_and_counted(self):
        run = self.connect()
        run.sample(1, {"question": "x" * (sdk.MAX_LINE + 10)})
        run.sample(2, {"question": "small"})
        self.peer.wait_for(lambda ms: any(m.get("type") == "heartbeat" and m["dropped"] == 1 for m in ms),
                           "a heartbeat counting the dropped sample")
        self.assertEqual([m["step"] for m in self.peer.of("sample")], [2])
        self.assertEqual(self.peer.malformed, 0)

    def test_done_on_a_clean_exit_and_not_on_an_exception(self):
        with self.connect() as run:
            run.log(0, {"x": 1})
        self.peer.wait_type("done")
        self.peer.wait_disconnected()
        peer2 = ProtocolPeer()
        self.addCleanup(peer2.close)
        with self.assertRaises(KeyError):
            with sdk.connect(channel=peer2.path) as run:
                run.log(0, {"x": 1})
                raise KeyError("boom")
        peer2.wait_disconnected()
        self.assertEqual(peer2.of("done"), [])
        self.assertEqual(len(peer2.of("metrics")), 1)  # what was queued is written before closing

    def test_refused_handshake_raises_with_the_reason(self):
        peer = ProtocolPeer(refuse="the curriculum names KPI 'accuracy' that the trainer does not report")
        self.addCleanup(peer.close)
        with self.assertRaisesRegex(sdk.Refused, "KPI 'accuracy'"):
            sdk.connect(channel=peer.path)

    def test_a_second_connection_is_refused(self):
        self.connect()
        self.peer.wait_type("hello")
        with self.assertRaisesRegex(sdk.Refused, "connected already"):
            sdk.connect(channel=self.peer.path)

    def test_reconnects_after_a_drop_and_says_hello_again(self):
        run = self.connect()
        self.peer.wait_type("hello")
        self.peer.stage = {"index": 4, "name": "late", "weights": {"final": 2.0}}
        self.peer.drop()
        self.peer.wait_type("hello", 2)
        self.peer.wait_for(lambda ms: self.peer.of("heartbeat", conn=2), "a heartbeat on the new connection")
        self.assertTrue(run.connected)
        run.log(5, {"x": 1.0})
        self.peer.wait_for(lambda ms: any(m.get("type") == "metrics" and m["step"] == 5 for m in ms), "metrics after the reconnect")
        self.assertEqual(run.step_boundary(5), [])
        self.assertEqual(run.stage, sdk.Stage(4, "late", {"final": 2.0}))  # the new welcome's stage
        cid = self.peer.command("checkpoint")
        cmds = []
        deadline = time.monotonic() + WAIT_S
        while not cmds and time.monotonic() < deadline:
            cmds = run.step_boundary(6)
            time.sleep(0.01)
        self.assertEqual([(c.id, c.kind) for c in cmds], [(cid, "checkpoint")])

    def test_boundary_every_k_takes_commands_at_every_kth_call_only(self):
        run = self.connect(boundary_every=3)
        cid = self.peer.command("checkpoint")
        deadline = time.monotonic() + WAIT_S
        for call in itertools.count():
            cmds = run.step_boundary(call)
            if cmds or time.monotonic() > deadline:
                break
            time.sleep(0.01)  # the command is on its way
        self.assertEqual([c.id for c in cmds], [cid])
        self.assertEqual(call % 3, 0)

    def test_losing_the_channel_while_paused_ends_the_pause(self):
        run = self.connect()
        t = Trainer(run)
        t.start()
        self.peer.wait_ack(self.peer.command("pause"))
        t.wait_step(lambda t: run.paused, "paused")
        self.peer.close()  # pixelis is gone: no resume will come
        t.wait_step(lambda t: not run.paused, "the pause ended")
        t.halt.set()
        t.join(WAIT_S)
        self.assertIsNone(t.error)

    def test_connect_keeps_a_sigterm_handler_the_trainer_installed(self):
        def handler(signum, frame):
            pass
        old = signal.signal(signal.SIGTERM, handler)
        self.addCleanup(signal.signal, signal.SIGTERM, old)
        run = self.connect()
        run.step_boundary(0)
        run.done()
        self.assertIs(signal.getsignal(signal.SIGTERM), handler)

    def test_sigterm_and_pixelis_stop_are_one_stop_with_a_checkpoint(self):
        # A batch scheduler's SIGTERM reaches the trainer beside pixelis's stop command.
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)
        run = self.connect()
        self.assertEqual(run.step_boundary(0), [])
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs in this thread before the next line
        cmds = run.step_boundary(1)
        self.assertEqual([(c.kind, c.args) for c in cmds], [("stop", {"checkpoint": True})])
        cid = self.peer.command("stop", {"checkpoint": True})
        deadline = time.monotonic() + WAIT_S
        while run._channel.stop_arrived is None:  # the reader thread has it
            self.assertLess(time.monotonic(), deadline, "the stop command never arrived")
            time.sleep(0.01)
        self.assertEqual(run.step_boundary(2), [], "the second stop was handed to the trainer")
        ack = self.peer.wait_ack(cid)
        self.assertTrue(ack["ok"])
        self.assertEqual(ack.get("reason"), "already stopping")
        os.kill(os.getpid(), signal.SIGTERM)  # within SAME_STOP_S: the same stop, nothing more
        self.assertEqual(run.step_boundary(3), [])
        run.close(1.0)
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)

    def test_a_sigterm_long_after_the_stop_ends_the_trainer(self):
        # pixelis's own SIGTERM after its grace: the default action.
        code = ("import os, signal, sys; from pixelis import sdk; sdk.SAME_STOP_S = 0.0\n"
                "run = sdk.connect(channel=sys.argv[1])\n"
                "os.kill(os.getpid(), signal.SIGTERM)\n"
                "assert [c.kind for c in run.step_boundary(0)] == ['stop']\n"
                "os.kill(os.getpid(), signal.SIGTERM)\n"
                "print('survived')\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.run([sys.executable, "-c", code, self.peer.path], env=env, capture_output=True, timeout=WAIT_S)
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stdout + p.stderr)

    def owned_by(self, owner, run_dir, grace="600"):
        """The environment `pixelis launch` gives: its pid as the owner, the run directory, its --grace."""
        for k, v in ((sdk.OWNER_ENV, str(owner.pid)), (sdk.RUN_DIR_ENV, run_dir), (sdk.STOP_GRACE_ENV, grace)):
            old = os.environ.get(k)
            os.environ[k] = v
            self.addCleanup(lambda k=k, old=old: os.environ.pop(k) if old is None else os.environ.__setitem__(k, old))

    def launched_by_an_owner(self):
        """A process standing for pixelis (kill it to play its death) and a run directory, as owned_by sets them."""
        owner = subprocess.Popen(["sleep", "600"])
        self.addCleanup(owner.wait)
        self.addCleanup(owner.kill)
        run_dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, run_dir)
        self.owned_by(owner, run_dir)
        return owner, run_dir

    def test_the_owners_death_is_a_stop_with_a_checkpoint_recorded_in_the_run_directory(self):
        owner, run_dir = self.launched_by_an_owner()
        unreported = os.path.join(run_dir, sdk.UNREPORTED_FILE)
        run = self.connect()
        # A drop while the owner lives: the trainer reconnects and trains on.
        self.peer.drop()
        self.peer.wait_type("hello", 2)
        self.assertEqual(run.step_boundary(0), [])
        run.checkpoint_saved("/tmp/ck-1", 1)
        self.assertFalse(os.path.exists(unreported), "a checkpoint recorded while its owner lives")
        # The owner dies (a zombie: exited, not yet reaped) and its channel with it.
        owner.kill()
        self.peer.close()
        deadline = time.monotonic() + WAIT_S
        cmds = []
        while not cmds:
            self.assertLess(time.monotonic(), deadline, "no stop after the owner died")
            cmds = run.step_boundary(1)
            time.sleep(0.01)
        self.assertEqual([(c.kind, c.args) for c in cmds], [("stop", {"checkpoint": True})])
        run.checkpoint_saved("/tmp/ck-2", 2)
        cmds[0].ack()
        self.assertEqual(run.step_boundary(2), [], "the owner's death is one stop")
        with open(unreported) as f:
            lines = [json.loads(l) for l in f]
        self.assertEqual([(l["step"], l["path"]) for l in lines], [(2, "/tmp/ck-2")])
        self.assertEqual(lines[0]["reason"], "pixelis (pid %d) was gone" % owner.pid)
        self.assertRegex(lines[0]["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

    def test_under_lockstep_the_owners_death_ends_the_wait_for_observed_at_once(self):
        # pixelis killed while the trainer waits for its observed: the channel's end
        # is the answer, not OBSERVED_TIMEOUT_S at every step that follows.
        self.peer.close()
        self.peer = ProtocolPeer(stage=ProtocolPeer.WARMUP, lockstep=True, heartbeat_every_s=0.2)
        self.addCleanup(self.peer.close)
        self.addCleanup(self.peer.observing.set)  # the peer's reader, held below, ends
        owner, run_dir = self.launched_by_an_owner()
        run = self.connect()
        self.peer.observing.clear()  # pixelis never answers step 0
        run.log(0, {"episodes": 4})
        self.peer.wait_type("metrics")
        returned = []
        t = threading.Thread(target=lambda: returned.append(run.step_boundary(0)), daemon=True)
        t.start()
        owner.kill()
        began = time.monotonic()
        self.peer.close()  # what the kernel does to pixelis's sockets as it dies
        t.join(WAIT_S)
        self.assertFalse(t.is_alive(), "step_boundary still waits for observed")
        self.assertLess(time.monotonic() - began, sdk.OBSERVED_TIMEOUT_S / 2)
        cmds, step = returned[0], 1
        deadline = time.monotonic() + WAIT_S
        while not cmds:
            self.assertLess(time.monotonic(), deadline, "no stop after the owner died")
            run.log(step, {"episodes": 4})
            t0 = time.monotonic()
            cmds = run.step_boundary(step)
            self.assertLess(time.monotonic() - t0, sdk.OBSERVED_TIMEOUT_S / 2, "step %d waited for observed" % step)
            step += 1
            time.sleep(0.01)
        self.assertEqual([(c.kind, c.args) for c in cmds], [("stop", {"checkpoint": True})])

    def test_a_trainer_that_does_not_stop_after_its_owner_died_is_ended_after_the_grace(self):
        # As pixelis's stop would: SIGTERM after its --grace (here 0.2 s).
        owner = subprocess.Popen(["sleep", "600"])
        self.addCleanup(owner.wait)
        self.addCleanup(owner.kill)
        code = ("import sys, time; from pixelis import sdk; sdk.SAME_STOP_S = 0.0\n"
                "run = sdk.connect(channel=sys.argv[1])\n"
                "print('connected', flush=True)\n"
                "time.sleep(600)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        env.update({sdk.OWNER_ENV: str(owner.pid), sdk.STOP_GRACE_ENV: "0.2"})
        p = subprocess.Popen([sys.executable, "-c", code, self.peer.path], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline(), b"connected\n")
        owner.kill()
        self.peer.close()
        _, err = p.communicate(timeout=WAIT_S)
        self.assertEqual(p.returncode, -signal.SIGTERM, err)

    def test_training_loop_carries_out_commands(self):
        run = self.connect()
        saves, stages = [], []

        def train_step(step, stage):
            stages.append(stage.name)
            if step == 2:
                self.ck = self.peer.command("checkpoint")
            if step == 5:
                self.stop = self.peer.command("stop", {"checkpoint": True})
            return {"loss": 1.0 / (step + 1)}

        def save(step):
            saves.append(step)
            return "/tmp/ckpt-%d.pt" % step

        result = [None]
        th = threading.Thread(target=lambda: result.__setitem__(0, sdk.training_loop(run, train_step, 10 ** 6, save=save)))
        th.start()
        th.join(WAIT_S)
        self.assertEqual(result[0], "stopped")
        self.assertTrue(self.peer.wait_ack(self.ck)["ok"])
        self.assertTrue(self.peer.wait_ack(self.stop)["ok"])
        ckpts = self.peer.of("checkpoint")
        self.assertEqual([c["step"] for c in ckpts], saves)
        self.assertEqual(len(saves), 2)
        self.assertEqual(self.peer.of("done"), [])


class CommandBoard(unittest.TestCase):
    """_board.Board, two ranks' views of it in one process: the holder (rank 0)
    and rank 1, each with its own open file, as two processes have."""

    def setUp(self):
        d = tempfile.mkdtemp(prefix="pxl-board-")
        self.addCleanup(shutil.rmtree, d, True)
        self.holder = _board.Board.create(2, 0, os.path.join(d, "channel.sock"))
        self.other = _board.Board.open(self.holder.address, 1)
        self.assertIsNotNone(self.other)
        os.unlink(self.holder.path)  # as agree() does once every rank opened it
        for b in (self.holder, self.other):
            self.addCleanup(os.close, b.fd)

    def news(self, *kinds):
        return {"commands": [[k + "-id", k, {}, None, None] for k in kinds], "connected": True, "stage": None}

    def boundary(self, board, n, paused=False):
        return board.exchange(n, _board.NO_NEWS if board is self.holder else None, paused, 1)

    def test_news_is_for_the_first_boundary_no_rank_has_passed(self):
        self.assertEqual(self.boundary(self.holder, 1), [])
        self.assertEqual(self.boundary(self.other, 1), [])
        self.assertEqual(self.boundary(self.other, 2), [])  # rank 1 is a step ahead
        self.holder.post(self.news("checkpoint"), 1)
        self.assertEqual(self.boundary(self.holder, 2), [])  # rank 1 has passed 2: the news is for 3
        self.assertEqual(self.boundary(self.other, 3), [self.news("checkpoint")])
        self.assertEqual(self.boundary(self.holder, 3), [self.news("checkpoint")])
        self.assertEqual(self.boundary(self.holder, 4), [])

    def test_news_at_the_holders_boundary_is_carried_out_there(self):
        self.assertEqual(self.holder.exchange(1, self.news("stop"), False, 1), [self.news("stop")])
        self.assertEqual(self.boundary(self.other, 1), [self.news("stop")])

    def test_a_pause_holds_every_rank_at_its_boundary_until_resume(self):
        self.assertEqual(self.boundary(self.holder, 1), [])
        self.holder.post(self.news("pause"), 1)
        self.assertEqual(self.boundary(self.holder, 2), [self.news("pause")])
        self.assertEqual(self.boundary(self.holder, 2, paused=True), [])
        self.holder.post(self.news("resume"), 1)  # rank 1 has not reached 2 yet: the resume is for 2 too
        self.assertEqual(self.boundary(self.other, 1), [])
        self.assertEqual(self.boundary(self.other, 2), [self.news("pause"), self.news("resume")])
        self.assertEqual(self.boundary(self.holder, 2, paused=True), [self.news("resume")])
        self.holder.post(self.news("checkpoint"), 1)  # the pause is over: the next boundary
        self.assertEqual(self.boundary(self.holder, 3), [self.news("checkpoint")])

    def test_boundary_every_k_posts_for_a_boundary_every_rank_looks_at(self):
        self.assertEqual(self.holder.exchange(1, _board.NO_NEWS, False, 3), [])
        self.holder.post(self.news("checkpoint"), 3)
        self.assertEqual(self.other.exchange(4, None, False, 3), [self.news("checkpoint")])

    def test_another_file_of_the_same_name_is_not_the_board(self):
        path, token = self.holder.address
        self.assertIsNone(_board.Board.open((path, "00" * 16), 1))
        self.assertIsNone(_board.Board.open((path + "-gone", token), 1))


if __name__ == "__main__":
    unittest.main()
