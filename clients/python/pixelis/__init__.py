"""pixelis: its pixel world and reward over HTTP (`pixelis serve`), from Python.

- Client, Episode, Scorer (pixelis.client): every endpoint of the API, over
  one kept-alive connection per thread.
- VectorEnv (pixelis.vector): N episodes with gymnasium's vector API, one
  request per vector step, observations as raw arrays.
- decode_png (pixelis.png): the PNG views, through PIL when installed.

- pixelis.sdk: a trainer's side of the channel to `pixelis launch` (metrics,
  samples, checkpoints; commands and curriculum stages), a no-op outside it.
- pixelis.trl: PixelisCallback, the sdk as a transformers/TRL TrainerCallback.
- pixelis.torch_policy: a checkpoint's policy as a torch.nn.Module (torch and
  safetensors), the base a stage adapter applies to under PEFT.
- pixelis.openenv: PixelisEnv, serve's tasks as an environment for TRL's
  GRPOTrainer (environment_factory), through OpenEnv's GenericEnvClient.
- pixelis.evalplan: the plan `pixelis eval --serve` hands the agent it
  evaluates (the episodes to play), with a client of its server.

The standard library is enough; numpy, when installed, makes observations
numpy arrays decoded without copying.
"""

__version__ = "0.2.0"

from .client import Client, Episode, PixelisError, Scorer
from .png import decode_png
from .vector import VectorEnv

__all__ = ["Client", "Episode", "Scorer", "PixelisError", "VectorEnv", "decode_png", "__version__"]
