"""The client of `pixelis serve` under its first name: `import pixelis_client`
keeps working; new code imports pixelis (Client, VectorEnv, ...)."""

from pixelis.client import Client, Episode, PixelisError, Scorer  # noqa: F401
from pixelis.png import decode_png  # noqa: F401

__all__ = ["Client", "Episode", "Scorer", "PixelisError", "decode_png"]
