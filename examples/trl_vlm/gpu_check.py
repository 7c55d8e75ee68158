"""The GPU check of docs/trl-vlm.md, run by gpu_check.sh with the interpreter
it installed: chat data from pixelis, a random-weight Qwen2.5-VL of SIZE
(3b: Qwen2.5-VL-3B's sizes, pixelis_vlm.model.QWEN25_VL_3B; tiny), then
grpo_tools.py under `pixelis launch --no-tui` with LoRA rank 16 and its step
figures on; after step CHECKPOINT_AT a checkpoint through the run's
control.sock, once the trainer saved it a stop through the socket after step
STOP_AT; then the figures: median step time, the callback's share, peak GPU
memory, and a check that the checkpoint is a PEFT adapter that loads.

    python gpu_check.py OUT [--size 3b|tiny] [--pixelis PATH]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from pixelis_vlm import data, figures, model, tools  # noqa: E402

CHECKPOINT_AT = 2  # the checkpoint is asked for once this step is logged
STOP_AT = 5        # and the stop once this one is: at least five GRPO steps
MAX_STEPS = 8      # grpo_tools.py's --steps, a bound the stop comes well before
WAIT_S = 3600      # the longest wait for one of the run's states (a 3B's first step loads and compiles)
# Per size: tasks of chat data, rollouts a step, pixels a view (4 image tokens tiny, 64 for the 3B)
# and tokens a rollout (the 3B's views are 16 times longer; the tiny's are short for a CPU test).
RUNS = {"tiny": dict(tasks=24, batch=2, image_pixels=model.IMAGE_PIXELS, completion=64),
        "3b": dict(tasks=64, batch=8, image_pixels=224 * 224, completion=1024)}


def arguments(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size", choices=sorted(RUNS), default="3b")
    ap.add_argument("--pixelis", default="./pixelis", help="the pixelis binary (default %(default)s)")
    return ap.parse_args(argv)


def versions():
    """The libraries the run uses, with CUDA's and the GPU's name."""
    import accelerate, datasets, peft, transformers, trl  # noqa: E401
    cuda = torch.version.cuda if torch.cuda.is_available() else "none (CPU)"
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return [("torch", torch.__version__), ("CUDA", cuda), ("GPU", gpu), ("transformers", transformers.__version__),
            ("trl", trl.__version__), ("peft", peft.__version__), ("datasets", datasets.__version__),
            ("accelerate", accelerate.__version__)]


def wait(what, ready, proc=None):
    """Poll ready() until it is true; fail if proc ends first or WAIT_S passes."""
    deadline = time.monotonic() + WAIT_S
    while not ready():
        if proc is not None and proc.poll() is not None:
            sys.exit("gpu_check: the run ended (exit %d) before %s" % (proc.returncode, what))
        if time.monotonic() > deadline:
            sys.exit("gpu_check: no %s within %d s" % (what, WAIT_S))
        time.sleep(0.5)


def lines(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def last_step(run_dir):
    return max((p["step"] for p in lines(os.path.join(run_dir, "metrics.jsonl"))), default=0)


def checkpoint_saved(run_dir):
    """The path of the first checkpoint the trainer saved, from the run's events, or None."""
    for e in lines(os.path.join(run_dir, "events.jsonl")):
        if e.get("kind") == "checkpoint" and "saved by the trainer" in e.get("message", ""):
            return (e.get("data") or {}).get("path") or e["message"]
    return None


def command(run_dir, kind):
    """One command over the run's control socket, as `pixelis attach` sends it; its answer must be ok."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(os.path.join(run_dir, "control.sock"))
        s.sendall(json.dumps({"kind": kind}).encode() + b"\n")
        reply = json.loads(s.makefile().readline())
    if not reply.get("ok"):
        sys.exit("gpu_check: %s refused: %s" % (kind, reply.get("error")))


def serve(pixelis, out, env):
    """`pixelis serve --config smoke` on a free port; (process, url)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = os.path.join(out, "serve.out")
    with open(log, "w") as f:
        p = subprocess.Popen([pixelis, "serve", "--config", "smoke", "--addr", "127.0.0.1:%d" % port],
                             stdout=f, stderr=subprocess.STDOUT, env=env)
    wait("serve listening", lambda: "listening on" in read(log), p)
    return p, "http://127.0.0.1:%d" % port


def read(path):
    with open(path) as f:
        return f.read()


def build(out, size, gpu):
    """The chat data's random-weight model of size, saved to OUT/base; its parameter count."""
    convs = data.conversations(os.path.join(out, "train"))
    m, _ = model.tiny(convs, tools.schemas(), os.path.join(out, "base"), sizes=model.SIZES[size],
                      dtype=torch.bfloat16 if gpu else None, device="cuda" if gpu else None)
    n = sum(p.numel() for p in m.parameters())
    del m
    if gpu:
        torch.cuda.empty_cache()
    return n


def launch(args, out, url, env):
    """grpo_tools.py under `pixelis launch --no-tui`, checkpointed and stopped through control.sock;
    (exit code, pixelis's output, the checkpoint's path)."""
    run_dir, run = os.path.join(out, "run"), RUNS[args.size]
    cmd = [args.pixelis, "launch", "--run-dir", run_dir, "--no-tui", "--",
           sys.executable, "-u", os.path.join(HERE, "grpo_tools.py"), os.path.join(out, "grpo"),
           "--data", os.path.join(out, "train"), "--serve", url, "--model", os.path.join(out, "base"),
           "--lora-rank", "16", "--steps", str(MAX_STEPS), "--batch", str(run["batch"]), "--generations", "2",
           "--image-pixels", str(run["image_pixels"]), "--max-completion-length", str(run["completion"]),
           "--figures"]
    log = os.path.join(out, "launch.out")
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    try:
        wait("step %d" % CHECKPOINT_AT, lambda: last_step(run_dir) >= CHECKPOINT_AT, p)
        command(run_dir, "checkpoint")
        wait("checkpoint saved by the trainer", lambda: checkpoint_saved(run_dir), p)
        wait("step %d" % STOP_AT, lambda: last_step(run_dir) >= STOP_AT, p)
        command(run_dir, "stop")
        code = p.wait(timeout=WAIT_S)
    finally:
        if p.poll() is None:  # gpu_check failed: pixelis stops its trainer as on any SIGTERM
            p.terminate()
            p.wait()
    return code, read(log), checkpoint_saved(run_dir)


def step_figures(out):
    """(steps, median s/step, callback share, peak GPU GiB) of the steps after the first (its
    warm-up excluded) in the Trainer's log_history."""
    with open(os.path.join(out, "grpo", "trainer_state.json")) as f:
        logs = [e for e in json.load(f)["log_history"] if figures.STEP_S in e and e["step"] > 1]
    if not logs:
        sys.exit("gpu_check: no %s after step 1 in trainer_state.json" % figures.STEP_S)
    step_s = [e[figures.STEP_S] for e in logs]
    share = sum(e[figures.CALLBACK_S] for e in logs) / sum(step_s)
    peak = max((e.get(figures.PEAK_GPU_GIB, 0.0) for e in logs), default=0.0)
    return [e["step"] for e in logs], statistics.median(step_s), share, peak


def adapter_loads(base, ckpt, gpu):
    """The checkpoint is a PEFT adapter that loads onto the base model, every tensor as saved; their count."""
    from peft import PeftModel, get_peft_model_state_dict
    from safetensors.torch import load_file
    from transformers import Qwen2_5_VLForConditionalGeneration

    m = Qwen2_5_VLForConditionalGeneration.from_pretrained(base, dtype=torch.bfloat16 if gpu else torch.float32)
    m = PeftModel.from_pretrained(m, ckpt)
    saved, loaded = load_file(os.path.join(ckpt, "adapter_model.safetensors")), get_peft_model_state_dict(m)
    if not saved or saved.keys() != loaded.keys() or not all(torch.equal(saved[k], loaded[k].cpu()) for k in saved):
        sys.exit("gpu_check: %s does not load as the adapter it saved" % ckpt)
    return len(saved)


def main(argv=None):
    args = arguments(argv)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    gpu = torch.cuda.is_available()
    for name, v in versions():
        print("%-13s %s" % (name, v), flush=True)
    env = dict(os.environ, PIXELIS_SERVE_TOKEN=os.urandom(16).hex(), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", TRL_EXPERIMENTAL_SILENCE="1")
    subprocess.run([args.pixelis, "data", "gen", "--config", "smoke", "--n", str(RUNS[args.size]["tasks"]),
                    "--out", os.path.join(out, "cota.jsonl"), "--chat", os.path.join(out, "train")],
                   check=True, stdout=subprocess.DEVNULL)
    n = build(out, args.size, gpu)
    print("model         Qwen2.5-VL, %s sizes, random weights, %s params, %s" % (
        args.size, format(n, ","), "bfloat16 on CUDA" if gpu else "float32 on CPU"), flush=True)
    server, url = serve(args.pixelis, out, env)
    try:
        code, log, ckpt = launch(args, out, url, env)
    finally:
        server.terminate()
        server.wait()
    closing = [line for line in log.splitlines() if line.startswith("stopped at step")]
    if code != 0 or not closing:
        sys.exit("gpu_check: pixelis launch exit %d, no stop line; its output:\n%s" % (code, log[-4000:]))
    steps, median, share, peak = step_figures(out)
    print("run           %s" % closing[-1])
    print("checkpoint    %s (asked for after step %d through control.sock)" % (ckpt, CHECKPOINT_AT))
    print("steps timed   %s (step 1, the warm-up, left out)" % ", ".join(map(str, steps)))
    print("step time     %.2f s/step (median)" % median)
    print("callback      %.2f %% of the step time inside PixelisCallback's hooks" % (100 * share))
    print("peak GPU mem  %s" % ("%.2f GiB (torch.cuda.max_memory_allocated)" % peak if gpu else "none (CPU)"))
    print("adapter       %s loads as a PEFT adapter, %d tensors" % (
        os.path.basename(ckpt), adapter_loads(os.path.join(out, "base"), ckpt, gpu)))
    with open(os.path.join(out, "figures.json"), "w") as f:
        json.dump(dict(size=args.size, versions=dict(versions()), params=n, steps=steps, median_step_s=median,
                       callback_share=share, peak_gpu_gib=peak if gpu else None, checkpoint=ckpt,
                       closing=closing[-1]), f, indent=1)


if __name__ == "__main__":
    main()
