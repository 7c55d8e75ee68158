"""A Trainer with transformers' own SIGTERM handler (enable_jit_checkpoint)
and PixelisCallback, on the channel PIXELIS_CHANNEL names: the process a
test sends SIGTERM to. Usage: sigterm_trainer.py OUTPUT_DIR"""

import sys

import tiny
from pixelis.trl import PixelisCallback

trainer = tiny.sft_trainer(sys.argv[1], enable_jit_checkpoint=True)
trainer.add_callback(PixelisCallback(trainer))
trainer.train()
