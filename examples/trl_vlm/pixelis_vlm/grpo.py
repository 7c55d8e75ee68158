"""TRL's GRPOTrainer with the one change multi-turn tool use on a
vision-language model needs at the pinned TRL (1.16).

With an `environment_factory`, GRPOTrainer renders each prompt on its own and
keeps the processor's image fields (pixel_values, image_grid_thw) as Python
lists. Its tool loop then needs them as tensors whenever a round of tool calls
returns no image (SEGMENT_OBJECT_AT, GET_PROPERTIES, … before any ZOOM_IN):
`split_pixel_values_by_grid` calls `.prod` on image_grid_thw and fails with
"'list' object has no attribute 'prod'". A round whose tools returned an image
takes another path (the image processor is run again on the prompts' and the
tools' images), which works as it is: the tool's image reaches the next
generation call's pixel_values there (docs/trl-vlm.md, the probe).

GRPOTrainer here turns those two fields into the tensors the rest of TRL
expects, and changes nothing else: generation, the tool loop and the loss are
TRL's own.
"""

import numpy as np
import torch
import trl

# The image fields a processor returns flattened over images, which TRL's tool
# loop indexes as tensors.
IMAGE_FIELDS = ("pixel_values", "image_grid_thw")


class GRPOTrainer(trl.GRPOTrainer):
    def _tokenize_prompts(self, prompts):
        prompt_ids, images, fields = super()._tokenize_prompts(prompts)
        for k in IMAGE_FIELDS:
            if k in fields and not isinstance(fields[k], torch.Tensor):
                fields[k] = torch.from_numpy(np.asarray(fields[k]))
        return prompt_ids, images, fields
