"""A client of `pixelis serve`, using only the Python standard library.

`pixelis serve` exposes pixelis's pixel world (generated images, real visual
operations, question tasks) and its reward over HTTP with JSON and PNG. This
module wraps every endpoint of the API (docs/openapi.json) and decodes the
PNGs it sends, so that a trainer - a verl agent loop, a TRL environment, a
script collecting SFT data - can drive episodes and score them without any
dependency::

    from pixelis_client import Client

    c = Client("http://127.0.0.1:8765")            # token=... off loopback
    ep = c.new_episode(split="train", family="text_extraction")
    png = ep.view_png(size=256)                     # what the agent looks at
    step = ep.step(op="SEGMENT_OBJECT_AT", x=28, y=20)
    step = ep.step(op="ZOOM_IN")
    ...
    step = ep.step(op="ANSWER", answer="H4")        # step["finish"] once done
    reward = c.score([{"episode": ep.id}])          # raw, norm, total, per step
    ep.close()

A Client is safe to share between threads: each request opens its own
connection (urllib). Every 4xx or 5xx answer raises PixelisError with the
request field the server named.
"""

import json
import struct
import urllib.error
import urllib.parse
import urllib.request
import zlib

__all__ = ["Client", "Episode", "Scorer", "PixelisError", "decode_png"]


class PixelisError(Exception):
    """An error answer of the server: HTTP status, the field at fault, the message."""

    def __init__(self, status, field, message, retry_after=None):
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message
        self.retry_after = retry_after  # seconds, when the server is full (503)


class Client:
    """Talks to one `pixelis serve` at base_url."""

    def __init__(self, base_url="http://127.0.0.1:8765", token=None, timeout=60.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # -- transport ------------------------------------------------------------

    def _request(self, method, path, body=None, query=None, raw=False):
        url = self.base_url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
                if raw:
                    return payload, dict(resp.headers.items())
                if not payload:
                    return None
                return json.loads(payload)
        except urllib.error.HTTPError as e:
            payload = e.read()
            field, message = None, payload.decode("utf-8", "replace")
            try:
                err = json.loads(payload)["error"]
                field, message = err.get("field"), err.get("message", message)
            except (ValueError, KeyError, TypeError):
                pass
            retry = e.headers.get("Retry-After")
            raise PixelisError(e.code, field, message, int(retry) if retry and retry.isdigit() else None) from None

    # -- the world ------------------------------------------------------------

    def health(self):
        return self._request("GET", "/v1/health")

    def spec(self):
        """Families, operations, action space, answer vocabulary, limits, reward."""
        return self._request("GET", "/v1/spec")

    def openapi(self):
        return self._request("GET", "/v1/openapi.json")

    @staticmethod
    def _task(split=None, index=None, seed=None, family=None):
        t = {"split": split, "index": index, "seed": seed, "family": family}
        return {k: v for k, v in t.items() if v is not None}

    def create_episode(self, split=None, index=None, seed=None, family=None):
        """Start an episode: split and index, or seed, or neither (random, of family)."""
        return self._request("POST", "/v1/episodes", self._task(split, index, seed, family))

    def new_episode(self, **task):
        """create_episode wrapped in an Episode."""
        return Episode(self, self.create_episode(**task))

    def episode(self, episode_id):
        return self._request("GET", "/v1/episodes/" + episode_id)

    def reset(self, episode_id, **task):
        """Restart on the same task, or on the task given (split, index, seed, family)."""
        body = self._task(**task) if task else None
        return self._request("POST", "/v1/episodes/%s/reset" % episode_id, body)

    def step(self, episode_id, op=None, x=None, y=None, answer=None, index=None):
        """One action: op with its arguments, or index of the discrete action space."""
        a = {"op": op, "x": x, "y": y, "answer": answer, "index": index}
        return self._request("POST", "/v1/episodes/%s/step" % episode_id, {k: v for k, v in a.items() if v is not None})

    def close(self, episode_id):
        self._request("DELETE", "/v1/episodes/" + episode_id)

    def view_png(self, episode_id, size=None, frame=None):
        """The current view as PNG bytes (view_size pixels unless size is given)."""
        data, _ = self.view_png_with_region(episode_id, size, frame)
        return data

    def view_png_with_region(self, episode_id, size=None, frame=None):
        """The view PNG and its region (x0, y0, x1, y1) in source pixels."""
        data, headers = self._request("GET", "/v1/episodes/%s/view.png" % episode_id,
                                      query={"size": size, "frame": frame}, raw=True)
        region = tuple(int(v) for v in _header(headers, "X-Pixelis-Region").split(","))
        return data, region

    def frame_png(self, episode_id, k=0, size=None):
        """Source frame k of the task, whole, as PNG bytes."""
        data, _ = self._request("GET", "/v1/episodes/%s/frames/%d.png" % (episode_id, k), query={"size": size}, raw=True)
        return data

    def results(self, episode_id):
        """What each operation returned (CoTA result JSON), in step order."""
        return self._request("GET", "/v1/episodes/%s/results" % episode_id)["results"]

    def trajectory(self, episode_id, cota=False):
        """The steps so far; cota=True gives a finished episode as one CoTA record."""
        return self._request("GET", "/v1/episodes/%s/trajectory" % episode_id,
                             query={"format": "cota" if cota else None})

    def expert(self, split=None, index=None, seed=None, family=None):
        """The expert's actions and CoTA record for a task (SFT data, tests)."""
        return self._request("POST", "/v1/expert", self._task(split, index, seed, family))

    # -- the reward -----------------------------------------------------------

    @staticmethod
    def _score_body(items, stage, weights):
        body = {"items": list(items)}
        if stage is not None:
            body["stage"] = stage
        if weights is not None:
            body["weights"] = weights
        return body

    def score(self, items, stage=None, weights=None):
        """Score finished trajectories with a fresh orchestrator.

        items: dicts {"episode": id} or {"task": {...}, "actions": [...]}, with
        an optional "group" (default: one group per distinct task).
        """
        return self._request("POST", "/v1/score", self._score_body(items, stage, weights))

    def create_scorer(self, stage=None, weights=None):
        """A reward orchestrator of one's own: normalisation and curiosity carry over."""
        body = {}
        if stage is not None:
            body["stage"] = stage
        if weights is not None:
            body["weights"] = weights
        return Scorer(self, self._request("POST", "/v1/scorers", body))


class Episode:
    """One live episode; usable as a context manager that closes it."""

    def __init__(self, client, state):
        self.client = client
        self.id = state["episode"]
        self.state = state

    @property
    def task(self):
        return self.state["task"]

    def step(self, **action):
        s = self.client.step(self.id, **action)
        self.state["steps"] = s["step"]
        self.state["done"] = s["done"]
        self.state["region"] = s["region"]
        if "finish" in s:
            self.state["finish"] = s["finish"]
        return s

    def refresh(self):
        self.state = self.client.episode(self.id)
        return self.state

    def reset(self, **task):
        self.state = self.client.reset(self.id, **task)
        return self.state

    def view_png(self, size=None, frame=None):
        return self.client.view_png(self.id, size, frame)

    def frame_png(self, k=0, size=None):
        return self.client.frame_png(self.id, k, size)

    def results(self):
        return self.client.results(self.id)

    def trajectory(self, cota=False):
        return self.client.trajectory(self.id, cota)

    def close(self):
        self.client.close(self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.close()
        except PixelisError:
            pass
        return False


class Scorer:
    """A scorer session: one trainer's reward orchestrator on the server."""

    def __init__(self, client, state):
        self.client = client
        self.id = state["scorer"]
        self.state = state

    def score(self, items, stage=None, weights=None):
        return self.client._request("POST", "/v1/scorers/%s/score" % self.id,
                                    Client._score_body(items, stage, weights))

    def info(self):
        return self.client._request("GET", "/v1/scorers/" + self.id)

    def close(self):
        self.client._request("DELETE", "/v1/scorers/" + self.id)


def _header(headers, name):
    for k, v in headers.items():
        if k.lower() == name.lower():
            return v
    raise KeyError(name)


def decode_png(data):
    """Decode an 8-bit, non-interlaced greyscale, RGB or RGBA PNG.

    Returns (width, height, channels, pixels): pixels is bytes, row-major,
    channels bytes per pixel. Enough for what `pixelis serve` sends; use a
    real image library for anything else.
    """
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    channels = {0: 1, 2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, colour, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
            elif f != 0:
                raise ValueError("bad PNG filter %d" % f)
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return width, height, channels, bytes(out)
