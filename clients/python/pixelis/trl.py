"""A transformers/TRL TrainerCallback that puts a Trainer under `pixelis launch`.

    from pixelis.trl import PixelisCallback

    trainer = GRPOTrainer(model=..., reward_funcs=[accuracy, fmt], args=GRPOConfig(...), ...)
    trainer.add_callback(PixelisCallback(trainer))
    trainer.train()

Built with the trainer (as TRL's own callbacks are), it connects the channel
at once (pixelis.sdk.connect; a no-op outside `pixelis launch`), declaring
the trainer's reward functions (`reward_func_names`, else the functions'
names) as the run's reward components and its TrainingArguments as its
config. Then:

- on_log → the step's logs go to pixelis as they are (a None TRL logs for an
  all-NaN series stays None), and each function's `rewards/<name>/mean`
  (`rewards/<name>` in older TRL) also as `reward/<name>/raw`, the raw mean
  pixelis's KPIs and curriculum read.
- on_step_end → the commands of this step boundary (a collective under
  torch.distributed: every rank gets them at the same step): checkpoint →
  control.should_save (acknowledged in on_save, which also reports the
  checkpoint-N directory); evaluate → control.should_evaluate (acknowledged
  in on_evaluate); stop → control.should_training_stop, with should_save when
  it asks for a checkpoint. pause blocks in on_step_end (the Trainer has no
  pause flag) while heartbeats go on, until resume or stop.
- a stage → trainer.reward_weights becomes a float32 tensor in reward_funcs
  order, the same on every rank; a function the stage does not name keeps
  the weight it had when the callback was built. GRPOTrainer reads
  reward_weights at every scoring, so a new stage takes effect at the next
  generation batch (with steps_per_generation > 1, up to that many optimizer
  steps later), not at the step that is running. The stage's ack names that
  step (the first step at or after the stage's from_step that begins a
  generation batch: steps 1, k+1, 2k+1, … for a batch every k optimizer
  steps, k = steps_per_generation × num_iterations / gradient_accumulation_steps),
  and each step's metrics carry the weights it was scored with.
- live edits (the console's x, `pixelis edit`): the callback declares
  learning_rate (the optimiser's groups and the scheduler's base rates are
  scaled by new/old, so the schedule keeps its shape; the Trainer's
  checkpoint keeps the scheduler, so a resume goes on with it) and, for a
  trainer with a numeric beta (GRPOTrainer's KL coefficient), beta, which
  the trainer reads at each loss. Each applies from the step its ack names.
  A fork's edits, which its welcome carries, are taken in on_train_begin
  (the boundary before the first step: the optimizer and scheduler exist by
  then), so the fork's first optimizer step trains with them.
  The Trainer's checkpoints keep the edits (trainer_state.json's
  stateful_callbacks, under "pixelis"), so a run resumed from one goes on
  with them: on_train_begin sets beta again, and the learning rate the next
  edit scales from (the optimiser's and scheduler's rates come back with
  their own state).
- a stage weight naming a function the trainer lacks is refused: when
  building the callback (the default weights or pixelis's first stage:
  ValueError, or pixelis.sdk.Refused from the handshake) and later (the
  command's ack says so; the weights stay).

A SIGTERM handler the Trainer installed (transformers'
enable_jit_checkpoint) stays in place: the SDK takes SIGTERM as a stop only
where it has its default action. The checkpoint that handler saves (it calls
no on_save) is reported when training ends, and the run ends stopped, not
done, so that `pixelis resume` continues from it.

A Trainer without reward functions (transformers.Trainer, SFT) takes a
stage with no weights, as pixelis's welcome carries when it runs no
curriculum, and refuses one that names a weight.

Tested under the real transformers.Trainer and TRL's GRPOTrainer at the
versions of the pinned TRL stack (clients/python/locks/trl.txt;
clients/python/tests/stack_trl: checkpoint, pause, evaluate, stop, resume,
SIGTERM under transformers' handler, a stage's weighted reward, two processes
under accelerate launch), and against a stand-in of the callback interface
(clients/python/tests/trainer_standin.py) for the rest.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Iterable, Mapping

from . import sdk

try:
    from transformers import TrainerCallback as _TrainerCallback
except ImportError:  # no transformers: nothing can call the callback, but it can be built and read
    class _TrainerCallback:  # type: ignore[no-redef]
        pass


def reward_names(trainer: Any) -> list[str]:
    """The trainer's reward functions' names, in reward_funcs order."""
    names = getattr(trainer, "reward_func_names", None)
    if names:
        return [str(n) for n in names]
    out = []
    for f in getattr(trainer, "reward_funcs", None) or []:
        name = getattr(f, "__name__", None)
        if name is None:  # a reward model: its config's name, as TRL names it
            path = getattr(getattr(f, "config", None), "_name_or_path", None) or type(f).__name__
            name = str(path).split("/")[-1]
        out.append(name)
    return out


def _args_config(args):
    if args is None:
        return {}
    to_dict = getattr(args, "to_dict", None)
    return to_dict() if callable(to_dict) else dict(vars(args))


def _number_or_none(v):
    if v is None or isinstance(v, (int, float)):
        return True
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


_STATE_KEY = "pixelis"  # the callback's entry in TrainerState.stateful_callbacks


def _checkpoint_dir(args, state):
    """Where the Trainer saves the checkpoint of this step (transformers' PREFIX_CHECKPOINT_DIR)."""
    return os.path.join(args.output_dir, "checkpoint-%d" % state.global_step)


def _complete(path):
    """A checkpoint directory transformers finished writing (its JIT save leaves a marker until then)."""
    return os.path.isfile(os.path.join(path, "trainer_state.json")) and not os.path.exists(
        os.path.join(path, "checkpoint-is-incomplete.txt"))


class PixelisCallback(_TrainerCallback):
    """The channel to pixelis as a TrainerCallback (see the module's text)."""

    def __init__(self, trainer: Any, reports: Iterable[str] = (), config: Mapping[str, Any] | None = None,
                 default_weights: Mapping[str, float] | None = None, phase: str | None = None,
                 channel: str | None = None) -> None:
        self.trainer = trainer
        self.names = reward_names(trainer)
        rw = getattr(trainer, "reward_weights", None)
        self._initial = [float(w) for w in rw.tolist()] if rw is not None else [1.0] * len(self.names)
        self._lacking(default_weights or {}, "default_weights")
        self.run = sdk.connect(components=self.names, reports=reports,
                               config=config if config is not None else _args_config(getattr(trainer, "args", None)),
                               default_weights=default_weights, channel=channel, log_keys=sdk.LOG_KEYS_HF,
                               editable=self._editable())
        try:
            self._lacking(self.run.stage.weights, "pixelis's stage %r" % self.run.stage.name)
        except ValueError:
            self.run.close()
            raise
        self.phase_name = phase or ("rft" if self.names else "sft")
        self._reported = None      # the last checkpoint on_save reported
        self._built = time.time()  # a checkpoint written since is of this training
        self._saves: list[sdk.Command] = []     # commands answered by the next on_save
        self._evals: list[sdk.Command] = []     # commands answered by the next on_evaluate
        self._stopped = False
        self._step = 0       # the newest step that ended
        self._edits: dict[str, float] = {}  # field → value of the edits applied, for the checkpoints
        self._early: list[sdk.Command] = []  # commands of the boundary before the first step, not carried out yet
        self.run.on("stage", self._take_stage)
        self.run.on("edit", self._take_edit)
        if self.run.active or default_weights:
            ok = self._apply(self.run.stage.weights)
            if ok is not True:
                self.run.close()
                raise ValueError(ok[1])
        self._weights = [(0, self._in_use())]  # (step, {function: weight}): what scoring uses from that step on

    def _lacking(self, weights, what):
        missing = [k for k in weights if k not in self.names]
        if missing:
            raise ValueError("%s: weight %r names no reward function of the trainer (its functions: %s)"
                             % (what, missing[0], ", ".join(self.names) or "none"))

    def _apply(self, weights):
        """Set trainer.reward_weights from a stage's weights: True, or (False, reason)."""
        missing = [k for k in weights if k not in self.names]
        if missing:
            return False, "weight %r names no reward function of the trainer (its functions: %s)" % (
                missing[0], ", ".join(self.names) or "none")
        old = getattr(self.trainer, "reward_weights", None)
        if old is None and not weights:
            return True  # a Trainer without reward functions (SFT): nothing to weigh
        if old is None:
            return False, "the trainer has no reward_weights"
        import torch  # a Trainer runs on torch: it is imported already
        values = [float(weights.get(n, w)) for n, w in zip(self.names, self._initial)]
        self.trainer.reward_weights = torch.tensor(values, dtype=torch.float32, device=old.device)
        return True

    def _take_stage(self, c):
        every = self._generation_every()
        at = c.applies_from if c.applies_from is not None else self._step + 1
        while (at - 1) % every:
            at += 1
        ok = self._apply(self.run.stage.weights)
        if ok is True:
            c.applies_from = at
            self._weights.append((at, self._in_use()))
        return ok

    def _editable(self):
        """The settings pixelis may change, with their ranges: the learning rate, and beta when the trainer has one."""
        out = {"learning_rate": (0.0, 1.0)}
        beta = getattr(self.trainer, "beta", None)
        if isinstance(beta, (int, float)) and not isinstance(beta, bool):
            out["beta"] = (0.0, 100.0)
        return out

    def _take_edit(self, c):
        """A live edit, from the next step: True, or (False, reason)."""
        field, value = c.args.get("field"), float(c.args.get("value"))
        if field == "beta" and "beta" in self._editable():
            self.trainer.beta = value
            self._edits["beta"] = value
            return True
        if field != "learning_rate":
            return False, "%r is not a setting this callback declared editable" % (field,)
        args, opt = getattr(self.trainer, "args", None), getattr(self.trainer, "optimizer", None)
        old = float(getattr(args, "learning_rate", 0.0) or 0.0)
        if opt is None or old <= 0:
            return False, "the trainer has no optimizer yet, or a learning rate of 0 to scale"
        scale = value / old
        for g in opt.param_groups:
            g["lr"] = g["lr"] * scale
        sched = getattr(self.trainer, "lr_scheduler", None)
        if sched is not None and hasattr(sched, "base_lrs"):
            sched.base_lrs = [b * scale for b in sched.base_lrs]
        if sched is not None and isinstance(getattr(sched, "_last_lr", None), list):
            # the rate the Trainer logs for the step (get_last_lr), read before the scheduler steps
            sched._last_lr = [x * scale for x in sched._last_lr]
        args.learning_rate = value
        self._edits["learning_rate"] = value
        return True

    def _keep_edits(self, state):
        """Put the edits applied so far in the TrainerState the Trainer writes
        into every checkpoint (trainer_state.json), the JIT save on SIGTERM
        included. The key is no callback's class name, so the Trainer's own
        restore of callbacks (restore_callback_states_from_checkpoint) passes
        it by rather than building a second callback."""
        kept = getattr(state, "stateful_callbacks", None)
        if isinstance(kept, dict) and self._edits:
            kept[_STATE_KEY] = {"edits": dict(self._edits)}

    def _restore_edits(self, state):
        """The edits a resumed run's checkpoint kept, applied again: beta on the
        trainer; the learning rate only as args.learning_rate, the rate the next
        edit scales from, since the optimiser's groups and the scheduler's base
        rates were restored edited with their own state."""
        kept = getattr(state, "stateful_callbacks", None)
        entry = kept.get(_STATE_KEY) if isinstance(kept, dict) else None
        edits = entry.get("edits") if isinstance(entry, dict) else None
        if not isinstance(edits, dict):
            return
        if "beta" in edits and "beta" in self._editable():
            self.trainer.beta = float(edits["beta"])
        args = getattr(self.trainer, "args", None)
        if "learning_rate" in edits and args is not None:
            args.learning_rate = float(edits["learning_rate"])
        self._edits.update({k: float(v) for k, v in edits.items() if k in ("beta", "learning_rate")})

    def _in_use(self):
        """The trainer's reward weights by function name."""
        rw = getattr(self.trainer, "reward_weights", None)
        values = [float(w) for w in rw.tolist()] if rw is not None else self._initial
        return dict(zip(self.names, values))

    def _generation_every(self):
        """Optimizer steps from one generation batch to the next (GRPOTrainer
        generates once per steps_per_generation × num_iterations micro-batches)."""
        args = getattr(self.trainer, "args", None)
        acc = max(1, int(getattr(args, "gradient_accumulation_steps", 1) or 1))
        per = int(getattr(args, "steps_per_generation", None) or acc)
        iterations = max(1, int(getattr(args, "num_iterations", 1) or 1))
        return max(1, -(-per * iterations // acc))

    def _used(self, step):
        """The weights step was scored with, as far as the callback set them."""
        used = self._weights[0][1]
        for at, w in self._weights:
            if at > step:
                break
            used = w
        return used

    # --- the Trainer's events ---------------------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._restore_edits(state)  # a resumed run's state is its checkpoint's by now
        self.run.phase(self.phase_name, state.global_step)
        # The boundary before the first step: the Trainer has built (or restored) its optimizer and
        # scheduler by now and reads the learning rate and beta only inside a step, so the edits a
        # fork's welcome carries apply from its first step. The Trainer clears its control flags as
        # a step begins: a checkpoint, evaluate or stop that came with them waits for that step's end.
        self._early = self.run.step_boundary(state.global_step)

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if not logs:
            return
        metrics = {k: v for k, v in logs.items() if _number_or_none(v)}
        for name in self.names:
            for key in ("rewards/%s/mean" % name, "rewards/%s" % name):
                if key in logs and _number_or_none(logs[key]):
                    metrics["reward/%s/raw" % name] = logs[key]
                    break
        self.run.log(state.global_step, metrics, weights=self._used(state.global_step))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self._step = state.global_step
        early, self._early = self._early, []
        for c in early + self.run.step_boundary(state.global_step):  # blocks while paused
            if c.kind == "checkpoint":
                control.should_save = True
                self._saves.append(c)
            elif c.kind == "evaluate":
                control.should_evaluate = True
                self._evals.append(c)
            elif c.kind == "stop":
                control.should_training_stop = True
                self._stopped = True
                if c.args.get("checkpoint"):
                    control.should_save = True
                    self._saves.append(c)
                else:
                    c.ack()
        self._keep_edits(state)
        return control

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        path = _checkpoint_dir(args, state)
        self.run.checkpoint_saved(path, state.global_step)
        self._reported = path
        for c in self._saves:
            c.ack()
        self._saves = []

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        for c in self._evals:
            c.ack()
        self._evals = []

    def _jit_checkpoint(self, args):
        """(path, step) of the checkpoint transformers' SIGTERM handler
        (enable_jit_checkpoint) saved in this training, or None. It calls no
        on_save, and saves the step before the one running when it fires: the
        newest checkpoint, written since the callback was built, that on_save did not report."""
        if not getattr(args, "enable_jit_checkpoint", False) or not os.path.isdir(args.output_dir):
            return None
        from transformers.trainer_utils import get_last_checkpoint
        path = get_last_checkpoint(args.output_dir)
        if path is None or path == self._reported or not _complete(path):
            return None
        state_file = os.path.join(path, "trainer_state.json")
        if os.path.getmtime(state_file) < self._built:
            return None
        with open(state_file) as f:
            return path, int(json.load(f)["global_step"])

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        jit = self._jit_checkpoint(args)
        if jit is not None:  # transformers' SIGTERM handler saved it and stopped training
            self.run.checkpoint_saved(*jit)
            self._stopped = True
        for c in self._saves + self._evals:
            c.ack(False, "training ended before it was carried out")
        self._saves, self._evals = [], []
        if self._stopped:
            self.run.close()  # stopped early: no done
        else:
            self.run.done()
