"""The sizes of examples/trl_vlm's models and the step figures of its GPU
check (gpu_check.sh): the Qwen2.5-VL-3B configuration model.QWEN25_VL_3B
builds, counted on the meta device (no weight allocated), is the real
checkpoint's 3.75 B parameters; the tiny configuration is what it was; and
figures.Timed passes every hook on and logs the step's time and the
callback's share of it.

Run by `go test ./clients/python` (TestTRLStack)."""

import os
import sys
import time
import unittest

import torch
from transformers import Qwen2_5_VLForConditionalGeneration, TrainerCallback, TrainerControl, TrainerState

from serve_fixture import REPO

sys.path.insert(0, os.path.join(REPO, "examples", "trl_vlm"))

from pixelis_vlm import figures, model, tools  # noqa: E402

# Qwen/Qwen2.5-VL-3B-Instruct's config.json, the fields model.config sets from QWEN25_VL_3B.
REAL_3B_TEXT = dict(hidden_size=2048, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2,
                    intermediate_size=11008, max_position_embeddings=128000, vocab_size=151936,
                    tie_word_embeddings=True)
REAL_3B_VISION = dict(depth=32, hidden_size=1280, num_heads=16, intermediate_size=3420, out_hidden_size=2048,
                      window_size=112, fullatt_block_indexes=[7, 15, 23, 31], patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2)


def count(cfg):
    """(all, vision tower's) parameters of a model of cfg, built on the meta device."""
    with torch.device("meta"):
        m = Qwen2_5_VLForConditionalGeneration(cfg)
    vision = sum(p.numel() for p in m.model.visual.parameters())
    return sum(p.numel() for p in m.parameters()), vision


class Sizes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tok = model.tokenizer([], tools.schemas())

    def test_the_3b_configuration_is_qwen2_5_vl_3b(self):
        cfg = model.config(self.tok, model.QWEN25_VL_3B)
        for k, v in REAL_3B_TEXT.items():
            self.assertEqual(getattr(cfg.text_config, k), v, k)
        for k, v in REAL_3B_VISION.items():
            self.assertEqual(getattr(cfg.vision_config, k), v, k)
        rope = cfg.text_config.rope_parameters
        self.assertEqual(rope["mrope_section"], [16, 24, 24])
        self.assertEqual(rope["rope_theta"], 1000000.0)
        total, vision = count(cfg)
        # Qwen2.5-VL-3B-Instruct: 3.75 B parameters, its vision tower (with the merger) 0.67 B.
        self.assertAlmostEqual(total / 1e9, 3.75, delta=0.01, msg="%d parameters" % total)
        self.assertAlmostEqual(vision / 1e9, 0.67, delta=0.01, msg="%d in the vision tower" % vision)

    def test_the_tiny_configuration_keeps_its_sizes(self):
        cfg = model.config(self.tok)
        self.assertEqual(cfg.text_config.vocab_size, len(self.tok))
        self.assertEqual(cfg.text_config.rope_parameters["mrope_section"], [8, 4, 4])
        self.assertEqual(cfg.text_config.rope_parameters["rope_theta"], 10000.0)
        self.assertEqual((cfg.vision_config.intermediate_size, cfg.vision_config.window_size,
                          cfg.vision_config.fullatt_block_indexes), (128, 56, [1]))
        total, vision = count(cfg)
        # 1,389,632 with the 1,149 tokens of 200 conversations: the embedding is the rest.
        self.assertEqual(total - 128 * len(self.tok), 1389632 - 128 * 1149)


class Busy(TrainerCallback):
    """A callback whose on_step_end takes at least BUSY_S of the step, and that records its hooks."""

    BUSY_S = 0.02

    def __init__(self):
        self.called = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.called.append("on_step_begin")

    def on_step_end(self, args, state, control, **kwargs):
        self.called.append("on_step_end")
        end = time.perf_counter() + self.BUSY_S
        while time.perf_counter() < end:
            pass
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.called.append("on_log")
        self.logs = dict(logs)


class Figures(unittest.TestCase):
    def test_timed_passes_the_hooks_on_and_logs_the_step_s_figures(self):
        inner, control, state = Busy(), TrainerControl(), TrainerState()
        timed = figures.Timed(inner)
        timed.on_train_begin(None, state, control)
        timed.on_step_begin(None, state, control)
        self.assertIs(timed.on_step_end(None, state, control), control)
        state.global_step = 1
        logs = {"loss": 1.0}
        state.log_history.append({**logs, "step": 1})  # as Trainer.log does before on_log
        timed.on_log(None, state, control, logs=logs)
        self.assertEqual(inner.called, ["on_step_begin", "on_step_end", "on_log"])
        self.assertEqual(inner.logs, logs, "the figures reach the wrapped callback's on_log")
        self.assertEqual(state.log_history[-1], {**logs, "step": 1}, "and the Trainer's log_history")
        self.assertGreaterEqual(logs[figures.CALLBACK_S], Busy.BUSY_S)
        self.assertGreaterEqual(logs[figures.STEP_S], logs[figures.CALLBACK_S])
        self.assertAlmostEqual(logs[figures.CALLBACK_SHARE], logs[figures.CALLBACK_S] / logs[figures.STEP_S])
        self.assertEqual(figures.PEAK_GPU_GIB in logs, torch.cuda.is_available())
        later = {"loss": 0.5}
        timed.on_log(None, state, control, logs=later)
        self.assertNotIn(figures.STEP_S, later, "a step's figures are logged once")


if __name__ == "__main__":
    unittest.main()
