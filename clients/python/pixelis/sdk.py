"""The launch SDK: a trainer's side of the channel to `pixelis launch`.

`pixelis launch -- CMD ...` starts the trainer with PIXELIS_CHANNEL, the path
of a unix socket, in its environment. Through it (JSON lines, protocol
version 2, docs/launch-protocol.md) the trainer sends its steps' metrics,
each with the reward weights it ran with, samples, phases and saved
checkpoints, and pixelis sends commands: checkpoint now, pause / resume,
evaluate, stop, and the curriculum's stage with its reward weights and the
earliest step it applies from. Outside `pixelis launch` connect() returns a Run that does
nothing, so the same script runs standalone.

    from pixelis import sdk

    with sdk.connect(components=["final", "cost"], reports=["episodes", "successes"],
                     config={"lr": 1e-4}, default_weights={"final": 1.0}) as run:
        for step in range(steps):
            ...                                   # one training step, weighted by run.stage.weights
            run.log(step, {"episodes": 64, "successes": 41, "reward/final/raw": 0.64})
            for c in run.step_boundary(step):     # on every rank, once a step
                if c.kind == "checkpoint":
                    run.checkpoint_saved(save(step), step); c.ack()
                elif c.kind == "stop":
                    ...; c.ack(); break

A stage lands at a step the run decides: pixelis sends it to apply from the
step after the one whose metrics decided it, and when it runs a curriculum
(the welcome's lockstep) step_boundary() waits for pixelis's word that it has
taken the step just logged (its observed) before it looks for commands, so
the stage is there before that step begins, however fast either side runs.
run.stage changes at the boundary before the step it applies from, and the
ack names that step; a trainer that can change its weights only later (TRL's
generation batches) sets Command.applies_from before acknowledging, and
passes the weights a step really used to log().

What never blocks the training loop: log() and sample() put the message on a
bounded queue a background thread writes to the socket; when the queue is
full the message is dropped and counted (run.dropped, sent in every
heartbeat). Heartbeats go every 5 s from that thread, also while paused.
Acknowledgements, phases, checkpoints and done are never dropped.

When pixelis dies: after a drop the SDK reconnects while the run's owner
(PIXELIS_OWNER_PID, pixelis's pid) lives; once it is gone the trainer gets
a stop with a checkpoint at its next step boundary, as from pixelis, and
checkpoint_saved() records the checkpoint in the run directory
(UNREPORTED_FILE) for `pixelis resume`. A trainer still running pixelis's
grace later gets SIGTERM, then SIGKILL, as pixelis would send them.

Several ranks: one rank (channel_rank, 0 by default) holds the channel. When
torch.distributed is initialised, every rank gets the same commands at the
same step boundary (checkpoint saves and stops are collective, so they must).
On one node (what `pixelis launch` supports) that costs no collective per
step: the holder posts each command as it arrives on a command board that
every rank reads at every boundary, for the first boundary no rank has
passed (_board.Board); with ranks on several nodes step_boundary() is a collective
instead (one broadcast of one number; the commands are broadcast when there
are any). connect() is a collective either way. This module never imports
torch: it uses torch.distributed only when the trainer has imported and
initialised it.

The package's modules under this one: _protocol (the protocol's words and
one line's encoding), _channel (the socket: hello and welcome, heartbeats,
reconnects), _board (the command board of one node's ranks), _owner (the
owner watch), _ranks (torch.distributed as the trainer set it up).

Standard library only.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterable, Literal, Mapping, Union

from ._board import NO_NEWS, Board
from ._channel import Channel
from ._owner import Owner
from ._protocol import (CHANNEL_ENV, FLUSH_TIMEOUT_S, HEARTBEAT_EVERY_S, KINDS, LOG_KEYS_HF, MAX_LINE, OWNER_ENV,
                        PROTOCOL_VERSION, RUN_DIR_ENV, STOP_GRACE_ENV, UNREPORTED_FILE, Refused, encode, log, number)
from ._ranks import dist, rank_and_size

__all__ = [
    "connect", "Run", "Stage", "Command", "Refused", "training_loop", "KINDS", "LOG_KEYS_HF", "PROTOCOL_VERSION",
    "CHANNEL_ENV", "RUN_DIR_ENV", "OWNER_ENV", "STOP_GRACE_ENV", "UNREPORTED_FILE", "MAX_LINE", "HEARTBEAT_EVERY_S",
    "FLUSH_TIMEOUT_S", "QUEUE_SIZE", "PAUSE_POLL_S", "CONNECT_TIMEOUT_S", "SAME_STOP_S", "OBSERVED_TIMEOUT_S",
    "STOP_GRACE_S", "KILL_AFTER_S", "CallbackResult",
]

QUEUE_SIZE = 4096           # metrics and samples waiting to be written, at most
PAUSE_POLL_S = 1.0          # while paused, the holder waits this long for a command between looks (a collective across nodes)
CONNECT_TIMEOUT_S = 10.0    # the handshake's limit
SAME_STOP_S = 5.0           # a SIGTERM this soon after a stop began is that stop (a scheduler's, beside pixelis's)
OBSERVED_TIMEOUT_S = 10.0   # under lockstep, step_boundary waits this long for pixelis to observe the step logged
STOP_GRACE_S = 30.0         # pixelis's --grace when it does not say (PIXELIS_STOP_GRACE_S)
KILL_AFTER_S = 10.0         # after the grace's SIGTERM, SIGKILL this much later, as pixelis does

# What a command callback returns (Run.on): None or True takes the command,
# False or (False, reason) refuses it.
CallbackResult = Union[None, bool, "tuple[bool, str]"]


class Stage:
    """A curriculum stage: index, name and reward weights {component: float}."""

    __slots__ = ("index", "name", "weights")

    def __init__(self, index: int, name: str, weights: Mapping[str, float]) -> None:
        self.index, self.name, self.weights = int(index), str(name), dict(weights)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stage) and (self.index, self.name, self.weights) == (other.index, other.name, other.weights)

    def __repr__(self) -> str:
        return "Stage(index=%d, name=%r, weights=%r)" % (self.index, self.name, self.weights)

    def _wire(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "weights": self.weights}


class Command:
    """A command from pixelis: kind (one of KINDS), args, id. ack() answers it;
    the rank holding the channel sends the answer, other ranks do nothing. An
    answer is sent once: a second ack() is ignored. from_step is the earliest
    step a command that changes how steps run (a stage) applies from, None for
    others; applies_from the step it does apply from, which the ack names: the
    step after the boundary that took it (a stage always has one), unless the
    trainer sets a later one before acknowledging."""

    __slots__ = ("id", "kind", "args", "acked", "from_step", "applies_from", "_run")

    def __init__(self, run: Run, id: int | None, kind: str, args: dict[str, Any], from_step: int | None = None) -> None:
        self._run, self.id, self.kind, self.args, self.acked = run, id, kind, args, False
        self.from_step = from_step
        self.applies_from: int | None = None

    def ack(self, ok: bool = True, reason: str = "") -> None:
        if self.acked:
            return
        self.acked = True
        if self.id is None:  # a stage from a reconnect's welcome: nothing to answer
            return
        msg = {"type": "ack", "id": self.id, "ok": bool(ok)}
        if ok and self.applies_from is not None:
            msg["from_step"] = int(self.applies_from)
        if not ok or reason:
            msg["reason"] = str(reason) or "refused"
        self._run._send_control(msg)

    def __repr__(self) -> str:
        return "Command(id=%r, kind=%r, args=%r)" % (self.id, self.kind, self.args)

def connect(components: Iterable[str] = (), reports: Iterable[str] = (), config: Mapping[str, Any] | None = None,
            default_weights: Mapping[str, float] | None = None, *, total_steps: int | None = None,
            bounds: Mapping[str, "tuple[float, float]"] | None = None, channel: str | None = None, channel_rank: int = 0,
            boundary_every: int = 1, queue_size: int = QUEUE_SIZE, timeout: float = CONNECT_TIMEOUT_S,
            log_keys: str | None = None, editable: Mapping[str, "tuple[float, float]"] | None = None) -> Run:
    """The run's channel to pixelis, or a Run that does nothing outside
    `pixelis launch` (no PIXELIS_CHANNEL).

    components: the reward components the trainer computes (stage weights are
    keyed by them); reports: the per-step counts log() carries ("episodes",
    "successes"); config: the trainer's own run config (JSON-able; shown in
    the console's `i` view); default_weights: the stage's weights when not
    under launch (or when pixelis runs no curriculum); total_steps: the step
    budget the console's header shows; bounds: {metric name: (low, high)},
    the range each named metric can take (pixelis refuses a value outside
    it); log_keys: LOG_KEYS_HF when the metrics' names are a Hugging Face
    Trainer's on_log keys ("loss", "eval_loss"), so that pixelis aliases them
    as transformers' loggers write them (the files keep the names as logged);
    editable: {setting: (low, high)}, the settings pixelis may change while
    the run trains (the console's x, `pixelis edit`): each arrives as an
    "edit" command, args {"field", "value"}, at the boundary before the step
    it applies from (handle it with run.on("edit", fn)).
    Only the rank channel_rank connects; under torch.distributed, connect() is a collective (all ranks
    start from the holder's stage). boundary_every=k makes only every k-th
    step_boundary() call look for commands (the others return [] at
    once): commands then wait up to k steps (for ranks on several nodes,
    whose boundaries are collectives). Raises Refused when pixelis refuses the
    handshake, OSError when the socket cannot be reached.
    """
    return Run(components, reports, config, default_weights, total_steps=total_steps, bounds=bounds, channel=channel,
               channel_rank=channel_rank, boundary_every=boundary_every, queue_size=queue_size, timeout=timeout,
               log_keys=log_keys, editable=editable)

class Run:
    """A run under `pixelis launch` (active), or the same calls doing nothing
    outside it. Made by connect()."""

    def __init__(self, components: Iterable[str], reports: Iterable[str], config: Mapping[str, Any] | None,
                 default_weights: Mapping[str, float] | None, *, total_steps: int | None,
                 bounds: Mapping[str, "tuple[float, float]"] | None = None, channel: str | None, channel_rank: int,
                 boundary_every: int, queue_size: int, timeout: float, log_keys: str | None = None,
                 editable: Mapping[str, "tuple[float, float]"] | None = None) -> None:
        self.components = [str(c) for c in components]
        self.reports = [str(r) for r in reports]
        weights = dict(default_weights or {})
        self._check_weights(weights)
        self.stage = Stage(0, "default", weights)
        self.rank, self.world_size = rank_and_size()
        self.channel_rank = channel_rank
        self.boundary_every = max(1, int(boundary_every))
        self._boundaries = 0  # step_boundary calls so far
        self._board = None    # under torch.distributed on one node: where the holder posts commands
        self.run_dir = os.environ.get(RUN_DIR_ENV)
        self.paused = False
        self.resume = None  # {"step", "checkpoint"} when `pixelis resume` restarted the trainer
        self._callbacks: dict[str, Callable[[Command], CallbackResult]] = {}
        self._done = False
        self._channel = None
        self._stop_began = None    # time.monotonic() of the first stop or SIGTERM
        self._sigterm_stop = False  # a SIGTERM asked for a stop the next boundary brings
        self._stop_given = False   # a stop was handed to the trainer
        self._sigterm_guard = None  # the SIGTERM disposition connect() replaced
        self._closed = False
        self._held: list[Command] = []  # commands whose from_step is later than the next step: carried out at the boundary before it
        self._closed_event = threading.Event()
        self._owner = Owner()
        self._owner_stop = False  # the owner died: a stop with a checkpoint the next boundary brings
        self._owner_stop_taken = False
        path = channel if channel is not None else os.environ.get(CHANNEL_ENV)
        if path and self.rank == channel_rank:
            hello = {"type": "hello", "version": PROTOCOL_VERSION, "pid": os.getpid(), "rank": self.rank,
                     "world_size": self.world_size, "components": self.components, "reports": self.reports,
                     "config": config or {}}
            if total_steps is not None:
                hello["total_steps"] = int(total_steps)
            if bounds:
                hello["bounds"] = {str(k): [float(lo), float(hi)] for k, (lo, hi) in bounds.items()}
            if log_keys:
                hello["log_keys"] = str(log_keys)
            if editable:
                hello["editable"] = {str(k): [float(lo), float(hi)] for k, (lo, hi) in editable.items()}
            hello["welcome_commands"] = True  # a fork's edits come in the welcome: the first boundary takes them
            self._channel = Channel(path, hello, queue_size, timeout, self._owner, self._on_owner_gone)
            welcome = self._channel.welcome
            self.run_dir = welcome.get("run_dir") or self.run_dir
            self.resume = welcome.get("resume")
            st = self._stage_of(welcome.get("stage"))
            if isinstance(st, Stage):
                self.stage = st
            elif st is not None:
                self._channel.close(0)
                raise Refused("the welcome's stage: " + st)
        self.active = bool(path)
        self._sync_start()
        if self.active:
            self._guard_sigterm()

    # --- what the trainer sends ------------------------------------------------------------

    @property
    def holds_channel(self) -> bool:
        """True on the rank that writes to pixelis."""
        return self._channel is not None

    @property
    def connected(self) -> bool:
        """True while the channel to pixelis is up (it reconnects after a drop)."""
        return self._channel is not None and self._channel.connected

    @property
    def dropped(self) -> int:
        """Messages dropped so far: the queue was full, or a line was over 1 MiB."""
        return self._channel.dropped if self._channel else 0

    def log(self, step: int, metrics: Mapping[str, Any], weights: Mapping[str, float] | None = None) -> None:
        """A step's metrics {name: number or None}, sent with the reward
        weights the step ran with: weights, else run.stage's. Never blocks; a
        no-op on ranks that do not hold the channel (log the reduced values on one)."""
        if self._channel is None:
            return
        snap = {str(k): number(k, v) for k, v in metrics.items()}
        used = self.stage.weights if weights is None else weights
        msg = {"type": "metrics", "step": int(step), "metrics": snap}
        if used:
            msg["weights"] = {str(k): number(k, v) for k, v in used.items()}
        self._channel.put(encode(msg), step=int(step))

    def sample(self, step: int, sample: Mapping[str, Any]) -> None:
        """A sample trajectory {question, actions, answer, correct, reward, ...}. Never blocks."""
        if self._channel is None:
            return
        try:
            line = encode({"type": "sample", "step": int(step), "sample": sample})
        except ValueError as e:  # NaN or infinity in a sample
            raise ValueError("sample at step %s: %s" % (step, e)) from None
        self._channel.put(line)

    def validation(self, step: int, results: Mapping[str, Iterable[bool]], greedy: Mapping[str, bool] | None = None,
                   split: str = "val") -> None:
        """A validation's results task by task, after step: per task id its
        attempts' correctness, and optionally its greedy attempt's. pixelis
        keeps them in the run directory and, for a fork and its parent that
        validate on the same tasks, shows their paired difference (fork −
        parent, by task) in the compare view. Never dropped (as a checkpoint)."""
        tries = {str(t): [bool(ok) for ok in attempts] for t, attempts in results.items()}
        if not tries or not all(tries.values()):
            raise ValueError("validation at step %s: results need at least one task, each with at least one attempt" % step)
        msg: dict[str, Any] = {"type": "validation", "step": int(step), "split": str(split), "results": tries}
        if greedy is not None:
            msg["greedy"] = {str(t): bool(ok) for t, ok in greedy.items()}
        if len(encode(msg)) > MAX_LINE + 1:
            raise ValueError("validation at step %s: %d tasks are over the channel's line of %d bytes" % (step, len(tries), MAX_LINE))
        self._send_control(msg)

    def checkpoint_saved(self, path: "str | os.PathLike[str]", step: int) -> None:
        """The trainer saved a checkpoint at path (resume uses the acknowledged ones).
        With its pixelis gone, the checkpoint is recorded in the run directory
        (UNREPORTED_FILE), where `pixelis resume` finds it."""
        path = os.path.abspath(str(path))
        self._send_control({"type": "checkpoint", "step": int(step), "path": path})
        if self._channel is not None and not self._owner.alive():
            self._record_unreported(int(step), path)

    def _record_unreported(self, step, path):
        """Append the checkpoint to the run directory's UNREPORTED_FILE: one
        line in one write to a file opened for appending, so a line is whole
        or absent, and a reader skips a torn last one."""
        run_dir = os.environ.get(RUN_DIR_ENV) or self.run_dir
        if not run_dir:
            log.warning("pixelis is gone and the run directory is unknown: checkpoint %s is recorded nowhere", path)
            return
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%06dZ" % int(now % 1 * 1e6)
        line = encode({"type": "checkpoint", "step": step, "path": path, "time": stamp,
                        "reason": "%s was gone" % self._owner})
        try:
            fd = os.open(os.path.join(run_dir, UNREPORTED_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            log.warning("checkpoint %s not recorded in %s: %s", path, run_dir, e)
            return
        log.warning("checkpoint %s (step %d) recorded in %s for `pixelis resume`", path, step, os.path.join(run_dir, UNREPORTED_FILE))

    def phase(self, name: str, step: int | None = None) -> None:
        """A phase starts: "sft", "rft", "eval", ... (free names)."""
        msg: dict[str, Any] = {"type": "phase", "name": str(name)}
        if step is not None:
            msg["step"] = int(step)
        self._send_control(msg)

    def done(self) -> None:
        """Training finished normally (an exit 0 without it means stopped early);
        writes what is queued and closes the channel."""
        if self._done:
            return
        self._done = True
        self._send_control({"type": "done"})
        self.close()

    def close(self, flush_timeout: float = FLUSH_TIMEOUT_S) -> None:
        """Write what is queued (waiting at most flush_timeout) and close the channel."""
        if self._channel is not None:
            self._channel.close(flush_timeout)
        self._closed_event.set()
        if self._sigterm_guard is not None and signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            try:
                signal.signal(signal.SIGTERM, self._sigterm_guard)
                self._sigterm_guard = None
            except ValueError:  # closed from another thread: the handler stays, taking SIGTERM's default action
                pass
        self._closed = True

    # --- SIGTERM under launch -----------------------------------------------------------

    def _guard_sigterm(self):
        """Under launch, SIGTERM is the stop pixelis asks for, not an end at
        once: a batch scheduler (Slurm's scancel, scontrol requeue, a
        preemption) sends it to every process of the job, the trainer
        included, just as pixelis, which got it too, sends its stop. The
        trainer then hears one stop, with a checkpoint, whichever comes
        first, and its checkpoint is not cut short. A SIGTERM more than
        SAME_STOP_S after the stop began (pixelis's own, after its grace)
        ends the process as SIGTERM does. Only where SIGTERM has its default
        action and in the main thread: a handler the trainer installed stays."""
        try:
            if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
                return
            self._sigterm_guard = signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):  # not the main thread
            self._sigterm_guard = None

    def _on_sigterm(self, signum, frame):
        now = time.monotonic()
        began = self._stop_began
        if self._channel is not None and self._channel.stop_arrived is not None:
            began = min(began or now, self._channel.stop_arrived)
        if self._closed:
            began = -math.inf
        if began is None:
            self._stop_began, self._sigterm_stop = now, True
            log.warning("SIGTERM: stopping at the end of this step with a checkpoint, as pixelis's stop does")
        elif now - began <= SAME_STOP_S:
            log.warning("SIGTERM %.1f s after the stop began: the same stop", now - began)
        else:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    # --- the owner's death ---------------------------------------------------------------

    def _on_owner_gone(self):
        """The channel dropped and its owner is gone (the flusher thread): the
        trainer stops at its next step boundary with a checkpoint, as on
        pixelis's stop; not closed after pixelis's grace, it gets SIGTERM,
        and SIGKILL KILL_AFTER_S later, as pixelis would send them."""
        log.warning("%s, the run's owner, is gone: stopping at the next step boundary with a checkpoint", self._owner)
        if self._stop_began is None:
            self._stop_began = time.monotonic()
        self._owner_stop = True
        threading.Thread(target=self._end_after_grace, name="pixelis-owner-gone", daemon=True).start()

    def _end_after_grace(self):
        try:
            grace = float(os.environ.get(STOP_GRACE_ENV, STOP_GRACE_S))
        except ValueError:
            grace = STOP_GRACE_S
        if self._closed_event.wait(grace):
            return
        log.warning("the trainer has not stopped %.0f s after its owner died: SIGTERM", grace)
        os.kill(os.getpid(), signal.SIGTERM)
        if not self._closed_event.wait(KILL_AFTER_S):
            os.kill(os.getpid(), signal.SIGKILL)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> Literal[False]:
        if exc_type is None:
            self.done()
        else:
            self.close()
        return False

    def _send_control(self, msg):
        if self._channel is not None:
            self._channel.put(msg, control=True)

    # --- commands ------------------------------------------------------------------------

    def on(self, kind: str, fn: Callable[[Command], CallbackResult]) -> None:
        """Handle commands of kind ("checkpoint", "evaluate", "stop", "stage", "edit")
        with fn(command) inside step_boundary, on every rank, also while
        paused: fn returning None or True acknowledges the command, returning
        (False, reason) refuses it, raising refuses it and the exception goes
        on. Commands a callback handled are not returned by step_boundary."""
        if kind not in KINDS or kind in ("pause", "resume"):
            raise ValueError("on(%r): callbacks are for %s" % (kind, ", ".join(k for k in KINDS if k not in ("pause", "resume"))))
        self._callbacks[kind] = fn

    def step_boundary(self, step: int) -> list[Command]:
        """The commands that arrived since the last call, the same on every
        rank (call it once a step on every rank: under torch.distributed a
        command is carried out at the same boundary everywhere, the first
        one after its arrival that no rank has passed). A stage command has updated run.stage already and
        is acknowledged; pause and resume are acknowledged and handled here:
        while paused this call blocks (heartbeats go on) until resume or
        stop, then returns the pause and what came with it. checkpoint,
        evaluate and stop are for the trainer to carry out and ack().
        Outside launch it returns [] at once and is no collective. Called
        once before the first step, with the step the run starts from, it
        returns the commands the welcome carried (a fork's edits), which
        then apply from that first step."""
        if not self.active:
            return []
        self._boundaries += 1
        out = self._due(step)
        if (self._boundaries - 1) % self.boundary_every and not self.paused:
            return out
        self._await_observed()
        while True:
            for payload in self._exchange(self._take_commands(wait=self.paused)):
                out.extend(self._apply(payload, step))
            if not self.paused:
                return out

    def _await_observed(self):
        """Under lockstep, wait (OBSERVED_TIMEOUT_S at most) until pixelis has
        taken the newest step logged: the commands that step decided are then
        in the inbox."""
        ch = self._channel
        if ch is not None and not ch.await_observed(OBSERVED_TIMEOUT_S):
            log.warning("pixelis did not observe step %s within %.0f s: going on without waiting for its word "
                        "until it answers again", ch.logged, OBSERVED_TIMEOUT_S)

    def _due(self, step):
        """The held stages that apply from the next step, carried out now."""
        due = [c for c in self._held if c.from_step <= step + 1]
        if not due:
            return []
        self._held = [c for c in self._held if c.from_step > step + 1]
        out = []
        for c in due:
            out.extend(self._carry_out(c, step))
        return out

    def _take_commands(self, wait):
        """The holder's payload for this boundary: the commands that arrived
        (waiting up to PAUSE_POLL_S for one when wait) with the holder's
        verdict on stage commands, and whether the channel is up."""
        ch = self._channel
        if ch is None:
            return None
        if self._board is not None:  # the reader thread posts news, a lost channel included; here only what came before the board
            payload = self._payload(ch.take_commands(0), True, ch.take_stage())
        else:
            payload = self._payload(ch.take_commands(PAUSE_POLL_S if wait else 0), ch.connected, ch.take_stage())
        cmds = payload["commands"]
        owner_stop = self._owner_stop and not self._owner_stop_taken
        if (self._sigterm_stop or owner_stop) and not any(k == "stop" for _, k, _, _, _ in cmds):
            cmds.append((None, "stop", {"checkpoint": True}, None, None))  # SIGTERM's or the owner's death's stop, on every rank at once
        self._sigterm_stop = False
        self._owner_stop_taken |= owner_stop
        return payload

    def _payload(self, raw, connected, stage):
        """What every rank carries out for the commands raw (with the
        holder's verdict on each), the channel's state and a reconnect's stage."""
        cmds = []
        for m in raw:
            kind, args = m.get("kind"), m.get("args") or {}
            verdict = None
            if kind not in KINDS:
                verdict = "unknown command kind %r" % (kind,)
            elif kind == "stage":
                st = self._stage_of(args)
                verdict = st if isinstance(st, str) else None
            from_step = m.get("from_step")
            cmds.append((m.get("id"), kind, args, verdict, from_step if isinstance(from_step, int) else None))
        return {"commands": cmds, "connected": connected, "stage": stage}

    def _post_news(self, raw, stage, connected):
        """The holder's reader thread: news posted on the board at once, for
        the first step boundary no rank has passed."""
        payload = self._payload(raw, connected, stage)
        if payload != NO_NEWS:
            self._board.post(payload, self.boundary_every)

    def _exchange(self, payload):
        """The payloads every rank carries out at this boundary, in order.
        One process: the holder's own. Under torch.distributed with every
        rank on one node: the board's (_board.Board), no collective. Else the
        holder's payload broadcast (one number saying whether there is
        news; only news is pickled and broadcast)."""
        td = dist()
        if td is None or td.get_world_size() == 1:
            return [payload]
        if self._board is not None:
            return self._board.exchange(self._boundaries, payload, self.paused, self.boundary_every)
        torch = sys.modules["torch"]
        device = None
        if td.get_backend() == "nccl":  # NCCL's collectives take tensors on the rank's GPU
            device = torch.device("cuda", torch.cuda.current_device())
        news = torch.zeros(1, dtype=torch.int64, device=device)
        if self.rank == self.channel_rank and payload != NO_NEWS:
            news += 1
        td.broadcast(news, src=self.channel_rank)
        if not news.item():
            return [NO_NEWS]
        box = [payload]
        td.broadcast_object_list(box, src=self.channel_rank, **({"device": device} if device is not None else {}))
        return [box[0]]

    def _apply(self, payload, step):
        """Carry out a boundary's payload on this rank; the commands for the trainer."""
        if payload is None:  # no channel anywhere
            self.paused = False
            return []
        if payload.get("stage") is not None:  # a reconnect's welcome: the stage pixelis holds now
            st = self._stage_of(payload["stage"])
            if isinstance(st, Stage) and st != self.stage:
                before, self.stage = self.stage, st
                if "stage" in self._callbacks and not self._call(Command(self, None, "stage", st._wire())):
                    self.stage = before
        out = []
        for id, kind, args, verdict, from_step in payload["commands"]:
            c = Command(self, id, kind, args, from_step)
            if verdict is not None:
                log.warning("pixelis command %s refused: %s", c, verdict)
                c.ack(False, verdict)
                continue
            if from_step is not None and from_step > step + 1:
                self._held.append(c)  # carried out at the boundary before its step
                continue
            out.extend(self._carry_out(c, step))
        if not payload["connected"] and self.paused:
            log.warning("the channel to pixelis is lost while paused: training goes on")
            self.paused = False
        return out

    def _carry_out(self, c, step):
        """Carry out one command at the boundary after step: [c] when it is the trainer's to carry out."""
        kind, args = c.kind, c.args
        if c.from_step is not None:  # a command that changes how steps run: from the next step on, or its own later one
            c.applies_from = max(step + 1, c.from_step)
        if kind == "pause":
            self.paused = True
            c.ack()
        elif kind == "resume":
            self.paused = False
            c.ack()
        elif kind == "stage":
            before, self.stage = self.stage, self._stage_of(args)
            if c.applies_from is None:
                c.applies_from = step + 1
            if kind not in self._callbacks:
                c.ack()
        elif kind == "stop":
            self.paused = False
            if self._stop_given:  # SIGTERM's and pixelis's: one stop
                c.ack(True, "already stopping")
                return []
            self._stop_given = True
            if self._stop_began is None:
                self._stop_began = time.monotonic()
        if kind in self._callbacks and kind not in ("pause", "resume"):
            if not self._call(c) and kind == "stage":
                self.stage = before  # the trainer could not take it
            return []
        return [c]

    def _call(self, c):
        """Run c's callback and acknowledge c by its result; whether it took c."""
        try:
            r = self._callbacks[c.kind](c)
        except BaseException as e:
            c.ack(False, "%s: %s" % (type(e).__name__, e))
            raise
        ok, reason = True, ""
        if r is not None and r is not True:
            ok, reason = r if isinstance(r, tuple) else (bool(r), "")
        c.ack(ok, reason)
        return ok

    def _stage_of(self, st):
        """A Stage from the wire's {index, name, weights}, or a string saying
        why not (a weight naming an undeclared component, a non-finite one);
        None for no stage."""
        if st is None:
            return None
        try:
            weights = {str(k): float(v) for k, v in (st.get("weights") or {}).items()}
            msg = self._check_weights(weights, raise_=False)
            if msg:
                return msg
            return Stage(st.get("index", 0), st.get("name", ""), weights)
        except (AttributeError, TypeError, ValueError) as e:
            return "malformed stage %r: %s" % (st, e)

    def _check_weights(self, weights, raise_=True):
        msg = None
        for k, v in weights.items():
            if self.components and k not in self.components:
                msg = "weight %r names no declared component (components: %s)" % (k, ", ".join(self.components))
            elif not math.isfinite(float(v)):
                msg = "weight %r is %r, not a finite number" % (k, v)
            if msg:
                break
        if msg and raise_:
            raise ValueError(msg)
        return msg

    def _sync_start(self):
        """Under torch.distributed, every rank starts from the holder's stage and knows whether it is active."""
        td = dist()
        if td is None or td.get_world_size() == 1 or not self.active:  # PIXELIS_CHANNEL is every rank's or none's
            return
        board = Board.create(td.get_world_size(), self.rank, self._channel.path) if self._channel is not None else None
        box = [(self.stage._wire(), self.active, self.run_dir, self.resume, board and board.address)]
        td.broadcast_object_list(box, src=self.channel_rank)
        st, self.active, self.run_dir, self.resume, address = box[0]
        self.stage = Stage(st["index"], st["name"], st["weights"])
        if board is None and address is not None:
            board = Board.open(address, self.rank)
        self._board = Board.agree(td, board, self.channel_rank)
        if self._board is not None and self._channel is not None:
            self._channel.forward_to(self._post_news)

def training_loop(run: Run, train_step: Callable[[int, Stage], Mapping[str, Any]], steps: int, *,
                  save: Callable[[int], "str | os.PathLike[str]"] | None = None,
                  evaluate: Callable[[int], Mapping[str, Any]] | None = None, start: int = 0) -> str:
    """A plain training loop under the channel.

    train_step(step, stage) runs one step and returns its metrics (logged);
    save(step) writes a checkpoint and returns its path; evaluate(step)
    returns metrics (logged at that step). Commands: checkpoint → save,
    evaluate → evaluate, stop → save when asked (and save is given), then
    the loop ends; pause and stages are handled by run.step_boundary.
    Returns "done" after the last step (run.done() is called) or "stopped"
    (a stop command; no done()).
    """
    for step in range(start, steps):
        run.log(step, train_step(step, run.stage))
        for c in run.step_boundary(step):
            if c.kind == "checkpoint" and save is None:
                c.ack(False, "this trainer saves no checkpoints")
                continue
            if save is not None and (c.kind == "checkpoint" or (c.kind == "stop" and c.args.get("checkpoint"))):
                run.checkpoint_saved(save(step), step)
            if c.kind == "evaluate":
                if evaluate is None:
                    c.ack(False, "this trainer has no evaluation")
                    continue
                run.log(step, evaluate(step))
            c.ack()
            if c.kind == "stop":
                run.close()
                return "stopped"
    run.done()
    return "done"
