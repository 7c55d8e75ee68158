"""The five pixel operations as tools of TRL's GRPOTrainer (`environment_factory`).

    client = pixelis.Client(url, token)
    trainer = GRPOTrainer(..., train_dataset=data.tasks(dir),
                          environment_factory=lambda: PixelWorld(client))

GRPOTrainer makes one PixelWorld per rollout and calls `reset(**row)` with the
task's row (its split and index) before generating; every public method is a
tool the model may call, its schema read from the signature and docstring.
A tool steps the rollout's episode of `pixelis serve` and returns what the
operation measured as text (the summary serve answers), and the new view as an
image when the operation moved it (ZOOM_IN) — the same turns `pixelis data gen
--chat` writes for the expert's trajectories. The methods whose names begin
with an underscore are not tools: `_answer` ends the episode with the model's
answer, `_close` closes it, `_served` reads the operations serve recorded;
`calls`, `episode` and `finish` say what happened, for the reward functions
(GRPOTrainer hands them `environments`).
"""

import io

from PIL import Image

from pixelis.client import PixelisError


class PixelWorld:
    """One rollout's episode of pixelis serve, its operations as tools."""

    def __init__(self, client):
        self.client = client
        self.episode = None  # serve's episode id
        self.region = None  # the source region the view shows
        self.calls = []  # (operation, arguments) the model called, in order
        self.finish = None  # serve's finish of the episode once answered or cut off
        self._owned = True  # the world opened the episode, and closes it

    def reset(self, split, index, **row):
        """Start an episode of task (split, index), closing the previous one.
        The prompt already holds the task's question and first view: nothing
        is added to it."""
        self._close()
        self._owned = True
        state = self.client.create_episode(split=split, index=index, observation={"coarse": False})
        self.episode, self.region = state["episode"], state["region"]
        self.calls, self.finish = [], None
        return None

    def _attach(self, episode):
        """Play episode, already started by someone else (`pixelis eval
        --serve` opens its attempts' episodes), and return its first view.
        The world never closes it: its owner reads it back."""
        state = self.client.episode(episode)
        self.episode, self.region = state["episode"], state["region"]
        self.calls, self.finish = [], state.get("finish")
        self._owned = False
        return Image.open(io.BytesIO(self.client.view_png(episode))).convert("RGB")

    def _step(self, op, **args):
        """One operation: its summary, and the view if the operation moved it."""
        self.calls.append((op, args))
        try:
            ans = self.client.step(self.episode, op=op, **args)
        except PixelisError as e:  # the episode ended, or a malformed call: the model reads why
            return "error: %s" % e
        if ans.get("finish") is not None:
            self.finish = ans["finish"]
        content = [{"type": "text", "text": ans["result"]["summary"]}]
        if ans["region"] != self.region:
            self.region = ans["region"]
            view = Image.open(io.BytesIO(self.client.view_png(self.episode))).convert("RGB")
            content.append({"type": "image", "image": view})
        return content

    def SEGMENT_OBJECT_AT(self, x: int, y: int) -> list:
        """Segment the object at a pixel of the view.

        Args:
            x: column of the pixel in the 64×64 view, from 0 at the left
            y: row of the pixel in the 64×64 view, from 0 at the top

        Returns:
            The object's id, area and bounding box.
        """
        return self._step("SEGMENT_OBJECT_AT", x=int(x), y=int(y))

    def GET_PROPERTIES(self) -> list:
        """Measure the last segmented object: its colour, shape, area and centre.

        Returns:
            The object's properties.
        """
        return self._step("GET_PROPERTIES")

    def ZOOM_IN(self) -> list:
        """Zoom the view in on the last segmented object.

        Returns:
            The zoomed region, and the new view as an image.
        """
        return self._step("ZOOM_IN")

    def READ_TEXT(self) -> list:
        """Read the text of the label in the view (zoom in first on a small one).

        Returns:
            The text read and its confidence.
        """
        return self._step("READ_TEXT")

    def TRACK_OBJECT(self) -> list:
        """Track the last segmented object through the video's frames.

        Returns:
            The object's boxes frame by frame.
        """
        return self._step("TRACK_OBJECT")

    def _served(self):
        """The operations serve recorded for the episode, in order (its
        trajectory's steps, the answer left out): the calls that reached it."""
        if self.episode is None:
            return []
        steps = self.client.trajectory(self.episode)["steps"]
        return [s["action"] for s in steps if s["action"] in OPERATIONS]

    def _answer(self, text):
        """End the episode with the model's answer (its last message's text);
        serve's finish says whether it was right. An answer serve refuses (one
        over its length limit) is wrong: the episode ends with an empty
        answer, so that it is scored as the wrong answer it is, and the
        finish says why under "refused"."""
        if self.finish is None:
            try:
                ans = self.client.step(self.episode, op="ANSWER", answer=text.strip())
                self.finish = ans.get("finish")
            except PixelisError as e:
                ans = self.client.step(self.episode, op="ANSWER", answer="")
                self.finish = dict(ans.get("finish") or {}, refused=str(e))
        return self.finish

    def _close(self):
        if self.episode is not None and self._owned:
            try:
                self.client.close_episode(self.episode)
            except PixelisError:  # expired already
                pass
        self.episode = None


# Tokens of a rollout after its prompt, the model's turns and the tools'
# answers together (GRPOConfig's max_completion_length; eval.py's, as in
# training). TRL's tool loop drops a tool's answer that would take a rollout
# past it and ends the rollout there. With the tiny model's tokenizer a call
# and its answer take about 50 tokens (a view ZOOM_IN returns, 6 more: its 4
# image tokens and their markers), and the expert's trajectories of `pixelis data
# gen --config smoke` 96 tokens for two calls, 140 for three, 190 for four and
# 284 for six (189 of 200 conversations fit in 288), so that a rollout has room
# for the calls of its task as the expert makes them. At 128, a text task's
# READ_TEXT answer was dropped.
MAX_COMPLETION_LENGTH = 288

# The tools, in the order GRPOTrainer lists an environment's methods in the
# prompt (inspect.getmembers: by name). A prompt rendered with them in another
# order is another prompt.
OPERATIONS = ("GET_PROPERTIES", "READ_TEXT", "SEGMENT_OBJECT_AT", "TRACK_OBJECT", "ZOOM_IN")


def schemas():
    """The tools' JSON schemas as GRPOTrainer renders them into the prompt
    (transformers' get_json_schema of each method): what an SFT run passes to
    the chat template as `tools`, for the same prompts."""
    from transformers.utils import get_json_schema

    return [get_json_schema(getattr(PixelWorld, op)) for op in OPERATIONS]
