"""The trainer's ranks: torch.distributed when the trainer imported and
initialised it (this package never imports torch), else the launcher's
RANK and WORLD_SIZE."""

from __future__ import annotations

import os
import sys
from typing import Any

def dist() -> Any:
    """torch.distributed when the trainer imported and initialised it, else None."""
    td = sys.modules.get("torch.distributed")
    if td is None:
        return None
    try:
        if td.is_available() and td.is_initialized():
            return td
    except Exception:  # a half-imported torch: no collectives
        return None
    return None


def rank_and_size() -> "tuple[int, int]":
    td = dist()
    if td is not None:
        return td.get_rank(), td.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
