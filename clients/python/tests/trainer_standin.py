"""A stand-in of the part of transformers' Trainer interface that callbacks
see, and of TRL's GRPOTrainer's reward weighting, for testing
pixelis.trl.PixelisCallback where transformers and TRL cannot be installed.

It mirrors transformers' TrainerCallback (every event a no-op), TrainerControl
(should_* flags, reset per step as _new_step does), TrainerState, the
CallbackHandler's event call (a callback's non-None return becomes the
control) and the inner training loop's order of events: on_step_begin, the
step, global_step += 1, on_step_end, then log / evaluate / save as the
control asks (on_log, on_evaluate, on_save), then the stop check. Its GRPO
step scores a group with every reward function and weights the scores with
`reward_weights` as GRPOTrainer does:
(rewards_per_func * reward_weights.unsqueeze(0)).nansum(dim=1).

install() puts it in sys.modules as `transformers` when the real one is absent.
"""

import os
import signal
import sys
import types

import torch


class TrainerCallback:
    def on_init_end(self, args, state, control, **kwargs): pass
    def on_train_begin(self, args, state, control, **kwargs): pass
    def on_train_end(self, args, state, control, **kwargs): pass
    def on_epoch_begin(self, args, state, control, **kwargs): pass
    def on_epoch_end(self, args, state, control, **kwargs): pass
    def on_step_begin(self, args, state, control, **kwargs): pass
    def on_step_end(self, args, state, control, **kwargs): pass
    def on_evaluate(self, args, state, control, **kwargs): pass
    def on_save(self, args, state, control, **kwargs): pass
    def on_log(self, args, state, control, **kwargs): pass


class TrainerControl:
    def __init__(self):
        self.should_training_stop = False
        self.should_epoch_stop = False
        self.should_save = False
        self.should_evaluate = False
        self.should_log = False

    def _new_step(self):
        self.should_save = False
        self.should_evaluate = False
        self.should_log = False


class TrainerState:
    def __init__(self, max_steps):
        self.global_step = 0
        self.max_steps = max_steps
        self.epoch = 0.0
        self.is_world_process_zero = True
        self.log_history = []


class TrainingArguments:
    def __init__(self, output_dir, max_steps=10, logging_steps=1, reward_weights=None, learning_rate=1e-6,
                 steps_per_generation=None, gradient_accumulation_steps=1, num_iterations=1):
        self.output_dir, self.max_steps, self.logging_steps = output_dir, max_steps, logging_steps
        self.reward_weights, self.learning_rate = reward_weights, learning_rate
        self.steps_per_generation, self.gradient_accumulation_steps = steps_per_generation, gradient_accumulation_steps
        self.num_iterations = num_iterations

    def to_dict(self):
        return dict(vars(self))


def install():
    """The stand-in as the module `transformers`, unless the real one is importable."""
    try:
        import transformers  # noqa: F401
        return
    except ImportError:
        pass
    m = types.ModuleType("transformers")
    m.TrainerCallback, m.TrainerControl, m.TrainerState, m.TrainingArguments = (
        TrainerCallback, TrainerControl, TrainerState, TrainingArguments)
    m.__doc__ = "pixelis's test stand-in of transformers' callback interface"
    sys.modules["transformers"] = m


class GRPOTrainer:
    """Scores a group of G completions per step with every reward function,
    weighted by reward_weights as they were at the step's generation batch
    (one every steps_per_generation × num_iterations / gradient_accumulation_steps
    optimizer steps, as GRPOTrainer buffers its generations); records the
    weights each step used."""

    def __init__(self, reward_funcs, args, group=4, jit_checkpoint=True):
        self.reward_funcs, self.args, self.group = reward_funcs, args, group
        self.reward_func_names = [f.__name__ for f in reward_funcs]
        w = args.reward_weights if args.reward_weights is not None else [1.0] * len(reward_funcs)
        self.reward_weights = torch.tensor(w, dtype=torch.float32)
        self.callbacks = []
        self.weights_used = {}   # step -> reward_weights at that step's scoring
        self._batch_weights = None  # reward_weights as the current generation batch read them
        self.saved = []          # checkpoint directories written
        self.evaluated = []      # steps at which evaluate ran
        self.state = TrainerState(args.max_steps)
        self.control = TrainerControl()
        if jit_checkpoint:       # as transformers' enable_jit_checkpoint: a SIGTERM handler of the Trainer's own
            self.sigterm_handler = lambda signum, frame: None
            signal.signal(signal.SIGTERM, self.sigterm_handler)

    def add_callback(self, cb):
        self.callbacks.append(cb)

    def _event(self, name, **kwargs):
        for cb in self.callbacks:
            r = getattr(cb, name)(self.args, self.state, self.control, **kwargs)
            if r is not None:
                self.control = r

    def _score(self):
        rewards_per_func = torch.tensor([[f(i) for f in self.reward_funcs] for i in range(self.group)], dtype=torch.float32)
        a = self.args
        every = -(-(a.steps_per_generation or a.gradient_accumulation_steps) * a.num_iterations // a.gradient_accumulation_steps)
        if self.state.global_step % every == 0:
            self._batch_weights = self.reward_weights.clone()
        self.weights_used[self.state.global_step] = self._batch_weights.clone()
        rewards = (rewards_per_func * self._batch_weights.unsqueeze(0)).nansum(dim=1)
        logs = {"loss": float(-rewards.mean()), "kl": None, "reward": float(rewards.mean())}
        for k, name in enumerate(self.reward_func_names):
            logs["rewards/%s/mean" % name] = float(rewards_per_func[:, k].mean())
        return logs

    def train(self):
        self._event("on_train_begin")
        while self.state.global_step < self.state.max_steps:
            self.control._new_step()
            self._event("on_step_begin")
            logs = self._score()
            self.state.global_step += 1
            self._event("on_step_end")
            if self.state.global_step % self.args.logging_steps == 0:
                self.control.should_log = True
            if self.control.should_log:
                self.state.log_history.append(dict(logs, step=self.state.global_step))
                self._event("on_log", logs=logs)
            if self.control.should_evaluate:
                self.evaluated.append(self.state.global_step)
                self._event("on_evaluate", metrics={"eval_loss": 0.5})
            if self.control.should_save:
                path = os.path.join(self.args.output_dir, "checkpoint-%d" % self.state.global_step)
                os.makedirs(path, exist_ok=True)
                torch.save(self.reward_weights, os.path.join(path, "state.pt"))
                self.saved.append(path)
                self._event("on_save")
            if self.control.should_training_stop:
                break
        self._event("on_train_end")
