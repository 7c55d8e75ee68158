"""Observation and action spaces of a VectorEnv.

gymnasium's own spaces when gymnasium imports; otherwise these stand-ins with
the attributes a trainer reads (shape, dtype, n, nvec, spaces) and sample().
"""

from __future__ import annotations

import random
from typing import Any, Iterable, Mapping, Sequence

try:
    import numpy as np
except ImportError:
    np = None

try:
    import gymnasium
    from gymnasium import spaces as _gym_spaces
except ImportError:  # gymnasium is optional: nothing below needs it
    gymnasium = None
    _gym_spaces = None


class Box:
    """Values in [low, high] of a shape and dtype."""

    def __init__(self, low: float, high: float, shape: Iterable[int], dtype: str) -> None:
        self.low, self.high, self.shape, self.dtype = low, high, tuple(shape), dtype

    def sample(self) -> Any:
        if np is not None:
            if self.dtype == "uint8":
                return np.random.randint(0, 256, size=self.shape, dtype=np.uint8)
            return np.random.uniform(self.low, self.high, size=self.shape).astype(self.dtype)
        raise RuntimeError("Box.sample needs numpy")

    def __repr__(self) -> str:
        return "Box(%s, %s, %s, %s)" % (self.low, self.high, self.shape, self.dtype)


class Discrete:
    """An integer in [0, n)."""

    def __init__(self, n: int) -> None:
        self.n, self.shape, self.dtype = n, (), "int64"

    def sample(self, mask: Sequence[Any] | None = None) -> int:
        """A uniform draw, among the indices mask allows when given."""
        allowed = [i for i in range(self.n) if mask is None or mask[i]]
        return random.choice(allowed) if allowed else 0

    def __repr__(self) -> str:
        return "Discrete(%d)" % self.n


class MultiDiscrete:
    """One integer in [0, nvec[i]) per environment."""

    def __init__(self, nvec: Sequence[int]) -> None:
        self.nvec, self.shape, self.dtype = list(nvec), (len(nvec),), "int64"

    def sample(self, mask: Sequence[Sequence[Any]] | None = None) -> list[int]:
        return [Discrete(n).sample(None if mask is None else mask[i]) for i, n in enumerate(self.nvec)]

    def __repr__(self) -> str:
        return "MultiDiscrete(%s)" % self.nvec


class Dict:
    """Named spaces."""

    def __init__(self, spaces: Mapping[str, Any]) -> None:
        self.spaces = dict(spaces)

    def __getitem__(self, k: str) -> Any:
        return self.spaces[k]

    def __repr__(self) -> str:
        return "Dict(%s)" % self.spaces


def box(low: float, high: float, shape: Sequence[int], dtype: str) -> Any:
    """A Box space: gymnasium's when it imports, else the stand-in."""
    if _gym_spaces is not None:
        return _gym_spaces.Box(low=low, high=high, shape=tuple(shape), dtype=np.dtype(dtype))
    return Box(low, high, shape, dtype)


def discrete(n: int) -> Any:
    """A Discrete space: gymnasium's when it imports, else the stand-in."""
    return _gym_spaces.Discrete(n) if _gym_spaces is not None else Discrete(n)


def multi_discrete(nvec: Sequence[int]) -> Any:
    """A MultiDiscrete space: gymnasium's when it imports, else the stand-in."""
    return _gym_spaces.MultiDiscrete(nvec) if _gym_spaces is not None else MultiDiscrete(nvec)


def dict_space(spaces: Mapping[str, Any]) -> Any:
    """A Dict space: gymnasium's when it imports, else the stand-in."""
    return _gym_spaces.Dict(spaces) if _gym_spaces is not None else Dict(spaces)
