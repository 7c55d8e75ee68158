"""What a step costs, as metrics of the step's log: its wall time, the time
spent inside PixelisCallback's hooks in it, and the peak GPU memory so far.

    callback = figures.Timed(PixelisCallback(trainer))   # in its place
    trainer.add_callback(callback)

A step's time runs from the end of the one before (of train begin, for the
first) to the end of its own on_step_end: generation, loss, optimizer and
every callback. The Trainer logs a step after its on_step_end, so the hooks
of step N's log and save are counted in step N + 1, where they cost time.
"""

import time

import torch
from transformers import TrainerCallback

STEP_S = "perf/step_s"                  # the step's wall time, seconds
CALLBACK_S = "perf/callback_s"          # time inside the wrapped callback's hooks in that step
CALLBACK_SHARE = "perf/callback_share"  # CALLBACK_S / STEP_S
PEAK_GPU_GIB = "perf/peak_gpu_gib"      # torch.cuda.max_memory_allocated, GiB (on a GPU only)


class Timed(TrainerCallback):
    """inner, each of its hooks timed; its on_log gets the figures of the
    last finished step added to the logs (so the console gets them), and the
    Trainer's log_history entry of that log gets them too."""

    def __init__(self, inner):
        self.inner = inner
        self._in_hooks = 0.0  # seconds inside inner's hooks since the last step ended
        self._mark = None     # when the last step (or train begin) ended
        self._last = {}       # the figures of the last finished step
        for name in dir(TrainerCallback):
            if name.startswith("on_") and name not in ("on_log", "on_step_end", "on_train_begin"):
                setattr(self, name, self._timed(getattr(inner, name)))

    def _timed(self, hook):
        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return hook(*args, **kwargs)
            finally:
                self._in_hooks += time.perf_counter() - start
        return call

    def on_train_begin(self, *args, **kwargs):
        out = self._timed(self.inner.on_train_begin)(*args, **kwargs)
        self._mark, self._in_hooks = time.perf_counter(), 0.0
        return out

    def on_step_end(self, *args, **kwargs):
        out = self._timed(self.inner.on_step_end)(*args, **kwargs)
        now = time.perf_counter()
        step = now - self._mark
        self._last = {STEP_S: step, CALLBACK_S: self._in_hooks, CALLBACK_SHARE: self._in_hooks / step}
        if torch.cuda.is_available():
            self._last[PEAK_GPU_GIB] = torch.cuda.max_memory_allocated() / 2**30
        self._mark, self._in_hooks = now, 0.0
        return out

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and self._last:
            logs.update(self._last)
            # Trainer.log appended a copy of logs to log_history before calling on_log: that copy too.
            if state is not None and state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(self._last)
            self._last = {}
        return self._timed(self.inner.on_log)(args, state, control, logs=logs, **kwargs)
