"""pixelis serve's tasks as an environment for TRL's GRPOTrainer
(`environment_factory`), played through OpenEnv's own GenericEnvClient on
serve's OpenEnv protocol (`/openenv`, docs/serve.md#openenv).

    from functools import partial
    from pixelis.openenv import PixelisEnv

    trainer = GRPOTrainer(model=..., train_dataset=rows_with_task_index, args=...,
                          environment_factory=partial(PixelisEnv, "http://127.0.0.1:8765", token=token))

TRL makes one instance per rollout and exposes its public methods as the
model's tools: one per operation of pixelis (segment_object_at, get_properties,
zoom_in, read_text, track_object, answer), each stepping the episode and
returning what the operation measured. reset(task_index=i) starts task i of
the split and returns its question; get_reward() is the sum of the rewards
serve's steps gave (w_final·final + penalty + cost, as POST
/v1/episodes/{id}/step gives them), logged by TRL under the class's name.

Needs the openenv package (OpenEnv's client), imported when an instance is made.
"""

from typing import Any, Dict, List, Optional

__all__ = ["PixelisEnv", "close"]


class PixelisEnv:
    """One rollout's environment: an OpenEnv WebSocket session on pixelis serve."""

    def __init__(self, url: str, token: Optional[str] = None, split: str = "train", image_size: Optional[int] = None):
        """url: the server (http://host:port); token: its bearer token;
        split: the split of the tasks reset starts; image_size: the side of
        the view in the observations' image content (default 64)."""
        from openenv.core.generic_client import GenericEnvClient

        headers = {"Authorization": "Bearer " + token} if token else None
        self._env = GenericEnvClient(base_url=url.rstrip("/") + "/openenv", headers=headers).sync()
        self._env.connect()
        self._split = split
        self._image_size = image_size
        self.rewards: List[float] = []
        self.done = False
        self.episode: Optional[str] = None
        self.observation: Dict[str, Any] = {}

    def reset(self, task_index: Optional[int] = None, **_: Any) -> str:
        """Start task task_index of the split (a random training task when
        None); the other columns of the dataset's row are ignored."""
        task: Dict[str, Any] = {}
        if task_index is not None:
            task = {"split": self._split, "index": int(task_index)}
        if self._image_size is not None:
            task["image_size"] = self._image_size
        result = self._env.reset(**task)
        self.rewards, self.done = [], False
        self.observation = result.observation
        self.episode = result.observation["episode_id"]
        return result.observation["task"]["question"]

    def get_reward(self) -> float:
        """The sum of the rewards of the episode's steps."""
        return float(sum(self.rewards))

    def _step(self, action: Dict[str, Any]) -> str:
        if self.done:
            return "the episode is over"
        result = self._env.step(action)
        self.rewards.append(result.reward)
        self.done = result.done
        self.observation = result.observation
        return result.observation["content"][0]["text"]

    def segment_object_at(self, x: int, y: int) -> str:
        """Segment the object at a pixel of the current 64-pixel view.

        Args:
            x: The pixel's column, 0 to 63.
            y: The pixel's row, 0 to 63.

        Returns:
            The segmented object's id, area and box.
        """
        return self._step({"op": "SEGMENT_OBJECT_AT", "x": x, "y": y})

    def get_properties(self) -> str:
        """Measure the last segmented object.

        Returns:
            Its colour, shape, area and centre.
        """
        return self._step({"op": "GET_PROPERTIES"})

    def zoom_in(self) -> str:
        """Zoom the view onto the last segmented object's box.

        Returns:
            The new view's region.
        """
        return self._step({"op": "ZOOM_IN"})

    def read_text(self) -> str:
        """Read the text label in the current view.

        Returns:
            The text read and its confidence.
        """
        return self._step({"op": "READ_TEXT"})

    def track_object(self) -> str:
        """Follow the last segmented object through the frames of a video.

        Returns:
            Its box in every frame.
        """
        return self._step({"op": "TRACK_OBJECT"})

    def answer(self, answer: str) -> str:
        """Answer the question; this ends the episode.

        Args:
            answer: A word of the answer vocabulary (a colour, a shape, a count, a text).

        Returns:
            Whether the answer was right.
        """
        return self._step({"op": "ANSWER", "answer": answer})


def close(environment: PixelisEnv) -> None:
    """Close an environment's session (and its episode). A function, not a
    method: TRL would expose a public method to the model as a tool."""
    environment._env.close()
