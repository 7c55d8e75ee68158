"""The client of `pixelis serve`: every endpoint of its API (docs/openapi.json).

A Client keeps one HTTP/1.1 connection alive per thread (so it is safe to
share between threads), decodes JSON and npy answers (arrays as numpy arrays
when numpy is installed, else nested lists), and raises PixelisError with
the request field the server named for every 4xx or 5xx answer::

    from pixelis import Client

    c = Client("http://127.0.0.1:8765")             # token=... off loopback
    ep = c.new_episode(split="val", index=1)        # ep.obs: the coarse view
    step = ep.step(op="SEGMENT_OBJECT_AT", x=28, y=20)
    ep.mask                                          # the mask after this step
    ...
    step = ep.step(op="ANSWER", answer="H4")        # step["terminated"], step["reward_terms"]
    reward = c.score([{"episode": ep.id}])["items"][0]["total"]
    ep.close()
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from typing import Any, Iterable, Literal, Mapping, Sequence

from . import _arrays
from .png import decode_png

__all__ = ["Client", "Episode", "Scorer", "PixelisError", "decode_png"]


class PixelisError(Exception):
    """An error answer of the server: HTTP status, the field at fault, the message."""

    def __init__(self, status: int, field: str | None, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message
        self.retry_after = retry_after  # seconds, when the server is full (503)


# The server closes a kept-alive connection idle for 2 minutes; a client
# opens a fresh one after this long, never sending on one about to close.
_REUSE_IDLE_S = 60.0
# Stale-connection errors that mean the request never reached a handler
# when the connection had been idle (the server closed it meanwhile).
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class Client:
    """Talks to one `pixelis serve` at base_url."""

    def __init__(self, base_url: str = "http://127.0.0.1:8765", token: str | None = None, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        u = urllib.parse.urlsplit(self.base_url)
        if u.scheme not in ("http", "https"):
            raise ValueError("base_url %r: want http://host:port" % base_url)
        self._https = u.scheme == "https"
        self._host = u.netloc
        self._prefix = u.path
        self.token = token
        self.timeout = timeout
        self._local = threading.local()
        # Seconds spent decoding answers (JSON and arrays), for benchmarks.
        self.decode_seconds = 0.0

    # -- transport ------------------------------------------------------------

    def _connection(self, fresh=False):
        loc = self._local
        conn = getattr(loc, "conn", None)
        if conn is not None and (fresh or time.monotonic() - loc.used > _REUSE_IDLE_S):
            conn.close()
            conn = None
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = loc.conn = cls(self._host, timeout=self.timeout)
            loc.fresh = True
        return conn

    def close(self, episode_id: str | None = None) -> None:
        """Close this thread's connection (a new one opens when needed); with
        an episode id, close that episode instead (as pixelis_client did)."""
        if episode_id is not None:
            return self.close_episode(episode_id)
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(self, method: str, path: str, body: Any = None, query: Mapping[str, Any] | None = None,
                raw: bool = False) -> Any:
        """One request: body is JSON-encoded; the answer is decoded (a dict,
        arrays included) unless raw, which returns (bytes, headers)."""
        url = self._prefix + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        headers = {"Accept": "application/json, " + _arrays.NPY_CONTENT_TYPE}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (0, 1):
            conn = self._connection(fresh=attempt > 0)
            reused = not self._local.fresh
            try:
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                payload = _read(resp)
            except _STALE:
                self.close()
                # Only a kept-alive connection the server dropped is retried,
                # and a POST only when it cannot have been acted on twice.
                if attempt == 0 and reused and method in ("GET", "DELETE", "HEAD"):
                    continue
                raise
            except Exception:
                self.close()
                raise
            self._local.fresh = False
            self._local.used = time.monotonic()
            if resp.will_close:
                self.close()
            break
        if resp.status >= 400:
            raise _error(resp, payload)
        if raw:
            return bytes(payload), {k.lower(): v for k, v in resp.getheaders()}
        if not payload:
            return None
        t0 = time.perf_counter()
        ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip()
        if ctype == _arrays.NPY_CONTENT_TYPE:
            out = _arrays.decode_frame(payload)
        else:
            out = _arrays.as_arrays(json.loads(bytes(payload)))
        self.decode_seconds += time.perf_counter() - t0
        return out

    _request = request  # the name pixelis_client used

    # -- the world ------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/v1/health")

    def spec(self) -> dict[str, Any]:
        """Families, operations, action space, answer vocabulary, observation, limits, reward."""
        return self.request("GET", "/v1/spec")

    def openapi(self) -> dict[str, Any]:
        return self.request("GET", "/v1/openapi.json")

    @staticmethod
    def _task(split=None, index=None, seed=None, family=None):
        t = {"split": split, "index": index, "seed": seed, "family": family}
        return {k: v for k, v in t.items() if v is not None}

    def create_episode(self, split: str | None = None, index: int | None = None, seed: int | None = None,
                       family: str | None = None, observation: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Start an episode: split and index, or seed, or neither (random, of
        family). observation chooses what its answers carry:
        {"coarse": bool, "pixels": size, "encoding": "json" | "npy"}."""
        body = self._task(split, index, seed, family)
        if observation is not None:
            body["observation"] = observation
        return self.request("POST", "/v1/episodes", body)

    def new_episode(self, **task: Any) -> Episode:
        """create_episode wrapped in an Episode."""
        return Episode(self, self.create_episode(**task))

    def episode(self, episode_id: str) -> dict[str, Any]:
        return self.request("GET", "/v1/episodes/" + episode_id)

    def reset(self, episode_id: str, **task: Any) -> dict[str, Any]:
        """Restart on the same task, or on the task given (split, index, seed, family)."""
        body = self._task(**task) if task else None
        return self.request("POST", "/v1/episodes/%s/reset" % episode_id, body)

    def step(self, episode_id: str, op: str | None = None, x: int | None = None, y: int | None = None,
             answer: str | None = None, index: int | None = None) -> dict[str, Any]:
        """One action: op with its arguments, or index of the discrete action
        space. The answer holds the step, the next observation and mask,
        terminated/truncated and the step's reward terms."""
        a = {"op": op, "x": x, "y": y, "answer": answer, "index": index}
        return self.request("POST", "/v1/episodes/%s/step" % episode_id, {k: v for k, v in a.items() if v is not None})

    def close_episode(self, episode_id: str) -> None:
        self.request("DELETE", "/v1/episodes/" + episode_id)

    def view_png(self, episode_id: str, size: int | None = None, frame: int | None = None) -> bytes:
        """The current view as PNG bytes (view_size pixels unless size is given)."""
        data, _ = self.view_png_with_region(episode_id, size, frame)
        return data

    def view_png_with_region(self, episode_id: str, size: int | None = None,
                             frame: int | None = None) -> tuple[bytes, tuple[int, ...]]:
        """The view PNG and its region (x0, y0, x1, y1) in source pixels."""
        data, headers = self.request("GET", "/v1/episodes/%s/view.png" % episode_id,
                                     query={"size": size, "frame": frame}, raw=True)
        region = tuple(int(v) for v in headers["x-pixelis-region"].split(","))
        return data, region

    def frame_png(self, episode_id: str, k: int = 0, size: int | None = None) -> bytes:
        """Source frame k of the task, whole, as PNG bytes."""
        data, _ = self.request("GET", "/v1/episodes/%s/frames/%d.png" % (episode_id, k), query={"size": size}, raw=True)
        return data

    def results(self, episode_id: str) -> list[Any]:
        """What each operation returned (CoTA result JSON), in step order."""
        return self.request("GET", "/v1/episodes/%s/results" % episode_id)["results"]

    def trajectory(self, episode_id: str, cota: bool = False) -> dict[str, Any]:
        """The steps so far; cota=True gives a finished episode as one CoTA record."""
        return self.request("GET", "/v1/episodes/%s/trajectory" % episode_id,
                            query={"format": "cota" if cota else None})

    def expert(self, split: str | None = None, index: int | None = None, seed: int | None = None,
               family: str | None = None, observation: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The expert's actions and CoTA record for a task; with observation
        also the observation and mask each action was taken on."""
        body = self._task(split, index, seed, family)
        if observation is not None:
            body["observation"] = observation
        return self.request("POST", "/v1/expert", body)

    def experts(self, tasks: Iterable[Mapping[str, Any]], observation: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The expert's demonstrations of many tasks (dicts of split, index,
        seed, family) with the observations along them: "experts" (each with
        "rows" [first, end) of the arrays), "obs", "action_mask", "pixels"."""
        body: dict[str, Any] = {"tasks": list(tasks)}
        if observation is not None:
            body["observation"] = observation
        return self.request("POST", "/v1/experts", body)

    # -- vectors --------------------------------------------------------------

    def create_vector(self, n: int | None = None, tasks: Sequence[Mapping[str, Any]] | None = None, group: int | None = None,
                      split: str | None = None, family: str | None = None, seed: int | None = None,
                      autoreset: str | None = None, observation: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """N episodes stepped together (see VectorEnv for the gymnasium API)."""
        body = {"n": n, "tasks": tasks, "group": group, "split": split, "family": family, "seed": seed,
                "autoreset": autoreset, "observation": observation}
        return self.request("POST", "/v1/vectors", {k: v for k, v in body.items() if v is not None})

    def step_vector(self, vector_id: str, actions: Any) -> dict[str, Any]:
        """Step every slot: actions is one action index per slot."""
        if hasattr(actions, "tolist"):
            actions = actions.tolist()
        return self.request("POST", "/v1/vectors/%s/step" % vector_id, {"actions": actions})

    def reset_vector(self, vector_id: str, tasks: Sequence[Mapping[str, Any]] | None = None, split: str | None = None,
                     family: str | None = None, seed: int | None = None, slots: Iterable[Any] | None = None) -> dict[str, Any]:
        """New episodes in every slot, or in the slots where slots (one bool per slot) is true."""
        if slots is not None:
            slots = [bool(x) for x in slots]
        body = {"tasks": tasks, "split": split, "family": family, "seed": seed, "slots": slots}
        return self.request("POST", "/v1/vectors/%s/reset" % vector_id, {k: v for k, v in body.items() if v is not None})

    def vector(self, vector_id: str) -> dict[str, Any]:
        return self.request("GET", "/v1/vectors/" + vector_id)

    def close_vector(self, vector_id: str) -> None:
        self.request("DELETE", "/v1/vectors/" + vector_id)

    # -- the reward -----------------------------------------------------------

    @staticmethod
    def _score_body(items, stage, weights):
        body = {"items": list(items)}
        if stage is not None:
            body["stage"] = stage
        if weights is not None:
            body["weights"] = weights
        return body

    def score(self, items: Iterable[Mapping[str, Any]], stage: int | str | None = None,
              weights: Mapping[str, float] | None = None) -> dict[str, Any]:
        """Score finished trajectories with a fresh orchestrator.

        items: dicts {"episode": id} or {"task": {...}, "actions": [...]}, with
        an optional "group" (default: one group per distinct task). The items
        of one request are normalised together; a lone item is not (its
        total is the stage-weighted sum of its raw components), and the
        answer's "normalization" says which.
        """
        return self.request("POST", "/v1/score", self._score_body(items, stage, weights))

    def create_scorer(self, stage: int | str | None = None, weights: Mapping[str, float] | None = None) -> Scorer:
        """A reward orchestrator of one's own: normalisation and curiosity carry over."""
        body: dict[str, Any] = {}
        if stage is not None:
            body["stage"] = stage
        if weights is not None:
            body["weights"] = weights
        return Scorer(self, self.request("POST", "/v1/scorers", body))


def _read(resp):
    """The whole body, into a bytearray (arrays decoded from it are writable)."""
    n = resp.getheader("Content-Length")
    if n is None or resp.chunked:
        return bytearray(resp.read())
    buf = bytearray(int(n))
    mv, got = memoryview(buf), 0
    while got < len(buf):
        k = resp.readinto(mv[got:])
        if not k:
            raise http.client.IncompleteRead(bytes(buf[:got]), len(buf) - got)
        got += k
    return buf


def _error(resp, payload):
    field, message = None, bytes(payload).decode("utf-8", "replace")
    try:
        err = json.loads(bytes(payload))["error"]
        field, message = err.get("field"), err.get("message", message)
    except (ValueError, KeyError, TypeError):
        pass
    retry = resp.getheader("Retry-After")
    return PixelisError(resp.status, field, message, int(retry) if retry and retry.isdigit() else None)


class Episode:
    """One live episode; usable as a context manager that closes it.

    state is the server's latest answer about it, kept current after every
    step: steps, done, region, allowed_actions (the mask of the next step),
    finish. obs (and pixels, when the episode asked for them) is the current
    observation; mask the current action mask as booleans."""

    def __init__(self, client: Client, state: dict[str, Any]) -> None:
        self.client = client
        self.id: str = state["episode"]
        self.state = state

    @property
    def task(self) -> dict[str, Any]:
        return self.state["task"]

    @property
    def obs(self) -> Any:
        return self.state.get("obs")

    @property
    def pixels(self) -> Any:
        return self.state.get("pixels")

    @property
    def mask(self) -> list[bool]:
        """The action mask of the next step: a bool per action index."""
        allowed = set(self.state["allowed_actions"])
        n = self.state["observation"]["action_mask"]["shape"][0]
        return [i in allowed for i in range(n)]

    def step(self, **action: Any) -> dict[str, Any]:
        s = self.client.step(self.id, **action)
        st = self.state
        st["steps"], st["done"], st["region"] = s["step"], s["done"], s["region"]
        st["allowed_actions"] = s["allowed_actions"]
        for k in ("obs", "pixels", "finish"):
            if k in s:
                st[k] = s[k]
        return s

    def refresh(self) -> dict[str, Any]:
        self.state = self.client.episode(self.id)
        return self.state

    def reset(self, **task: Any) -> dict[str, Any]:
        self.state = self.client.reset(self.id, **task)
        return self.state

    def view_png(self, size: int | None = None, frame: int | None = None) -> bytes:
        return self.client.view_png(self.id, size, frame)

    def frame_png(self, k: int = 0, size: int | None = None) -> bytes:
        return self.client.frame_png(self.id, k, size)

    def results(self) -> list[Any]:
        return self.client.results(self.id)

    def trajectory(self, cota: bool = False) -> dict[str, Any]:
        return self.client.trajectory(self.id, cota)

    def close(self) -> None:
        self.client.close_episode(self.id)

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        try:
            self.close()
        except PixelisError:
            pass
        return False


class Scorer:
    """A scorer session: one trainer's reward orchestrator on the server."""

    def __init__(self, client: Client, state: dict[str, Any]) -> None:
        self.client = client
        self.id: str = state["scorer"]
        self.state = state

    def score(self, items: Iterable[Mapping[str, Any]], stage: int | str | None = None,
              weights: Mapping[str, float] | None = None) -> dict[str, Any]:
        return self.client.request("POST", "/v1/scorers/%s/score" % self.id,
                                   Client._score_body(items, stage, weights))

    def info(self) -> dict[str, Any]:
        return self.client.request("GET", "/v1/scorers/" + self.id)

    def close(self) -> None:
        self.client.request("DELETE", "/v1/scorers/" + self.id)
