"""A pixelis checkpoint's policy as a torch.nn.Module, and the base a stage adapter applies to.

    from peft import PeftModel
    from pixelis.torch_policy import adapter_base, load_policy

    policy = load_policy("runs/r/checkpoints/rft_final")        # eval mode
    logits = policy(obs)                                         # obs: [N, obs_dim] float32

    adapter = "runs/r/adapters/rft_adapters_full"
    model = PeftModel.from_pretrained(load_policy(adapter_base(adapter), merge_adapters=False), adapter)

The module is the network of train/policy, computed as pixelis's own forward
pass (train/policy/inference.go) computes it:

    e_c    = ReLU(cell.enc(cell_c))                 for each of the cells
    h      = ReLU(trunk.k(… ReLU(trunk.0([global, mean_c e_c])) …))
    logits = head(h)
    logits[c] += loc.score(ReLU(loc.cell(cell_c) + loc.trunk(h)))   for c < cells

where an observation row is the global block followed by one row of
cell_features floats per cell. Each layer is a torch.nn.Linear named as
pixelis names it (cell.enc, trunk.0, head, loc.cell, loc.trunk, loc.score), so
the target_modules of a stage adapter's adapter_config.json name it as PEFT
expects. policy.safetensors keeps pixelis's [in, out] orientation; the module
holds the transposes (nn.Linear's [out, in]).

A checkpoint's own LoRA adapters are folded into the weights (W + (alpha/r)·A·B,
as pixelis's forward pass does), unless merge_adapters=False: then the module
is the base network alone, which is what a stage adapter was trained on (RFT
trains the adapters with the base frozen, and the export holds the whole
adapter). Sizes come from the tensors and from the architecture record that
pixelis stores in policy.safetensors' metadata (pixelis_policy_config).

Needs torch and safetensors (the package's `torch` extra). Tested at the
versions of the pinned TRL stack (clients/python/locks/trl.txt): the logits of
every checkpoint of a real run, and of PEFT's PeftModel on every stage
adapter, equal pixelis's to 1e-5 on 1,000 observations (docs/checkpoints.md).
"""

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple, Union

import torch
from safetensors import safe_open
from torch import nn

__all__ = ["PolicyConfig", "PixelisPolicy", "load_policy", "adapter_base", "POLICY_FILE"]

POLICY_FILE = "policy.safetensors"
MANIFEST_FILE = "manifest.json"
ADAPTER_CONFIG_FILE = "adapter_config.json"
META_POLICY_CONFIG = "pixelis_policy_config"  # ckpt.MetaPolicyConfig
META_WEIGHT_LAYOUT = "pixelis_weight_layout"  # ckpt.MetaWeightLayout
WEIGHT_LAYOUT_IN_OUT = "in_out"

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class PolicyConfig:
    """The network's architecture: train/policy.Record."""

    global_features: int
    cells: int
    cell_features: int
    actions: int
    cell_embed: int
    loc_hidden: int
    hidden: List[int]
    # layer name -> (rank, alpha) of the layers with an adapter
    lora: Dict[str, Tuple[int, float]] = field(default_factory=dict)

    @property
    def obs_dim(self) -> int:
        return self.global_features + self.cells * self.cell_features

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "PolicyConfig":
        return cls(
            global_features=int(record["global_features"]),
            cells=int(record["cells"]),
            cell_features=int(record["cell_features"]),
            actions=int(record["actions"]),
            cell_embed=int(record["cell_embed"]),
            loc_hidden=int(record["loc_hidden"]),
            hidden=[int(h) for h in record["hidden"]],
            lora={name: (int(v["rank"]), float(v["alpha"])) for name, v in (record.get("lora") or {}).items()},
        )


class _Layers(nn.Module):
    """A container, so that nested names (cell.enc, loc.trunk) are pixelis's layer names."""


class PixelisPolicy(nn.Module):
    """The policy network; forward maps observations [N, obs_dim] to logits [N, actions]."""

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__()
        self.config = config
        self.name_or_path = ""  # the checkpoint it was loaded from (load_policy)
        self.cell = _Layers()
        self.cell.enc = nn.Linear(config.cell_features, config.cell_embed)
        widths = [config.global_features + config.cell_embed] + list(config.hidden)
        self.trunk = nn.ModuleList(nn.Linear(i, o) for i, o in zip(widths[:-1], widths[1:]))
        self.head = nn.Linear(widths[-1], config.actions)
        self.loc = _Layers()
        # The scorer's bias sits on loc.trunk, as in pixelis (the sum is the same).
        self.loc.cell = nn.Linear(config.cell_features, config.loc_hidden, bias=False)
        self.loc.trunk = nn.Linear(widths[-1], config.loc_hidden)
        self.loc.score = nn.Linear(config.loc_hidden, 1, bias=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        c = self.config
        if obs.dim() != 2 or obs.shape[1] != c.obs_dim:
            raise ValueError("observations of shape %s, want [N, %d]" % (tuple(obs.shape), c.obs_dim))
        n = obs.shape[0]
        cells = obs[:, c.global_features : c.obs_dim].reshape(n, c.cells, c.cell_features)
        pooled = torch.relu(self.cell.enc(cells)).mean(dim=1)
        h = torch.cat([obs[:, : c.global_features], pooled], dim=1)
        for layer in self.trunk:
            h = torch.relu(layer(h))
        logits = self.head(h)
        z = torch.relu(self.loc.cell(cells) + self.loc.trunk(h).unsqueeze(1))
        scores = self.loc.score(z).squeeze(-1)
        return torch.cat([logits[:, : c.cells] + scores, logits[:, c.cells :]], dim=1)


def _policy_file(path: PathLike) -> str:
    path = os.fspath(path)
    return os.path.join(path, POLICY_FILE) if os.path.isdir(path) else path


def _read(file: str) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    with safe_open(file, framework="pt") as f:
        meta = f.metadata() or {}
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    for name, t in tensors.items():
        if t.dtype != torch.float32:
            raise ValueError("%s: tensor %s is %s; a policy's weights are float32 (F32)" % (file, name, t.dtype))
    return tensors, meta


def _config(file: str, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, str]) -> PolicyConfig:
    """The record in the metadata, or, for a checkpoint written before pixelis stored it, the
    sizes the shapes give and the observation width of the manifest beside the file."""
    if META_POLICY_CONFIG in meta:
        return PolicyConfig.from_record(json.loads(meta[META_POLICY_CONFIG]))
    manifest = os.path.join(os.path.dirname(file), MANIFEST_FILE)
    try:
        with open(manifest, encoding="utf-8") as f:
            width = int(json.load(f)["observation"]["width"])
    except (OSError, KeyError, TypeError, ValueError) as e:
        raise ValueError("%s has no %s metadata and %s gives no observation width: %s" % (file, META_POLICY_CONFIG, manifest, e))
    cell_features, cell_embed = tensors["cell.enc.weight"].shape
    global_features = tensors["trunk.0.weight"].shape[0] - cell_embed
    hidden: List[int] = []
    while "trunk.%d.weight" % len(hidden) in tensors:
        hidden.append(tensors["trunk.%d.weight" % len(hidden)].shape[1])
    return PolicyConfig(
        global_features=global_features,
        cells=(width - global_features) // cell_features,
        cell_features=cell_features,
        actions=tensors["head.weight"].shape[1],
        cell_embed=cell_embed,
        loc_hidden=tensors["loc.cell.weight"].shape[1],
        hidden=hidden,
    )


def _weight(file: str, tensors: Mapping[str, torch.Tensor], layer: str, config: PolicyConfig, merge: bool) -> torch.Tensor:
    """The layer's [in, out] weight, with its adapter folded in when merge is set."""
    w = tensors[layer + ".weight"]
    a, b = tensors.get(layer + ".lora_A"), tensors.get(layer + ".lora_B")
    if not merge or a is None or b is None or not torch.any(b):
        return w
    if layer not in config.lora:
        raise ValueError("%s: %s has a non-zero adapter but no alpha is recorded for it (%s)" % (file, layer, META_POLICY_CONFIG))
    rank, alpha = config.lora[layer]
    return torch.addmm(w, a, b, alpha=alpha / rank)


def load_policy(path: PathLike, *, merge_adapters: bool = True) -> PixelisPolicy:
    """The policy of a checkpoint directory (or of its policy.safetensors), in eval mode."""
    file = _policy_file(path)
    tensors, meta = _read(file)
    layout = meta.get(META_WEIGHT_LAYOUT, WEIGHT_LAYOUT_IN_OUT)
    if layout != WEIGHT_LAYOUT_IN_OUT:
        raise ValueError("%s: weight layout %r, this module reads %r" % (file, layout, WEIGHT_LAYOUT_IN_OUT))
    config = _config(file, tensors, meta)
    model = PixelisPolicy(config)
    modules = dict(model.named_modules())
    used = set()
    state = {}
    for name, module in modules.items():
        if not isinstance(module, nn.Linear):
            continue
        if name + ".weight" not in tensors:
            raise ValueError("%s: no tensor %s.weight for layer %s" % (file, name, name))
        state[name + ".weight"] = _weight(file, tensors, name, config, merge_adapters).t().contiguous()
        used.update({name + ".weight", name + ".lora_A", name + ".lora_B"})
        if module.bias is not None:
            if name + ".bias" not in tensors:
                raise ValueError("%s: no tensor %s.bias for layer %s" % (file, name, name))
            state[name + ".bias"] = tensors[name + ".bias"]
            used.add(name + ".bias")
    extra = sorted(set(tensors) - used)
    if extra:
        raise ValueError("%s: tensors %s belong to no layer of the network" % (file, ", ".join(extra)))
    model.load_state_dict(state, strict=True)
    # As a transformers model carries it: PEFT records it as base_model_name_or_path when it
    # saves an adapter made on this module with a config of its own (get_peft_model).
    model.name_or_path = os.fspath(path)
    return model.eval()


def adapter_base(adapter_dir: PathLike) -> str:
    """The checkpoint directory a pixelis stage adapter applies to: its base_model_name_or_path,
    which pixelis writes relative to the adapter directory (so a run directory can move)."""
    adapter_dir = os.fspath(adapter_dir)
    with open(os.path.join(adapter_dir, ADAPTER_CONFIG_FILE), encoding="utf-8") as f:
        base = json.load(f).get("base_model_name_or_path")
    if not base:
        raise ValueError("%s: no base_model_name_or_path" % os.path.join(adapter_dir, ADAPTER_CONFIG_FILE))
    return os.path.normpath(os.path.join(adapter_dir, base))
