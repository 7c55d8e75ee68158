"""The launch SDK under torchrun: two processes on the CPU (gloo), rank 0
holding the channel to a protocol peer (launch_peer.ProtocolPeer). A
checkpoint reaches both ranks at the same step and both save; a stage
changes both ranks' weights at the same step; a pause holds both ranks
while heartbeats go on; a stop with a checkpoint makes both save and exit
cleanly, and torchrun exits 0 — no rank left waiting.

Needs torch (torchrun is torch.distributed.run): without it the test skips,
except under CI=true, where it fails.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

from launch_peer import ProtocolPeer, WAIT_S
from serve_fixture import need

torch = need("torch")

HERE = os.path.dirname(os.path.abspath(__file__))


def torchrun_flags():
    """Flags torchrun needs here. Debian's torch 1.13 under Python 3.11 reads
    its default `--redirects 0 --tee 0` as None (3.11's enum.Flag no longer
    iterates the zero member) and its agent dies with "'NoneType' object has
    no attribute 'get'"; a mapping naming only a local rank beyond
    --nproc_per_node means the same (no redirection) and is read right."""
    from torch.distributed.elastic.multiprocessing.api import Std
    if Std.from_str("0") is None:
        return ["--redirects", "9:1", "--tee", "9:1"]
    return []


class TorchrunTwoRanks(unittest.TestCase):
    def torchrun(self, peer, worker):
        """torchrun --nproc_per_node 2 worker OUT, connected to peer; (process, OUT, its log)."""
        out = tempfile.mkdtemp(prefix="pxl-torchrun-")
        self.addCleanup(shutil.rmtree, out, True)
        env = dict(peer.env(), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               *torchrun_flags(), os.path.join(HERE, worker), out]
        log = open(os.path.join(out, "torchrun.log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def cleanup():
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
        self.addCleanup(cleanup)
        threading.Thread(target=lambda: (proc.wait(), peer.notify()), daemon=True).start()
        peer.wait_for(lambda ms: ms or proc.poll() is not None, "a hello (or torchrun's exit)", timeout=120)
        if proc.poll() is not None:
            log.seek(0)
            self.fail("torchrun exited %d before connecting:\n%s" % (proc.returncode, log.read()[-4000:]))
        return proc, out, log

    def wait_exit(self, proc, log):
        code = proc.wait(WAIT_S)
        log.seek(0)
        self.assertEqual(code, 0, "torchrun exited %d:\n%s" % (code, log.read()[-4000:]))

    def test_commands_reach_both_ranks_at_the_same_step(self):
        peer = ProtocolPeer(stage={"index": 0, "name": "warmup", "weights": {"final": 1.0}}, heartbeat_every_s=0.2)
        self.addCleanup(peer.close)
        proc, out, log = self.torchrun(peer, "torchrun_worker.py")
        hello = peer.wait_type("hello")[0]
        self.assertEqual((hello["rank"], hello["world_size"]), (0, 2))
        steps = lambda ms: [m["step"] for m in ms if m.get("type") == "metrics"]
        peer.wait_for(lambda ms: max(steps(ms), default=-1) >= 3, "step 3")

        self.assertTrue(peer.wait_ack(peer.command("checkpoint"))["ok"])
        self.assertTrue(peer.wait_ack(peer.command("stage", {"index": 1, "name": "costly",
                                                             "weights": {"final": 0.5, "cost": 1.0}}))["ok"])
        peer.wait_ack(peer.command("pause"))
        beats = len(peer.of("heartbeat"))
        peer.wait_type("heartbeat", beats + 2)  # paused: the step in flight may still log
        at_pause = max(steps([m for _, m in peer.messages]))
        peer.wait_type("heartbeat", beats + 5)  # still paused: heartbeats, no step
        self.assertEqual(max(steps([m for _, m in peer.messages])), at_pause, "a step ran while paused")
        peer.wait_ack(peer.command("resume"))
        peer.wait_for(lambda ms: max(steps(ms)) > at_pause + 2, "steps after resume")
        self.assertTrue(peer.wait_ack(peer.command("stop", {"checkpoint": True}))["ok"])

        self.wait_exit(proc, log)
        ranks = []
        for r in (0, 1):
            with open(os.path.join(out, "rank%d.json" % r)) as f:
                ranks.append(json.load(f))
        strip = lambda evs: [{k: v for k, v in e.items() if k != "saved"} for e in evs]
        self.assertEqual(strip(ranks[0]["events"]), strip(ranks[1]["events"]))  # same commands, same steps, same stage
        kinds = [e["kind"] for e in ranks[0]["events"]]
        self.assertEqual(kinds, ["checkpoint", "stage", "pause", "resume", "stop"])
        stage_ev = ranks[0]["events"][1]
        self.assertEqual(stage_ev["stage"], {"final": 0.5, "cost": 1.0})
        saves = [[e["step"] for e in rk["events"] if "saved" in e] for rk in ranks]
        self.assertEqual(saves[0], saves[1])
        self.assertEqual(len(saves[0]), 2)  # the checkpoint and the stop's
        for step in saves[0]:
            for r in (0, 1):
                self.assertTrue(os.path.exists(os.path.join(out, "ckpt-step%d-rank%d.pt" % (step, r))))
        self.assertEqual([c["step"] for c in peer.of("checkpoint")], saves[0])
        self.assertEqual(ranks[0]["last_step"], ranks[1]["last_step"])
        peer.wait_disconnected()


if __name__ == "__main__":
    unittest.main()
