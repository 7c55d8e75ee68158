"""OpenEnv's own clients (the pinned openenv package, locks/openenv.txt) on a
real `pixelis serve`: GenericEnvClient over the WebSocket session, and
MCPToolClient over HTTP MCP with its WebSocket attached, play 100 validation
tasks with the expert's actions and get, step by step, the results, rewards,
endings and answers that serve's own episode endpoints give; the tools answer
with the new view as PNG image content, the pixels of view.png. The bearer
token travels in the clients' headers; without it the server refuses them.

Run by `go test ./clients/python` (TestOpenEnvStack) with the stack's
interpreter."""

import base64
import unittest

from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

from pixelis import Client, decode_png
from serve_fixture import Server

TASKS = 100


def expert_plays(client, n):
    """The expert's actions on validation tasks 0..n-1, and what serve's own
    episode endpoints answer to each: [(task, [(action, step answer), ...])]."""
    tasks = [{"split": "val", "index": i} for i in range(n)]
    plans = client.experts(tasks, observation={"coarse": False})["experts"]
    out = []
    for task, plan in zip(tasks, plans):
        ep = client.create_episode(observation={"coarse": False}, **task)
        steps = []
        for a in plan["actions"]:
            action = {k: a[k] for k in ("op", "x", "y", "answer") if a.get(k) is not None}
            steps.append((action, client.step(ep["episode"], **action)))
        client.close_episode(ep["episode"])
        out.append((task, steps))
    return out


class OpenEnvClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # val tasks' expert actions are held out unless the server is told why.
        cls.server = Server("--heldout-expert", "the OpenEnv clients replay the expert on validation tasks")
        cls.client = Client(cls.server.url, token=cls.server.token)
        cls.url = cls.server.url + "/openenv"
        cls.headers = {"Authorization": "Bearer " + cls.server.token}
        cls.plays = expert_plays(cls.client, TASKS)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def same_step(self, where, got, want):
        """An OpenEnv observation of a step against serve's step answer."""
        for k in ("result", "terminated", "truncated", "reward_terms", "reward", "index", "region", "allowed_actions"):
            self.assertEqual(got[k], want[k], "%s: %s" % (where, k))
        self.assertEqual(got.get("finish"), want.get("finish"), where)

    def test_generic_env_client_plays_the_expert(self):
        answers = 0
        with GenericEnvClient(base_url=self.url, headers=self.headers).sync() as env:
            for task, steps in self.plays:
                first = env.reset(**task)
                self.assertIsNone(first.reward)
                self.assertFalse(first.done)
                self.assertEqual(first.observation["task"]["index"], task["index"])
                for k, (action, want) in enumerate(steps):
                    r = env.step(action)
                    where = "task %d step %d" % (task["index"], k + 1)
                    self.assertEqual(r.reward, want["reward"], where)
                    self.assertEqual(r.done, want["done"], where)
                    self.same_step(where, r.observation, want)
                self.assertTrue(r.done)
                answers += r.observation["finish"]["correct"]
                state = env.state()
                self.assertEqual(state["step_count"], len(steps))
        self.assertEqual(answers, sum(s[-1][1]["finish"]["correct"] for _, s in self.plays))

    def test_generic_env_client_plays_through_tool_actions(self):
        with GenericEnvClient(base_url=self.url, headers=self.headers).sync() as env:
            tools = env.step({"type": "list_tools"}).observation["tools"]
            self.assertEqual([t["name"] for t in tools],
                             ["segment_object_at", "get_properties", "zoom_in", "read_text", "track_object", "answer"])
            for task, steps in self.plays[:20]:
                env.reset(**task)
                for k, (action, want) in enumerate(steps):
                    args = {a: action[a] for a in ("x", "y", "answer") if a in action}
                    r = env.step({"type": "call_tool", "tool_name": action["op"].lower(), "arguments": args})
                    self.assertEqual((r.reward, r.done), (want["reward"], want["done"]))
                    self.assertEqual(r.observation["tool_name"], action["op"].lower())
                    self.same_step("task %d step %d" % (task["index"], k + 1), r.observation["result"]["structuredContent"], want)

    def test_mcp_tool_client_plays_the_expert_with_image_content(self):
        client = MCPToolClient(base_url=self.url, headers=self.headers).sync()
        with client:
            names = [t.name for t in client.list_tools()]
            self.assertEqual(names, ["segment_object_at", "get_properties", "zoom_in", "read_text", "track_object", "answer"])
            schema = {t.name: t.input_schema for t in client.list_tools()}
            self.assertEqual(schema["segment_object_at"]["required"], ["x", "y"])
            for task, steps in self.plays:
                first = client.reset(**task)
                self.assertEqual(first.observation.task["index"], task["index"])
                for k, (action, want) in enumerate(steps):
                    args = {a: action[a] for a in ("x", "y", "answer") if a in action}
                    res = client.call_tool(action["op"].lower(), **args)
                    where = "task %d step %d" % (task["index"], k + 1)
                    self.assertFalse(res["isError"], where)
                    self.same_step(where, res["structuredContent"], want)
                    text, image = res["content"]
                    self.assertEqual(text["type"], "text")
                    self.assertEqual((image["type"], image["mimeType"]), ("image", "image/png"))
                    png = base64.b64decode(image["data"])
                    if k == 0:  # the view the step left, as view.png sends it
                        episode = res["structuredContent"]["episode_id"]
                        self.assertEqual(png, self.client.view_png(episode), where)
                    width, height, _, _ = decode_png(png)
                    self.assertEqual((width, height), (64, 64), where)
                self.assertTrue(res["structuredContent"]["done"])
                self.assertEqual(res["structuredContent"]["finish"], steps[-1][1]["finish"])
                over = client.call_tool("read_text")
                self.assertTrue(over["isError"])

    def test_the_token_is_required(self):
        with self.assertRaises(Exception) as cm:
            with GenericEnvClient(base_url=self.url).sync() as env:
                env.reset()
        self.assertIn("401", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
