#!/usr/bin/env python3
"""The policy's two training steps in PyTorch, for a side-by-side comparison
with pixelis's own (train/sft BenchmarkTrainerStep, train/grpo
BenchmarkUpdateStep; bench/side_by_side.sh alternates the two).

The network is the one of train/policy/doc.go at the shapes of
configs/default.toml: a cell encoder (14 -> 32, ReLU) over the 64 cells,
mean-pooled and concatenated with the 135-float global block (167 -> 256 ->
256, ReLU), a linear action head (100 actions) and a location head whose
scorer is shared across the cells, z_c = ReLU(cell_c.U + h.P + b),
logit_c += z_c.v; LoRA adapters of rank 8 (alpha 16) on every linear layer,
y = x.W + b + (alpha/r).(x.A).B with B = 0 at the start.

  sft   forward + backward + Adam over the base weights, the adapters present
        and frozen (computed as a PyTorch user would write them: unmerged),
        the imitation loss with unlikelihood rows, batch 256, gradient clip 1
  grpo  the adapters only, base frozen: PPO-clip (0.2, 0.28), k3 KL (0.05),
        entropy bonus (0.01), token-mean weights, Adam with gradient clip 1,
        one chunk of the default RFT's size (384 rows)

Single-threaded (torch.set_num_threads(1) and OPENBLAS_NUM_THREADS=1, set
below before torch loads), timed per CPU-second of this process
(time.process_time), so a loaded machine changes the figures little. Prints
one line per step kind: CPU-ms and wall-ms per step (medians of --rounds
rounds of --steps steps) and GFLOP per CPU-second counting the matrix
products as pixelis's Params.StepFLOPs does.

Usage (Debian's PyTorch: `apt-get install python3-torch libopenblas0-pthread`):

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/torch_steps.py

--no-adapters drops the SFT step's frozen adapters, which are zero: the
computation pixelis's SFT step does (its graph leaves frozen zero adapters
out), and the one bench/side_by_side.sh compares by default. The GRPO step
trains the adapters either way.
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GLOBAL, CELLS, CELL_F = 135, 64, 14
CELL_EMBED, HIDDEN, LOC_HIDDEN, ACTIONS = 32, [256, 256], 32, 100
RANK, ALPHA = 8, 16.0


class Linear(torch.nn.Module):
    """y = x.W + b + (alpha/r).(x.A).B, initialised as policy.New does."""

    def __init__(self, n_in, n_out, bias, gain, rank):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_in, n_out) * (gain / n_in) ** 0.5)
        self.bias = torch.nn.Parameter(torch.zeros(n_out)) if bias else None
        self.rank = rank
        if rank:
            self.lora_A = torch.nn.Parameter(torch.randn(n_in, rank) * (1 / n_in) ** 0.5)
            self.lora_B = torch.nn.Parameter(torch.zeros(rank, n_out))
            self.scale = ALPHA / rank

    def forward(self, x):
        y = x @ self.weight
        if self.bias is not None:
            y = y + self.bias
        if self.rank:
            y = y + ((x @ self.lora_A) @ self.lora_B) * self.scale
        return y

    def base(self):
        return [p for p in (self.weight, self.bias) if p is not None]

    def adapters(self):
        return [self.lora_A, self.lora_B] if self.rank else []


class Policy(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.enc = Linear(CELL_F, CELL_EMBED, True, 2, rank)
        ins = [GLOBAL + CELL_EMBED] + HIDDEN[:-1]
        self.trunk = torch.nn.ModuleList(Linear(i, o, True, 2, rank) for i, o in zip(ins, HIDDEN))
        self.head = Linear(HIDDEN[-1], ACTIONS, True, 1, rank)
        self.loc_cell = Linear(CELL_F, LOC_HIDDEN, False, 2, rank)
        self.loc_trunk = Linear(HIDDEN[-1], LOC_HIDDEN, True, 2, rank)
        self.loc_score = Linear(LOC_HIDDEN, 1, False, 1, rank)

    def layers(self):
        return [self.enc, *self.trunk, self.head, self.loc_cell, self.loc_trunk, self.loc_score]

    def forward(self, obs):
        b = obs.shape[0]
        glob = obs[:, :GLOBAL]
        cells = obs[:, GLOBAL:].reshape(b * CELLS, CELL_F)
        enc = F.relu(self.enc(cells)).reshape(b, CELLS, CELL_EMBED).mean(1)
        h = torch.cat([glob, enc], 1)
        for layer in self.trunk:
            h = F.relu(layer(h))
        logits = self.head(h)
        z = self.loc_cell(cells).reshape(b, CELLS, LOC_HIDDEN) + self.loc_trunk(h).unsqueeze(1)
        s = self.loc_score(F.relu(z).reshape(b * CELLS, LOC_HIDDEN)).reshape(b, CELLS)
        return torch.cat([logits[:, :CELLS] + s, logits[:, CELLS:]], 1)


def step_flops(adapters_only, rank=RANK):
    """Params.StepFLOPs: 2 FLOPs per multiply-add of the products forward and backward, per row."""
    total = 0
    shapes = [("cell.enc", CELL_F, CELL_EMBED, CELLS)]
    n_in = GLOBAL + CELL_EMBED
    for i, h in enumerate(HIDDEN):
        shapes.append((f"trunk.{i}", n_in, h, 1))
        n_in = h
    shapes += [("head", n_in, ACTIONS, 1), ("loc.cell", CELL_F, LOC_HIDDEN, CELLS),
               ("loc.trunk", n_in, LOC_HIDDEN, 1), ("loc.score", LOC_HIDDEN, 1, CELLS)]
    for name, i, o, times in shapes:
        r = rank
        m = i * o + r * (i + o)
        need_dx = name not in ("cell.enc", "loc.cell")
        if need_dx:
            m += i * o
        if not adapters_only:
            m += i * o
        if need_dx or adapters_only:
            m += r * o
        if need_dx:
            m += i * r
        if adapters_only:
            m += i * r + r * o
        total += times * m
    return 2 * total


def observations(n, gen):
    # Dense values: every product here is dense, so sparsity does not change PyTorch's cost.
    return torch.randn(n, GLOBAL + CELLS * CELL_F, generator=gen)


def sft_step(batch, adapters, gen):
    net = Policy(RANK if adapters else 0)
    params = [p for layer in net.layers() for p in layer.base()]
    for layer in net.layers():
        for p in layer.adapters():
            p.requires_grad_(False)
    opt = torch.optim.Adam(params, lr=1e-4)
    obs = observations(batch, gen)
    actions = torch.randint(0, ACTIONS, (batch,), generator=gen)
    avoid = torch.rand(batch, generator=gen) < 0.05
    w = torch.where(avoid, torch.tensor(0.5), torch.tensor(1.0))
    w = w / w.sum()
    w_imitate, w_avoid = torch.where(avoid, 0.0, w), torch.where(avoid, w, 0.0)

    def run():
        opt.zero_grad(set_to_none=True)
        logits = net(obs)
        lp = F.log_softmax(logits, 1).gather(1, actions[:, None])[:, 0]
        loss = -((w_imitate * lp).sum() + (w_avoid * torch.log(1 - lp.exp() + 1e-6)).sum())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return (logits.argmax(1) == actions).float().mean().item()

    return run


def grpo_step(batch, gen):
    net = Policy(RANK)
    for p in net.parameters():
        p.requires_grad_(False)
    params = [p for layer in net.layers() for p in layer.adapters()]
    for p in params:
        p.requires_grad_(True)
    with torch.no_grad():  # a policy some updates in: B away from zero
        for layer in net.layers():
            layer.lora_B.normal_(0, 0.01, generator=gen)
    opt = torch.optim.Adam(params, lr=1e-4)
    obs = observations(batch, gen)
    actions = torch.randint(0, ACTIONS, (batch,), generator=gen)
    with torch.no_grad():
        lp0 = F.log_softmax(net(obs), 1).gather(1, actions[:, None])[:, 0]
    shift = torch.randn(batch, generator=gen) * 0.3
    old, ref = lp0 - shift, lp0 - 0.3 * shift + 0.05
    adv = torch.randn(batch, generator=gen)
    w = torch.full((batch,), 1.0 / batch)
    clip_low, clip_high, kl_coef, ent_coef = 0.2, 0.28, 0.05, 0.01

    def run():
        opt.zero_grad(set_to_none=True)
        logp = F.log_softmax(net(obs), 1)
        lp = logp.gather(1, actions[:, None])[:, 0]
        entropy = -(logp.exp() * logp).sum(1)
        ratio = torch.exp(lp - old)
        pg = -torch.min(ratio * adv, ratio.clamp(1 - clip_low, 1 + clip_high) * adv)
        d = ref - lp
        kl = torch.exp(d) - d - 1
        loss = (w * (pg + kl_coef * kl - ent_coef * entropy)).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()

    return run


def measure(run, steps, rounds):
    for _ in range(3):  # warm-up: allocator, first-call dispatch
        run()
    cpu, wall = [], []
    for _ in range(rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(steps):
            run()
        cpu.append((time.process_time() - c0) / steps)
        wall.append((time.perf_counter() - w0) / steps)
    return statistics.median(cpu), statistics.median(wall)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="steps per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sft-batch", type=int, default=256)
    ap.add_argument("--grpo-batch", type=int, default=384, help="rows of one update chunk")
    ap.add_argument("--no-adapters", action="store_true", help="SFT without the frozen adapters")
    ap.add_argument("--only", choices=["sft", "grpo"], help="run one step kind")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    gen = torch.Generator().manual_seed(2)
    try:
        from threadpoolctl import threadpool_info
        blas = [f"{i['internal_api']} {i.get('version')} {i.get('architecture', '')} threads={i['num_threads']}"
                for i in threadpool_info() if i["user_api"] == "blas"]
    except ImportError:
        blas = ["unknown (python3-threadpoolctl not installed)"]
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread(s), BLAS: {'; '.join(blas)}", file=sys.stderr)
    kinds = []
    if args.only in (None, "sft"):
        kinds.append(("sft", args.sft_batch, sft_step(args.sft_batch, not args.no_adapters, gen), False,
                      0 if args.no_adapters else RANK))
    if args.only in (None, "grpo"):
        kinds.append(("grpo", args.grpo_batch, grpo_step(args.grpo_batch, gen), True, RANK))
    for name, batch, run, adapters_only, rank in kinds:
        cpu, wall = measure(run, args.steps, args.rounds)
        flops = step_flops(adapters_only, rank) * batch
        out = {"step": name, "batch": batch, "cpu_ms": cpu * 1e3, "wall_ms": wall * 1e3,
               "mflop": flops / 1e6, "gflop_per_cpu_s": flops / cpu / 1e9}
        if args.json:
            print(json.dumps(out))
        else:
            print(f"torch/{name}\tbatch {batch}\t{out['cpu_ms']:.2f} cpu-ms/step\t{out['wall_ms']:.2f} ms/step\t"
                  f"{out['mflop']:.1f} MFLOP/step\t{out['gflop_per_cpu_s']:.2f} GFLOP/cpu-s")


if __name__ == "__main__":
    main()
