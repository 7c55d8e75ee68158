"""A small PyTorch policy trained through VectorEnv against a real `pixelis
serve`: behaviour cloning of the expert, whose demonstrations are played
through a VectorEnv (one request per vector step) to collect the coarse view
and the mask each expert action was taken on, then greedy evaluation through
a VectorEnv on validation tasks. The trained policy must answer right
clearly more often than the same network untrained; both rates are printed.

Needs torch and numpy: without them the test skips, except under CI=true,
where it fails.
"""

import math
import sys
import time
import unittest

from pixelis import Client, VectorEnv
from serve_fixture import Server, need

np = need("numpy")
torch = need("torch")

TRAIN_TASKS = 400  # demonstrations cloned
VAL_TASKS = 256    # validation episodes per evaluation
EPOCHS = 20
BATCH = 128


def demonstrations(client, tasks):
    """(obs, mask, action) of every expert step, collected by playing the
    expert's actions through a VectorEnv."""
    demo = client.experts(tasks)  # the actions only: the observations come from the vector
    plans = [[a["index"] for a in ex["actions"]] for ex in demo["experts"]]
    env = VectorEnv(client, tasks=tasks, autoreset_mode="disabled")
    obs, info = env.reset()
    xs, masks, ys = [], [], []
    for t in range(max(map(len, plans))):
        live = [i for i, p in enumerate(plans) if t < len(p)]
        xs.append(obs[live].copy())
        masks.append(info["action_mask"][live].copy())
        ys.append([plans[i][t] for i in live])
        obs, _, _, _, info = env.step([p[t] if t < len(p) else 0 for p in plans])
    env.close()
    return (torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(masks)),
            torch.tensor([a for y in ys for a in y]))


def masked_logits(net, obs, mask):
    return net(obs).masked_fill(~mask, -1e9)  # never an action the mask forbids


def success(client, net, tasks):
    """The share of tasks the greedy policy answers right, through a VectorEnv."""
    env = VectorEnv(client, tasks=tasks, autoreset_mode="disabled")
    obs, info = env.reset()
    correct = {}
    with torch.no_grad():
        while len(correct) < len(tasks):
            logits = masked_logits(net, torch.from_numpy(obs), torch.from_numpy(info["action_mask"]))
            obs, _, _, _, info = env.step(logits.argmax(1).numpy())
            for f in info["finished"][info["_finished"]]:
                correct[f["slot"]] = f["correct"]
    env.close()
    return sum(correct.values()) / len(tasks)


class TrainTorchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.client = Client(cls.server.url, token=cls.server.token)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_behaviour_cloning_through_the_vector_env(self):
        torch.manual_seed(0)
        torch.set_num_threads(1)  # the server shares the machine
        t0 = time.monotonic()
        spec = self.client.spec()
        width, actions = spec["observation"]["coarse"]["shape"][0], spec["action_space"]["size"]
        net = torch.nn.Sequential(torch.nn.Linear(width, 256), torch.nn.ReLU(), torch.nn.Linear(256, actions))
        val = [{"split": "val", "index": i} for i in range(VAL_TASKS)]
        before = success(self.client, net, val)

        x, mask, y = demonstrations(self.client, [{"split": "train", "index": i} for i in range(TRAIN_TASKS)])
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        for _ in range(EPOCHS):
            perm = torch.randperm(len(x))
            for b in range(0, len(x), BATCH):
                i = perm[b:b + BATCH]
                loss = torch.nn.functional.cross_entropy(masked_logits(net, x[i], mask[i]), y[i])
                opt.zero_grad()
                loss.backward()
                opt.step()
        after = success(self.client, net, val)

        se = math.sqrt(before * (1 - before) / VAL_TASKS + after * (1 - after) / VAL_TASKS)
        print("\nbehaviour cloning through VectorEnv: validation success %.3f untrained -> %.3f trained "
              "(%d val tasks, difference %.3f, standard error %.3f; %d expert steps of %d tasks, %d epochs, %.0f s)"
              % (before, after, VAL_TASKS, after - before, se, len(x), TRAIN_TASKS, EPOCHS, time.monotonic() - t0),
              file=sys.stderr)
        self.assertGreater(after - before, max(0.1, 4 * se), "the trained policy is not clearly better than the untrained one")


if __name__ == "__main__":
    unittest.main()
