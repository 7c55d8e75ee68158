"""The launch protocol's words, shared by the SDK's modules: its version,
the environment `pixelis launch` sets, its limits, the command kinds, and one
line's encoding (docs/launch-protocol.md). Standard library only."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

PROTOCOL_VERSION = 2
CHANNEL_ENV = "PIXELIS_CHANNEL"
RUN_DIR_ENV = "PIXELIS_RUN_DIR"
OWNER_ENV = "PIXELIS_OWNER_PID"        # pixelis's pid: the run's owner (under torchrun not this process's parent)
STOP_GRACE_ENV = "PIXELIS_STOP_GRACE_S"  # pixelis's --grace, in seconds
UNREPORTED_FILE = "unreported_checkpoints.jsonl"  # in the run directory: checkpoints saved with no pixelis to report them to
LOG_KEYS_HF = "hf_trainer"  # hello's log_keys: metrics named as a Hugging Face Trainer's on_log has them
MAX_LINE = 1 << 20          # the protocol's longest line, bytes (without its newline)
HEARTBEAT_EVERY_S = 5.0     # the protocol's longest time between heartbeats
FLUSH_TIMEOUT_S = 5.0       # close() waits this long for queued messages to be written

KINDS = ("checkpoint", "pause", "resume", "evaluate", "stop", "stage", "edit")

# One logger for the whole SDK, named as it always was: a trainer configures "pixelis.sdk".
log = logging.getLogger("pixelis.sdk")


class Refused(RuntimeError):
    """pixelis refused the handshake (its `refused` line's reason)."""


def number(name: str, v: Any) -> "int | float | None":
    """A metric's value on the wire: a finite number, or None (missing) for
    None, NaN and infinities."""
    t = type(v)
    if t is float:
        return v if math.isfinite(v) else None
    if t is int or v is None:
        return v
    if t is bool:
        return int(v)
    try:
        f = float(v)  # numpy and torch scalars
    except (TypeError, ValueError):
        raise TypeError("metric %r: %r is not a number (nor None)" % (name, v)) from None
    return f if math.isfinite(f) else None


def encode(msg: Any) -> bytes:
    """One line of the channel: compact JSON and a newline (no NaN: not JSON)."""
    return json.dumps(msg, separators=(",", ":"), allow_nan=False, default=str).encode("utf-8") + b"\n"
