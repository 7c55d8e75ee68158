"""Observation and action spaces of a VectorEnv.

gymnasium's own spaces when gymnasium imports; otherwise these stand-ins with
the attributes a trainer reads (shape, dtype, n, nvec, spaces) and sample().
"""

import random

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

    def __init__(self, low, high, shape, dtype):
        self.low, self.high, self.shape, self.dtype = low, high, tuple(shape), dtype

    def sample(self):
        if np is not None:
            if self.dtype == "uint8":
                return np.random.randint(0, 256, size=self.shape, dtype=np.uint8)
            return np.random.uniform(self.low, self.high, size=self.shape).astype(self.dtype)
        raise RuntimeError("Box.sample needs numpy")

    def __repr__(self):
        return "Box(%s, %s, %s, %s)" % (self.low, self.high, self.shape, self.dtype)


class Discrete:
    """An integer in [0, n)."""

    def __init__(self, n):
        self.n, self.shape, self.dtype = n, (), "int64"

    def sample(self, mask=None):
        """A uniform draw, among the indices mask allows when given."""
        allowed = [i for i in range(self.n) if mask is None or mask[i]]
        return random.choice(allowed) if allowed else 0

    def __repr__(self):
        return "Discrete(%d)" % self.n


class MultiDiscrete:
    """One integer in [0, nvec[i]) per environment."""

    def __init__(self, nvec):
        self.nvec, self.shape, self.dtype = list(nvec), (len(nvec),), "int64"

    def sample(self, mask=None):
        return [Discrete(n).sample(None if mask is None else mask[i]) for i, n in enumerate(self.nvec)]

    def __repr__(self):
        return "MultiDiscrete(%s)" % self.nvec


class Dict:
    """Named spaces."""

    def __init__(self, spaces):
        self.spaces = dict(spaces)

    def __getitem__(self, k):
        return self.spaces[k]

    def __repr__(self):
        return "Dict(%s)" % self.spaces


def box(low, high, shape, dtype):
    if _gym_spaces is not None:
        return _gym_spaces.Box(low=low, high=high, shape=tuple(shape), dtype=np.dtype(dtype))
    return Box(low, high, shape, dtype)


def discrete(n):
    return _gym_spaces.Discrete(n) if _gym_spaces is not None else Discrete(n)


def multi_discrete(nvec):
    return _gym_spaces.MultiDiscrete(nvec) if _gym_spaces is not None else MultiDiscrete(nvec)


def dict_space(spaces):
    return _gym_spaces.Dict(spaces) if _gym_spaces is not None else Dict(spaces)
