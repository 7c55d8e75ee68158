"""A real pixelis run's files under the real safetensors, torch and PEFT, and theirs back.

    check_checkpoints.py RUN_DIR LOGITS OUT DOC

Run by TestCheckpointsUnderTorchAndPEFT (clients/python/checkpoint_test.go)
with the TRL stack's interpreter. LOGITS holds the observations ("obs"),
pixelis's logits of each checkpoint ("logits/<checkpoint>") and, in its
metadata, the checkpoint saved with each stage adapter. It checks every
.safetensors file of the run under safe_open, load_file and a memory map, the
torch module and PEFT against pixelis's logits, runs DOC's Python snippet in a
directory where runs/demo is the run, and writes into OUT the files the Go test
reads back: the library's own files, a checkpoint re-saved by torch and an
adapter re-saved by PEFT. It prints what it measured as one JSON line.
"""

import glob
import hashlib
import json
import mmap
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import safetensors.numpy
import safetensors.torch
import torch
from peft import LoraConfig, PeftConfig, PeftModel, get_peft_model
from safetensors import safe_open

from pixelis.torch_policy import adapter_base, load_policy

TOLERANCE = 1e-5
NUMPY_DTYPES = {"F32": np.float32, "I64": np.int64, "U8": np.uint8}
TORCH_DTYPES = {"F32": torch.float32, "I64": torch.int64, "U8": torch.uint8}


def header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return n, json.loads(f.read(n))


def check_file(path):
    """Every way the library offers to read a file gives the same tensors; a memory map casts
    each tensor in place at an offset that is a multiple of its element size."""
    n, head = header(path)
    assert n % 8 == 0, "%s: header length %d is not a multiple of 8" % (path, n)
    with safe_open(path, framework="pt") as f:
        pt = {k: f.get_tensor(k) for k in f.keys()}
    with safe_open(path, framework="np") as f:
        npy = {k: f.get_tensor(k) for k in f.keys()}
    loaded_pt, loaded_np = safetensors.torch.load_file(path), safetensors.numpy.load_file(path)
    names = sorted(k for k in head if k != "__metadata__")
    assert sorted(pt) == sorted(npy) == sorted(loaded_pt) == sorted(loaded_np) == names, path
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for name in names:
            e = head[name]
            begin, end = e["data_offsets"]
            offset = 8 + n + begin
            size = np.dtype(NUMPY_DTYPES[e["dtype"]]).itemsize
            assert offset % size == 0, "%s: %s (%s) at file offset %d, not a multiple of %d" % (path, name, e["dtype"], offset, size)
            count = (end - begin) // size
            mapped = np.memmap(path, dtype=NUMPY_DTYPES[e["dtype"]], mode="r", offset=offset, shape=(count,))
            assert mapped.flags.aligned, "%s: %s maps unaligned" % (path, name)
            flat = npy[name].reshape(-1)
            assert np.array_equal(mapped, flat), "%s: %s differs when mapped" % (path, name)
            if count:  # torch.frombuffer refuses a count of 0; an empty tensor has nothing to cast
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # torch warns that a read-only buffer is not writable
                    cast = torch.frombuffer(mm, dtype=TORCH_DTYPES[e["dtype"]], count=count, offset=offset)
                assert np.array_equal(cast.numpy(), flat), "%s: %s differs when cast in place" % (path, name)
                del cast
            assert torch.equal(pt[name], loaded_pt[name]) and np.array_equal(npy[name], loaded_np[name]), path
            assert np.array_equal(pt[name].numpy(), npy[name]), path
            del mapped
    return len(names)


def max_delta(model, obs, want):
    with torch.no_grad():
        got = model(obs)
    return float((got - want).abs().max())


def check_policies(run, logits):
    obs = logits["obs"]
    worst = 0.0
    for key in sorted(k for k in logits if k.startswith("logits/")):
        name = key[len("logits/"):]
        model = load_policy(os.path.join(run, "checkpoints", name))
        assert not model.training, "%s: module is in training mode" % name
        d = max_delta(model, obs, logits[key])
        assert d <= TOLERANCE, "%s: torch logits differ from pixelis's by %g" % (name, d)
        worst = max(worst, d)
    return worst


def check_without_record(run, logits):
    """A checkpoint written before policy.safetensors carried pixelis_policy_config: the sizes
    from the shapes and the manifest's observation width give the same network."""
    with tempfile.TemporaryDirectory() as tmp:
        dst = os.path.join(tmp, "sft_final")
        shutil.copytree(os.path.join(run, "checkpoints", "sft_final"), dst)
        policy = os.path.join(dst, "policy.safetensors")
        with safe_open(policy, framework="pt") as f:
            meta = {k: v for k, v in f.metadata().items() if k != "pixelis_policy_config"}
        safetensors.torch.save_file(safetensors.torch.load_file(policy), policy, metadata=meta)
        d = max_delta(load_policy(dst), logits["obs"], logits["logits/sft_final"])
    assert d <= TOLERANCE, "sft_final without its record: logits differ by %g" % d
    return d


def check_adapters(run, logits, pairs):
    """Each stage adapter under PEFT, with no warning and no edit, gives the logits of the
    checkpoint saved with it; returns the worst difference and the full stage's PeftModel."""
    obs = logits["obs"]
    worst, changed, models = 0.0, 0.0, {}
    for adapter, checkpoint in sorted(pairs.items()):
        path = os.path.join(run, "adapters", adapter)
        config = PeftConfig.from_pretrained(path)
        assert config.peft_type == "LORA", config.peft_type
        base = adapter_base(path)
        assert os.path.realpath(base) == os.path.realpath(os.path.join(run, "checkpoints", "sft_final")), base
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = PeftModel.from_pretrained(load_policy(base, merge_adapters=False), path)
        assert not caught, "%s: PEFT warned: %s" % (adapter, [str(w.message) for w in caught])
        assert not model.training, adapter
        targeted = set(model.base_model.targeted_module_names)
        assert targeted == set(config.target_modules), "%s: PEFT adapted %s, target_modules %s" % (adapter, targeted, config.target_modules)
        d = max_delta(model, obs, logits["logits/" + checkpoint])
        assert d <= TOLERANCE, "%s: PEFT's logits differ from pixelis's (%s) by %g" % (adapter, checkpoint, d)
        changed = max(changed, max_delta(load_policy(base), obs, logits["logits/" + checkpoint]))
        worst = max(worst, d)
        models[adapter] = model
    # Otherwise the comparison could not tell an adapter applied from one ignored.
    assert changed > 100 * TOLERANCE, "the adapters change the base's logits by at most %g" % changed
    return worst, models


def write_fresh_adapter(run, logits, out):
    """An adapter made in PEFT with a config of its own, in the forms LoraConfig allows beyond
    pixelis's (target_modules a regular expression, pattern keys), saved into the run's
    adapters/ with its logits, for pixelis to load and compare."""
    torch.manual_seed(7)
    base = load_policy(os.path.abspath(os.path.join(run, "checkpoints", "sft_final")), merge_adapters=False)
    config = LoraConfig(target_modules=r"(trunk\.\d+|head|loc\.score)", r=2, lora_alpha=5,
                        rank_pattern={"head": 3}, alpha_pattern={r"loc\..*": 7}, init_lora_weights=False)
    model = get_peft_model(base, config).eval()
    with torch.no_grad():
        got = model(logits["obs"])
    model.save_pretrained(os.path.join(run, "adapters", "peft_made"))
    safetensors.torch.save_file({"logits": got.contiguous()}, os.path.join(out, "peft_made_logits.safetensors"))


def write_library_files(out):
    tensors = {
        "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 2,
        "i64": torch.tensor([1, -2, 2**63 - 1], dtype=torch.int64),
        "u8": torch.tensor([1, 2, 3, 4, 5], dtype=torch.uint8),
        "scalar": torch.tensor(7.5, dtype=torch.float32),
    }
    meta = {"written_by": "safetensors"}
    safetensors.torch.save_file(tensors, os.path.join(out, "torch.safetensors"), metadata=meta)
    safetensors.numpy.save_file({k: v.numpy() for k, v in tensors.items()}, os.path.join(out, "numpy.safetensors"), metadata=meta)
    for name, dtype in {"F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64, "I32": torch.int32, "BOOL": torch.bool}.items():
        safetensors.torch.save_file({"x": torch.ones(3, dtype=dtype), "y": torch.ones(2)}, os.path.join(out, "dtype_%s.safetensors" % name))


def resave_checkpoint(run, out, name, dtype):
    """rft_final with policy.safetensors written by safetensors.torch.save_file in dtype, its
    metadata kept, and the manifest's size and sha256 of that file updated."""
    dst = os.path.join(out, name)
    shutil.copytree(os.path.join(run, "checkpoints", "rft_final"), dst)
    policy = os.path.join(dst, "policy.safetensors")
    with safe_open(policy, framework="pt") as f:
        meta = f.metadata()
    tensors = {k: v.to(dtype) for k, v in safetensors.torch.load_file(policy).items()}
    safetensors.torch.save_file(tensors, policy, metadata=meta)
    manifest = os.path.join(dst, "manifest.json")
    with open(manifest, encoding="utf-8") as f:
        m = json.load(f)
    with open(policy, "rb") as f:
        data = f.read()
    for entry in m["files"]:
        if entry["name"] == "policy.safetensors":
            entry["size"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    with open(manifest, "w", encoding="utf-8") as f:
        json.dump(m, f, indent=2)


def run_doc_snippet(run, doc):
    with open(doc, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "%s has no ```python block" % doc
    with tempfile.TemporaryDirectory() as cwd:
        os.makedirs(os.path.join(cwd, "runs"))
        os.symlink(os.path.abspath(run), os.path.join(cwd, "runs", "demo"))
        for block in blocks:
            done = subprocess.run([sys.executable, "-c", block], cwd=cwd, capture_output=True, text=True)
            assert done.returncode == 0, "%s snippet failed:\n%s\n%s" % (doc, block, done.stderr)
    return len(blocks)


def main():
    run, logits_path, out, doc = sys.argv[1:5]
    torch.set_num_threads(1)
    files = sorted(glob.glob(os.path.join(run, "**", "*.safetensors"), recursive=True))
    files += sorted(glob.glob(os.path.join(os.path.dirname(logits_path), "*.safetensors")))  # the logits, the edge cases
    kinds = {os.path.basename(p) for p in files}
    for want in ("policy", "optimizer", "replay", "curiosity", "critic", "memory", "ema"):
        assert want + ".safetensors" in kinds, "the run wrote no %s.safetensors to check (files: %s)" % (want, sorted(kinds))
    tensors = sum(check_file(p) for p in files)
    logits = safetensors.torch.load_file(logits_path)
    with safe_open(logits_path, framework="pt") as f:
        pairs = json.loads(f.metadata()["adapters"])
    policy_delta = max(check_policies(run, logits), check_without_record(run, logits))
    peft_delta, models = check_adapters(run, logits, pairs)
    models["rft_adapters_full"].save_pretrained(os.path.join(out, "peft"))
    write_fresh_adapter(run, logits, out)
    write_library_files(out)
    resave_checkpoint(run, out, "checkpoint", torch.float32)
    resave_checkpoint(run, out, "checkpoint_f16", torch.float16)
    snippets = run_doc_snippet(run, doc)
    print(json.dumps({
        "files": len(files), "tensors": tensors, "observations": int(logits["obs"].shape[0]),
        "checkpoints": sum(k.startswith("logits/") for k in logits), "adapters": len(pairs),
        "max_abs_delta_torch": policy_delta, "max_abs_delta_peft": peft_delta, "doc_snippets": snippets,
        "versions": {"torch": torch.__version__, "safetensors": safetensors.__version__, "peft": __import__("peft").__version__,
                     "numpy": np.__version__},
    }))


if __name__ == "__main__":
    main()
