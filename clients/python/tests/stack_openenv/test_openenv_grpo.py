"""TRL's GRPOTrainer training through environment_factory on pixelis: each
rollout's environment is a pixelis.openenv.PixelisEnv, OpenEnv's
GenericEnvClient on a real `pixelis serve` (its WebSocket session): reset
starts a training task and hands the model its question, the operations are
the model's tools, and get_reward is the reward serve's own steps gave. Three GRPO steps of a tiny model (tests/stack_trl/
tiny.py) with the Qwen3 chat template TRL ships, so that TRL renders and
parses its tool calls; taught beforehand to open with one of four tool calls
(two tools, two answers), so that its rollouts step pixelis and the rewards of
a group differ: every step calls tools, and the policy's gradient is not zero.

Run by `go test ./clients/python` (TestOpenEnvStack) with the stack's
interpreter."""

import os
import shutil
import sys
import tempfile
import unittest

import datasets
import torch
import transformers
import trl
from tokenizers import decoders
from trl.chat_template_utils import qwen3_chat_template

from pixelis import Client
from pixelis.openenv import PixelisEnv, close
from serve_fixture import Server

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "stack_trl"))
import tiny  # noqa: E402  (tests/stack_trl/tiny.py, not a package)

transformers.logging.set_verbosity_error()

# The markup of the Qwen3 chat template: tokens of their own in the tiny
# vocabulary, special (dropped when completions are decoded) as in Qwen3's.
QWEN3_SPECIAL = ["<|im_start|>", "<|im_end|>"]
QWEN3_MARKUP = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>",
                "<think>", "</think>"]
# The tool calls the tiny model is taught before GRPO, so that its rollouts
# call pixelis's tools, with rewards that differ within a group. Each call's
# JSON is one token of the tiny vocabulary.
TOOL_CALLS = ['{"name": "read_text", "arguments": {}}', '{"name": "get_properties", "arguments": {}}',
              '{"name": "answer", "arguments": {"answer": "red"}}', '{"name": "answer", "arguments": {"answer": "blue"}}']
STEPS = 3
GENERATIONS = 4


def tool_tokenizer():
    """tiny's tokenizer with the Qwen3 chat template, whose tool calls TRL
    renders and parses: its markup, the assistant header's word and line
    break, and TOOL_CALLS are tokens of their own, and tokens decode without
    spaces between them, so that TRL's parser finds the header and the calls."""
    tok = tiny.tokenizer()
    tok.add_special_tokens({"additional_special_tokens": QWEN3_SPECIAL})
    tok.add_tokens(QWEN3_MARKUP + ["assistant", "\n"] + TOOL_CALLS)
    tok.backend_tokenizer.decoder = decoders.Fuse()
    tok.eos_token = "<|im_end|>"
    tok.chat_template = qwen3_chat_template
    return tok


def teach_tool_calls(model, tok, tools, questions, window=24, steps=60):
    """Train model to answer each question's prompt with one of TOOL_CALLS (as
    a chat model that calls tools would), on the prompt's last window tokens."""
    ids, labels = [], []
    for q in questions:
        prompt = tok.apply_chat_template([{"role": "user", "content": PROMPT + " " + q}], tools=tools,
                                         add_generation_prompt=True, tokenize=False)
        for call in TOOL_CALLS:
            p, full = tok(prompt)["input_ids"], tok(prompt + "<tool_call>" + call + "</tool_call><|im_end|>")["input_ids"]
            ids.append(full[len(p) - window:])
            labels.append([-100] * window + full[len(p):])
    ids, labels = torch.tensor(ids), torch.tensor(labels)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        model(input_ids=ids, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    return model


PROMPT = "answer the question about the image"


class GRPOOnOpenEnv(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.addCleanup(self.server.stop)
        self.out = tempfile.mkdtemp(prefix="pxl-openenv-grpo-")
        self.addCleanup(shutil.rmtree, self.out, True)
        self.made = []  # every environment the factory made
        self.addCleanup(lambda: [close(e) for e in self.made])

    def factory(self):
        """TRL's environment_factory: a pixelis.openenv.PixelisEnv on the server."""
        e = PixelisEnv(self.server.url, token=self.server.token)
        self.made.append(e)
        return e

    def test_three_grpo_steps_with_environment_factory(self):
        tasks = 8
        client = Client(self.server.url, token=self.server.token)
        self.addCleanup(client.close)
        questions = []
        for i in range(tasks):
            ep = client.create_episode(split="train", index=i, observation={"coarse": False})
            questions.append(ep["task"]["question"])
            client.close_episode(ep["episode"])
        tok = tool_tokenizer()
        probe = self.factory()
        tools = [getattr(probe, name) for name in TOOLS]
        model = teach_tool_calls(tiny.model(tok), tok, tools, questions)
        cfg = trl.GRPOConfig(self.out, max_steps=STEPS, per_device_train_batch_size=GENERATIONS,
                             num_generations=GENERATIONS, max_completion_length=48, **tiny.common_args())
        prompts = datasets.Dataset.from_dict({"prompt": [[{"role": "user", "content": PROMPT}]] * tasks,
                                              "task_index": list(range(tasks))})
        trainer = trl.GRPOTrainer(model=model, processing_class=tok, args=cfg, train_dataset=prompts,
                                  environment_factory=self.factory)
        self.assertEqual(sorted(t.__name__ for t in trainer.tools), sorted(TOOLS))
        trainer.train()
        self.assertEqual(trainer.state.global_step, STEPS)
        logged = [h for h in trainer.state.log_history if "rewards/PixelisEnv/mean" in h]
        self.assertEqual(len(logged), STEPS, trainer.state.log_history)
        self.assertGreater(sum(h["tools/call_frequency"] for h in logged), 0, "the model called no tool")
        self.assertTrue(any(h["grad_norm"] > 0 for h in logged), "no step changed the policy: %s" % logged)
        # Every rollout played a task of pixelis serve: its environment's episode is a live serve episode whose
        # trajectory holds the steps its reward was summed from.
        played = [e for e in self.made if e.episode is not None]
        self.assertGreaterEqual(len(played), GENERATIONS)
        stepped = 0
        for e in played:
            traj = client.request("GET", "/v1/episodes/%s/trajectory" % e.episode)
            self.assertEqual(len(traj["steps"]), len(e.rewards))
            self.assertEqual(traj["task"]["split"], "train")
            stepped += len(e.rewards)
        self.assertGreater(stepped, 0)
        self.assertTrue(any(h["rewards/PixelisEnv/mean"] != 0 for h in logged), logged)


TOOLS = ["segment_object_at", "get_properties", "zoom_in", "read_text", "track_object", "answer"]


if __name__ == "__main__":
    unittest.main()
