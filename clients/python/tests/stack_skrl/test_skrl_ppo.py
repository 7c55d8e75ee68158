"""skrl's PPO trains on pixelis.VectorEnv through skrl's own gymnasium
wrapper and SequentialTrainer, unmodified but for the environment's
construction: 2,000 environment steps (8 envs x 250 vector steps) against a
real `pixelis serve`, the policy updated by them.

skrl takes a gymnasium vector environment as it is (wrap_env(env,
wrapper="gymnasium")) and relies on its autoreset: it resets once, then
steps. Its categorical policy draws from every action, masks unseen: serve
penalises a forbidden action (reward_terms["penalty"]) instead of refusing it.
"""

import tempfile
import unittest

import torch
from skrl.agents.torch.ppo import PPO
from skrl.envs.wrappers.torch import wrap_env
from skrl.memories.torch import RandomMemory
from skrl.models.torch import CategoricalMixin, DeterministicMixin, Model
from skrl.trainers.torch import SequentialTrainer

from pixelis import Client, VectorEnv
from serve_fixture import Server

NUM_ENVS, ENV_STEPS = 8, 2000


class Policy(CategoricalMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        CategoricalMixin.__init__(self, unnormalized_log_prob=True)
        self.net = torch.nn.Sequential(torch.nn.Linear(self.num_observations, 64), torch.nn.Tanh(),
                                       torch.nn.Linear(64, self.num_actions))

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


class Value(DeterministicMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self)
        self.net = torch.nn.Sequential(torch.nn.Linear(self.num_observations, 64), torch.nn.Tanh(),
                                       torch.nn.Linear(64, 1))

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


class SkrlPPOTest(unittest.TestCase):
    def setUp(self):
        self.server = Server("--max-episodes", "64")
        self.addCleanup(self.server.stop)
        self.client = Client(self.server.url, token=self.server.token)
        self.addCleanup(self.client.close)
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_ppo_runs_2000_env_steps(self):
        torch.manual_seed(0)
        vec = VectorEnv(self.client, NUM_ENVS, seed=0)  # the one line that is pixelis's
        self.addCleanup(vec.close)
        env = wrap_env(vec, wrapper="gymnasium")
        device = torch.device("cpu")
        models = {"policy": Policy(env.observation_space, env.action_space, device),
                  "value": Value(env.observation_space, env.action_space, device)}
        before = [p.detach().clone() for p in models["policy"].parameters()]
        memory = RandomMemory(memory_size=16, num_envs=env.num_envs, device=device)
        cfg = {"rollouts": 16, "learning_epochs": 2, "mini_batches": 2,
               "experiment": {"directory": self.tmp.name, "write_interval": 0, "checkpoint_interval": 0}}
        agent = PPO(models=models, memory=memory, observation_space=env.observation_space,
                    action_space=env.action_space, device=device, cfg=cfg)
        trainer = SequentialTrainer(env=env, agents=agent, cfg={
            "timesteps": ENV_STEPS // NUM_ENVS, "headless": True, "disable_progressbar": True,
            "close_environment_at_exit": False})
        trainer.train()
        state = self.client.vector(vec.id)
        self.assertEqual(state["steps"] * state["n"], ENV_STEPS)
        changed = any(not torch.equal(a, b) for a, b in zip(before, models["policy"].parameters()))
        self.assertTrue(changed, "PPO never updated the policy")


if __name__ == "__main__":
    unittest.main()
