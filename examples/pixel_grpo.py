#!/usr/bin/python3
"""pixel_grpo.py — a single-file GRPO trainer in PyTorch for pixelis's pixel world.

It trains through `pixelis serve` (its vector endpoints, the `pixelis` Python package) on the
coarse view serve sends as numbers: SFT on the expert's demonstrations (POST /v1/experts), then GRPO
whose reward weights follow the curriculum stage pixelis pushes under `pixelis launch`
(`pixelis.sdk`; standalone, `--weights`). The held-out test split is evaluated before and after GRPO
(greedy and pass@1, paired task by task). Docs, commands and measured figures: docs/example.md.

    pixelis serve &                                   # http://127.0.0.1:8765
    .venv/bin/python examples/pixel_grpo.py --serve http://127.0.0.1:8765   # the venv of docs/example.md
    .venv/bin/python -m torch.distributed.run --nproc-per-node 2 examples/pixel_grpo.py --serve …   # DDP over gloo
    pixelis launch --resume-args '--resume {checkpoint}' -- .venv/bin/python examples/pixel_grpo.py …

Every run-wide step (SFT steps 1..S, GRPO steps S+1..S+G) ends at `run.step_boundary(step)`, where the
console's commands arrive (checkpoint, evaluate, stop, stage; pause blocks inside it). A checkpoint holds
the weights, the optimiser, every random generator of every rank and the step, so `--resume PATH`
continues exactly where the run was: rewards are scored by the stateless POST /v1/score (raw
components, weighted here), so no state lives on the server. A stage pixelis decides on step N's
metrics takes effect at step N+1 (the SDK waits at each boundary for pixelis to have taken the step),
and each GRPO step's metrics carry the weights its rewards were computed with.
"""

import argparse
import copy
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from pixelis import Client, VectorEnv, sdk

COMPONENTS = ["final", "coherence", "curiosity", "penalty", "cost"]
WEIGHTED = ["final", "coherence", "curiosity"]  # the curriculum weights these; penalty and cost are added as they are
CHECKPOINT_FORMAT = 1
# The settings pixelis may change while the run trains (the console's x, `pixelis edit`), by their
# flag's name, with the range each takes. An edit sets args.<name> at the boundary before the step it
# applies from; a checkpoint keeps args, so a resume goes on with the edited values.
EDITABLE = {"sft_lr": (0.0, 1.0), "grpo_lr": (0.0, 1.0), "kl_coef": (0.0, 10.0), "temperature": (0.05, 10.0)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    a = p.add_argument
    a("--serve", default="http://127.0.0.1:8765", help="pixelis serve's URL (token: $PIXELIS_SERVE_TOKEN)")
    a("--seed", type=int, default=1)
    a("--device", default="auto", help="auto: cuda when present, else cpu")
    a("--threads", type=int, default=1, help="torch threads per rank (the server shares the machine)")
    a("--run-dir", default=None, help="checkpoints and results.json (default $PIXELIS_RUN_DIR/child, else runs/pixel_grpo)")
    a("--resume", default=None, help="a checkpoint of this script: continue exactly where it was saved")
    a("--checkpoint-every", type=int, default=0, help="also save every N steps (0: only when asked and at the end)")
    a("--log-every", type=int, default=10)
    # SFT: behaviour cloning of the expert
    a("--sft-tasks", type=int, default=20000, help="training tasks 0..N-1 whose expert demonstrations are cloned")
    a("--sft-steps", type=int, default=2000)
    a("--sft-batch", type=int, default=256, help="state-action pairs per step (all ranks together)")
    a("--sft-lr", type=float, default=1e-3)
    a("--sft-warmup", type=int, default=100)
    a("--val-tasks", type=int, default=300)
    a("--val-every", type=int, default=500, help="SFT steps between greedy validations")
    # GRPO
    a("--grpo-steps", type=int, default=300)
    a("--tasks-per-step", type=int, default=16, help="GRPO groups per step (all ranks together)")
    a("--group-size", type=int, default=8)
    a("--task-pool", type=int, default=20000, help="GRPO draws training tasks N_sft .. N_sft+pool-1")
    a("--grpo-lr", type=float, default=2e-4, help="measured: 5e-5, 2e-4 (best), 5e-4; docs/example.md")
    a("--minibatches", type=int, default=2)
    a("--epochs", type=int, default=1)
    a("--clip-low", type=float, default=0.2)
    a("--clip-high", type=float, default=0.28)
    a("--kl-coef", type=float, default=0.05)
    a("--temperature", type=float, default=1.0)
    a("--grad-clip", type=float, default=1.0)
    a("--grpo-val-every", type=int, default=0, help="GRPO steps between validations on the validation tasks, "
      "greedy and --val-samples sampled attempts each, sent task by task (run.validation) so that the compare view "
      "pairs a fork with its parent (0: none)")
    a("--val-samples", type=int, default=4, help="sampled attempts per validation task in GRPO's validations")
    a("--weights", default="final=1,coherence=0,curiosity=0", help="reward weights when no stage is pushed")
    # the held-out test
    a("--test-tasks", type=int, default=2000)
    a("--test-samples", type=int, default=8)
    a("--eval-envs", type=int, default=2048, help="environments per evaluation vector (serve's cap is 4,096)")
    args = p.parse_args(argv)
    args.default_weights = {k: float(v) for k, v in (kv.split("=") for kv in args.weights.split(","))}
    return args


# -- the policy: pixelis's network (train/policy/doc.go), in PyTorch ------------------------------

class Policy(nn.Module):
    """e_c = ReLU(cell_c·E + b_e) per coarse-view cell, x = [global, mean_c e_c], h = MLP(x),
    logits = h·W_head + b_head, and for the 'segment at cell c' actions a shared location scorer
    logits_c += v·ReLU(cell_c·U + h·P + b)."""

    def __init__(self, layout, actions, hidden=(256, 256), cell_embed=32, loc_hidden=32):
        super().__init__()
        self.g, self.cells, self.cf = layout["global_width"], layout["cells"], len(layout["cell_features"])
        self.cell_enc = nn.Linear(self.cf, cell_embed)
        dims = [self.g + cell_embed, *hidden]
        self.trunk = nn.ModuleList(nn.Linear(i, o) for i, o in zip(dims, dims[1:]))
        self.head = nn.Linear(dims[-1], actions)
        self.loc_cell = nn.Linear(self.cf, loc_hidden, bias=False)
        self.loc_trunk = nn.Linear(dims[-1], loc_hidden)
        self.loc_score = nn.Linear(loc_hidden, 1, bias=False)

    def forward(self, obs):
        glob, cells = obs[:, :self.g], obs[:, self.g:].reshape(len(obs), self.cells, self.cf)
        h = torch.cat([glob, F.relu(self.cell_enc(cells)).mean(1)], 1)  # x = [global, mean_c e_c]
        for layer in self.trunk:
            h = F.relu(layer(h))
        logits = self.head(h)
        z = F.relu(self.loc_cell(cells) + self.loc_trunk(h)[:, None, :])  # z_c = ReLU(cell_c·U + h·P + b)
        loc = self.loc_score(z).squeeze(-1)                                # s_c = z_c·v
        return torch.cat([logits[:, :self.cells] + loc, logits[:, self.cells:]], 1)


def masked_logits(policy, obs, mask, temperature=1.0):
    """logits/T with the actions the mask forbids at −1e9 (never sampled, never argmax)."""
    return (policy(obs) / temperature).masked_fill(~mask, -1e9)


# -- ranks ------------------------------------------------------------------------------------------

class Ranks:
    """This process's place among the torchrun ranks (one rank alone: 0 of 1)."""

    def __init__(self):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.world > 1:
            dist.init_process_group("gloo")

    def shard(self, items):
        return items[self.rank::self.world]

    def sum(self, t):
        """Σ over ranks (a float64 tensor, in place)."""
        if self.world > 1:
            dist.all_reduce(t)
        return t

    def gather(self, obj):
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out


# -- playing episodes through the vector endpoints ----------------------------------------------------

def play(client, policy, tasks, group, device, gen=None, temperature=1.0, record=False, score=None):
    """Play each task `group` times (greedy when gen is None, else sampled from gen) until every
    episode ends. Returns correct [len(tasks)·group] and, with record, the rows of every step of every
    episode (obs, mask, action, log π_old(a|s), env index) and score(episode ids), called while the
    episodes are still live on the server."""
    env = VectorEnv(client, tasks=tasks, group=group, autoreset_mode="disabled")
    try:
        obs, info = env.reset()
        n = env.num_envs
        done, correct, rows = np.zeros(n, bool), np.zeros(n, bool), []
        first = {"question": info["task"][0]["question"], "actions": []}  # env 0's episode, for the console
        while not done.all():
            o, m = torch.from_numpy(obs).to(device), torch.from_numpy(info["action_mask"]).to(device)
            with torch.no_grad():
                logits = masked_logits(policy, o, m, temperature).float().cpu()
            if gen is None:
                act = logits.argmax(1)
            else:  # every env draws every step (ended ones too), so two models share the streams
                act = torch.multinomial(F.softmax(logits, 1), 1, generator=gen).squeeze(1)
            if record:
                live = torch.from_numpy(~done)
                logp = F.log_softmax(logits, 1).gather(1, act[:, None]).squeeze(1)
                rows.append((o.cpu()[live], m.cpu()[live], act[live], logp[live], torch.nonzero(live).squeeze(1)))
            if not done[0]:
                first["actions"].append(int(act[0]))
            obs, _, term, trunc, info = env.step(act.numpy())
            for f in info["finished"][info["_finished"]]:
                correct[f["slot"]] = f["correct"]
                if f["slot"] == 0:
                    first.update(answer=f.get("answer"), correct=f["correct"], ground_truth=f.get("ground_truth"))
            done |= term | trunc
        if not record:
            return correct
        cat = [torch.cat(col) for col in zip(*rows)]
        return correct, cat, score(list(env.episode_ids)), first
    finally:
        env.close()


def evaluate(client, policy, ranks, tasks, samples, device, seed, chunk_envs):
    """greedy[i] and pass@1[i] = mean_k correct(task i, attempt k) for every task, this rank playing
    its share. The sampling streams depend on seed alone, so two models are compared on the same
    tasks and the same random numbers."""
    greedy, tries = attempts(client, policy, ranks, tasks, samples, device, seed, chunk_envs)
    return greedy, (tries.mean(1) if samples else np.zeros(len(tasks)))


def attempts(client, policy, ranks, tasks, samples, device, seed, chunk_envs):
    """greedy[i] and tries[i, k] = correct(task i, sampled attempt k), 1.0 or 0.0, as evaluate plays them."""
    policy.eval()
    n = len(tasks)
    res = torch.zeros(n, 1 + samples, dtype=torch.float64)
    mine = list(range(ranks.rank, n, ranks.world))
    gen = torch.Generator().manual_seed(seed * 1_000_003 + ranks.rank)
    per = max(1, chunk_envs // max(1, samples))
    for b in range(0, len(mine), per):
        idx = mine[b:b + per]
        chunk = [tasks[i] for i in idx]
        res[idx, 0] = torch.from_numpy(play(client, policy, chunk, 1, device).astype(np.float64))
        if samples:
            c = play(client, policy, chunk, samples, device, gen=gen).reshape(len(idx), samples)
            res[idx, 1:] = torch.from_numpy(c.astype(np.float64))
    ranks.sum(res)
    policy.train()
    return res[:, 0].numpy(), res[:, 1:].numpy()


def paired(before, after):
    """mean of after − before and its standard error over tasks: sd(d)/√n."""
    d = after - before
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))


# -- SFT ------------------------------------------------------------------------------------------

def demonstrations(client, tasks):
    """(obs, mask, action) of every expert action on the tasks, in chunks of serve's 1,024."""
    xs, ms, ys = [], [], []
    for b in range(0, len(tasks), 1024):
        d = client.experts(tasks[b:b + 1024], observation={"encoding": "npy"})
        xs.append(torch.from_numpy(np.asarray(d["obs"], np.float32)))
        ms.append(torch.from_numpy(np.asarray(d["action_mask"], bool)))
        ys.append(torch.tensor([a["index"] for ex in d["experts"] for a in ex["actions"]]))
    return torch.cat(xs), torch.cat(ms), torch.cat(ys)


def sft_lr(args, step):
    """linear warm-up, then cosine: lr·½(1 + cos(π·t/T))."""
    if step <= args.sft_warmup:
        return args.sft_lr * step / args.sft_warmup
    t = (step - args.sft_warmup) / max(1, args.sft_steps - args.sft_warmup)
    return args.sft_lr * 0.5 * (1 + math.cos(math.pi * t))


def update(st, loss, args):
    """Backward, clip the gradient's norm to grad_clip, step — unless the norm is not finite: then the
    update is skipped and counted, so non-finite values never reach the weights. After DDP's all-reduce
    every rank has the same gradient, so every rank decides alike."""
    st.opt.zero_grad()
    loss.backward()
    gn = nn.utils.clip_grad_norm_(st.model.parameters(), args.grad_clip)
    if torch.isfinite(gn):
        st.opt.step()
    else:
        st.skipped += 1
        log_line(st, "update skipped: gradient norm %s (%d so far)" % (gn.item(), st.skipped))
    return gn


def sft_step(st, data, args, ranks):
    """One step of behaviour cloning: L = −(1/B)·Σ log π(a*|s), a* the expert's action."""
    x, m, y = data
    b = max(1, args.sft_batch // ranks.world)
    i = torch.randint(len(x), (b,), generator=st.gens["batch"])
    for g in st.opt.param_groups:
        g["lr"] = sft_lr(args, st.sft_step + 1)
    logits = masked_logits(st.model, x[i].to(st.device), m[i].to(st.device))
    loss = F.cross_entropy(logits, y[i].to(st.device))
    gn = update(st, loss, args)
    st.sft_step += 1
    acc = (logits.argmax(1) == y[i].to(st.device)).float().mean()
    return {"train/loss": loss.item(), "train/accuracy": acc.item(), "train/grad_norm": gn.item(), "train/lr": st.opt.param_groups[0]["lr"]}


# -- GRPO -----------------------------------------------------------------------------------------

def rewards(client, episode_ids, group, weights):
    """r_i = Σ_c w_c·raw_c(i) + penalty(i) + cost(i) over the weighted components c, from the raw
    components POST /v1/score measures (stateless: the same request always scores the same)."""
    items = [{"episode": e, "group": k // group} for k, e in enumerate(episode_ids)]
    scored = client.score(items)["items"]
    raw = {c: np.array([it["raw"].get(c, 0.0) for it in scored]) for c in COMPONENTS}
    r = raw["penalty"] + raw["cost"]
    for c in WEIGHTED:
        r = r + weights.get(c, 0.0) * raw[c]
    return r, raw


def advantages(r, group):
    """GRPO: A_i = (r_i − mean_g r) / (std_g r + 1e-6) within each group g of the same task."""
    g = torch.from_numpy(r).reshape(-1, group)
    return ((g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True) + 1e-6)).reshape(-1), g.std(1) > 1e-6


def grpo_loss(model, ref, o, m, a, logp_old, adv, w, args):
    """The clipped surrogate with a KL anchor to the SFT policy, token-mean over the rows of weight 1:
    ρ = exp(log π(a|s) − log π_old(a|s)),  L_clip = −min(ρ·A, clip(ρ, 1−ε_low, 1+ε_high)·A),
    KL ≈ k3 = exp(log π_ref − log π) − (log π_ref − log π) − 1,  L = Σ w·(L_clip + β·KL) / max(Σ w, 1).
    Also the w-weighted sums of the loss, KL, entropy and clipped rows, and Σ w (the step's means
    are taken over every rank's rows: a rank whose groups all carry no signal has Σ w = 0)."""
    logp_all = F.log_softmax(masked_logits(model, o, m, args.temperature), 1)
    logp = logp_all.gather(1, a[:, None]).squeeze(1)
    with torch.no_grad():
        logp_ref = F.log_softmax(masked_logits(ref, o, m, args.temperature), 1).gather(1, a[:, None]).squeeze(1)
    ratio = torch.exp(logp - logp_old)
    surr = torch.min(ratio * adv, torch.clamp(ratio, 1 - args.clip_low, 1 + args.clip_high) * adv)
    d = logp_ref - logp
    kl = torch.exp(d) - d - 1
    per_row = -surr + args.kl_coef * kl
    loss = (w * per_row).sum() / w.sum().clamp(min=1)
    with torch.no_grad():
        entropy = -(logp_all.exp() * logp_all).sum(1)
        clipped = ((ratio - 1).abs() > args.clip_low).float()
        sums = [(w * per_row).sum(), (w * kl).sum(), (w * entropy).sum(), (w * clipped).sum(), w.sum()]
    return loss, [v.item() for v in sums]


def grpo_step(st, client, args, ranks, weights):
    """Draw tasks_per_step tasks (the same draw on every rank, each playing its share), play each
    group_size times, score, and update on every action of the groups whose rewards differ."""
    pool0 = args.sft_tasks
    drawn = torch.randint(args.task_pool, (args.tasks_per_step,), generator=st.gens["tasks"]).tolist()
    tasks = ranks.shard([{"split": "train", "index": pool0 + i} for i in drawn])
    correct, (o, m, a, logp_old, env), (r, raw), first = play(
        client, st.net, tasks, args.group_size, st.device, gen=st.gens["sample"], temperature=args.temperature,
        record=True, score=lambda ids: rewards(client, ids, args.group_size, weights))
    adv_env, informative = advantages(r, args.group_size)
    # rows of groups whose rewards are all equal carry no signal (A = 0): weight 0, left out of the mean
    w, adv = informative.repeat_interleave(args.group_size)[env].float(), adv_env[env].float()
    stats = ["policy/loss", "policy/kl", "policy/entropy", "policy/clipfrac"]
    sums = [0.0] * (len(stats) + 1)  # Σ w·(loss, KL, entropy, clipped) and Σ w over the minibatches
    for _ in range(args.epochs):
        perm = torch.randperm(len(a), generator=st.gens["batch"])
        for chunk in torch.chunk(perm, args.minibatches):  # every rank has ≥ 1 row per env: the same count of backward passes
            dev = lambda t: t[chunk].to(st.device)
            loss, s = grpo_loss(st.model, st.ref, dev(o), dev(m), dev(a), dev(logp_old), dev(adv), dev(w), args)
            update(st, loss, args)
            sums = [x + y for x, y in zip(sums, s)]
    local = torch.tensor([len(correct), correct.sum(), float(informative.sum()), len(informative), float(w.sum())]
                         + [raw[c].sum() for c in COMPONENTS] + [r.sum()] + sums, dtype=torch.float64)
    tot = ranks.sum(local).tolist()
    tot, sums = tot[:-len(sums)], tot[-len(sums):]
    episodes = int(tot[0])
    out = {"episodes": episodes, "successes": int(tot[1]), "train/success_rate": tot[1] / episodes,
           "grpo/informative_groups": tot[2] / tot[3], "grpo/actions_trained": tot[4], "reward/total": tot[-1] / episodes}
    for k, c in enumerate(COMPONENTS):
        out["reward/%s/raw" % c] = tot[5 + k] / episodes
    # the weighted means over every rank's trained rows; none when no group of the step had a signal
    out.update({k: v / sums[-1] if sums[-1] > 0 else None for k, v in zip(stats, sums)})
    out["train/skipped_updates"] = st.skipped
    out["train/lr"] = st.opt.param_groups[0]["lr"]  # the rate this step trained with (a live edit's shows here)
    first["reward"] = float(r[0])
    return out, first


# -- state, checkpoints, commands ----------------------------------------------------------------

class State:
    """Everything a checkpoint restores: weights, optimiser, reference policy, generators, steps,
    results so far."""

    def __init__(self, args, layout, actions, ranks):
        self.args, self.layout, self.ranks = args, layout, ranks
        self.device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                                   ("cpu" if args.device == "auto" else args.device))
        torch.manual_seed(args.seed)  # the initial weights: the same on every rank
        self.net = Policy(layout, actions).to(self.device)
        self.model = self.net
        if ranks.world > 1:
            self.model = nn.parallel.DistributedDataParallel(self.net)
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=args.sft_lr, weight_decay=0.0)
        self.ref = None
        seed = args.seed * 7919
        self.gens = {"batch": torch.Generator().manual_seed(seed + 1 + ranks.rank),
                     "sample": torch.Generator().manual_seed(seed + 101 + ranks.rank),
                     "tasks": torch.Generator().manual_seed(seed + 1001)}  # the same draws on every rank
        self.phase, self.step, self.sft_step, self.grpo_step = "sft", 0, 0, 0
        self.skipped = 0  # updates refused for a non-finite gradient
        self.results = {}  # the validation and the test results so far
        self.timing = {}   # wall and CPU seconds per phase (carried over by resume; not part of the results)

    def start_grpo(self):
        """Freeze a copy of the SFT policy as π_ref; a fresh optimiser at the GRPO learning rate."""
        self.ref = copy.deepcopy(self.net).eval()
        for p in self.ref.parameters():
            p.requires_grad_(False)
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=self.args.grpo_lr, weight_decay=0.0)
        self.phase = "grpo"

    def save(self, run_dir):
        """torch.save to checkpoints/step_<N>.pt through a temporary file and a rename (a crash never
        leaves half a checkpoint). Collective: every rank hands its generators to rank 0."""
        gens = self.ranks.gather({k: g.get_state() for k, g in self.gens.items()})
        if self.ranks.rank != 0:
            return None
        path = os.path.join(run_dir, "checkpoints", "step_%07d.pt" % self.step)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        blob = {"format": CHECKPOINT_FORMAT, "observation_version": self.layout["version"], "args": vars(self.args),
                "phase": self.phase, "step": self.step, "sft_step": self.sft_step, "grpo_step": self.grpo_step,
                "model": self.net.state_dict(), "ref": self.ref.state_dict() if self.ref else None,
                "optimizer": self.opt.state_dict(), "generators": gens, "world_size": self.ranks.world,
                "results": self.results, "timing": self.timing}
        torch.save(blob, path + ".tmp")
        os.replace(path + ".tmp", path)
        return path

    def load(self, path):
        blob = torch.load(path, map_location=self.device)
        if blob.get("format") != CHECKPOINT_FORMAT:
            sys.exit("pixel_grpo: %s: not a checkpoint of this script (format %r)" % (path, blob.get("format")))
        if blob["observation_version"] != self.layout["version"]:
            sys.exit("pixel_grpo: %s was made on observation version %d; the server's is %d" %
                     (path, blob["observation_version"], self.layout["version"]))
        if blob["world_size"] != self.ranks.world:
            sys.exit("pixel_grpo: %s was saved by %d ranks; this run has %d" % (path, blob["world_size"], self.ranks.world))
        self.net.load_state_dict(blob["model"])
        if blob["phase"] == "grpo":
            self.start_grpo()
            self.ref.load_state_dict(blob["ref"])
        self.opt.load_state_dict(blob["optimizer"])
        for k in EDITABLE:  # the values live edits left, which the optimiser's state already holds for the lr
            setattr(self.args, k, blob["args"].get(k, getattr(self.args, k)))
        for k, s in blob["generators"][self.ranks.rank].items():
            self.gens[k].set_state(s)
        self.phase, self.step, self.sft_step, self.grpo_step = blob["phase"], blob["step"], blob["sft_step"], blob["grpo_step"]
        self.results, self.timing = blob["results"], blob.get("timing", {})


def connect(args):
    """The launch channel (pixelis.sdk): a no-op Run when the trainer runs alone."""
    cfg = {k: v for k, v in vars(args).items() if isinstance(v, (int, float, str, bool)) or v is None}
    return sdk.connect(components=COMPONENTS, reports=["episodes", "successes"], config=cfg,
                       default_weights=args.default_weights, editable=EDITABLE)


def checkpoint(st, run, run_dir):
    path = st.save(run_dir)
    if path:
        run.checkpoint_saved(os.path.abspath(path), st.step)
        log_line(st, "checkpoint %s" % path)
    return path


def handle(cmds, st, run, run_dir, client, args, ranks):
    """The console's commands at a step boundary (the same on every rank). Returns True to stop."""
    stop = False
    for c in cmds:
        if c.kind == "checkpoint":
            checkpoint(st, run, run_dir)
        elif c.kind == "evaluate":
            greedy, _ = evaluate(client, st.net, ranks, val_tasks(args), 0, st.device, args.seed, args.eval_envs)
            run.log(st.step, {"eval/val/greedy": float(greedy.mean())}, weights={})
        elif c.kind == "stop":
            if (c.args or {}).get("checkpoint"):
                checkpoint(st, run, run_dir)
            stop = True
        elif c.kind == "stage":
            log_line(st, "stage %s: weights %s" % (run.stage.name, run.stage.weights))
        elif c.kind == "edit":
            edit(st, c.args["field"], float(c.args["value"]))
        c.ack(ok=True)
    return stop


def edit(st, field, value):
    """A live edit from the next step on: args.<field>, and the optimiser's rate when it is the phase's.
    (pixelis checked the field and its range against EDITABLE before sending it.)"""
    old = getattr(st.args, field)
    setattr(st.args, field, value)
    if field == "grpo_lr" and st.phase == "grpo":
        for g in st.opt.param_groups:
            g["lr"] = value
    log_line(st, "edit %s: %g -> %g" % (field, old, value))


def log_line(st, text):
    if st.ranks.rank == 0:
        print("[%s %d] %s" % (st.phase, st.step, text), flush=True)


def action_names(spec):
    """Each action index as a person reads it: SEGMENT_OBJECT_AT(cell k), the tools, ANSWER(word)."""
    sp = spec["action_space"]
    names = ["SEGMENT_OBJECT_AT(cell %d)" % k for k in range(sp["first_tool_action"])] + list(sp["tool_ops"])
    return names + ["ANSWER(%s)" % w for w in spec["answer_vocab"]]


def val_tasks(args):
    return [{"split": "val", "index": i} for i in range(args.val_tasks)]


def test_tasks(args):
    return [{"split": "test", "index": i} for i in range(args.test_tasks)]


def run_dir_of(args):
    if args.run_dir:
        return args.run_dir
    if os.environ.get("PIXELIS_RUN_DIR"):
        return os.path.join(os.environ["PIXELIS_RUN_DIR"], "child")
    return os.path.join("runs", "pixel_grpo")


# -- the run ------------------------------------------------------------------------------------

class timed:
    """Adds the wall and CPU seconds (this process) of a block to st.timing[name]."""

    def __init__(self, st, name):
        self.t = st.timing.setdefault(name, {"wall_s": 0.0, "cpu_s": 0.0})

    def __enter__(self):
        self.w, self.c = time.monotonic(), time.process_time()

    def __exit__(self, *exc):
        self.t["wall_s"] += time.monotonic() - self.w
        self.t["cpu_s"] += time.process_time() - self.c


def test_eval(st, client, args, ranks, key):
    with timed(st, "test_eval"):
        return _test_eval(st, client, args, ranks, key)


def _test_eval(st, client, args, ranks, key):
    t0 = time.monotonic()
    greedy, pass1 = evaluate(client, st.net, ranks, test_tasks(args), args.test_samples, st.device, args.seed + 17, args.eval_envs)
    st.results[key] = {"greedy": greedy.tolist(), "pass@1": pass1.tolist(), "samples": args.test_samples}
    log_line(st, "test %s: greedy %.3f pass@1 %.3f on %d tasks × %d samples (%.0f s)" %
             (key, greedy.mean(), pass1.mean(), len(greedy), args.test_samples, time.monotonic() - t0))
    return {"test/%s/greedy" % key: float(greedy.mean()), "test/%s/pass@1" % key: float(pass1.mean())}


def sft_phase(st, run, client, args, ranks, run_dir):
    """Behaviour cloning, validated greedily every val_every steps. False: stopped by a command."""
    run.phase("sft")
    with timed(st, "sft"):
        return _sft_phase(st, run, client, args, ranks, run_dir)


def _sft_phase(st, run, client, args, ranks, run_dir):
    if st.sft_step >= args.sft_steps:  # resumed from the end of SFT
        return True
    tasks = ranks.shard([{"split": "train", "index": i} for i in range(args.sft_tasks)])
    data = demonstrations(client, tasks)
    log_line(st, "%d expert actions of %d tasks on this rank" % (len(data[2]), len(tasks)))
    while st.sft_step < args.sft_steps:
        m = sft_step(st, data, args, ranks)
        st.step += 1
        if st.sft_step % args.val_every == 0 or st.sft_step == args.sft_steps:
            greedy, _ = evaluate(client, st.net, ranks, val_tasks(args), 0, st.device, args.seed, args.eval_envs)
            m["eval/val/greedy"] = float(greedy.mean())
            st.results["sft_val_greedy"] = m["eval/val/greedy"]
            log_line(st, "validation greedy %.3f on %d tasks" % (greedy.mean(), len(greedy)))
        if st.step % args.log_every == 0 or "eval/val/greedy" in m:
            run.log(st.step, m, weights={})  # no reward weighed an SFT step
            log_line(st, "loss %.4f accuracy %.3f" % (m["train/loss"], m["train/accuracy"]))
        if boundary(st, run, run_dir, client, args, ranks):
            return False
    return True


def grpo_phase(st, run, client, args, ranks, run_dir):
    if st.phase == "sft":
        st.start_grpo()
    run.phase("rft")
    before = st.results.get("before")
    if not before or (len(before["greedy"]), before.get("samples", args.test_samples)) != (args.test_tasks, args.test_samples):
        # a resumed run tested on other tasks or samples than it is now asked to: test the SFT model again
        if st.grpo_step:
            sys.exit("pixel_grpo: the checkpoint's test before GRPO was on %d tasks × %s samples, not %d × %d" %
                     (len(before["greedy"]), before.get("samples"), args.test_tasks, args.test_samples))
        run.log(st.step, test_eval(st, client, args, ranks, "before"), weights={})
    with timed(st, "grpo"):
        return _grpo_loop(st, run, client, args, ranks, run_dir)


def _grpo_loop(st, run, client, args, ranks, run_dir):
    while st.grpo_step < args.grpo_steps:
        weights = dict(run.stage.weights)
        m, sample = grpo_step(st, client, args, ranks, weights)
        st.grpo_step += 1
        st.step += 1
        run.log(st.step, m, weights=weights)  # the weights this step's rewards were computed with
        if st.step % args.log_every == 0:
            sample["actions"] = [st.action_names[k] for k in sample["actions"]]
            run.sample(st.step, sample)
            f = lambda k, fmt: "—" if m[k] is None else fmt % m[k]  # no informative group: nothing trained
            log_line(st, "success %.3f reward %.3f loss %s kl %s entropy %s stage %s" % (
                m["train/success_rate"], m["reward/total"], f("policy/loss", "%.4f"), f("policy/kl", "%.4f"),
                f("policy/entropy", "%.3f"), run.stage.name))
        if args.grpo_val_every and st.grpo_step % args.grpo_val_every == 0:
            validate(st, run, client, args, ranks)
        if boundary(st, run, run_dir, client, args, ranks):
            return False
    return True


def validate(st, run, client, args, ranks):
    """A GRPO validation: each validation task's greedy attempt and --val-samples sampled ones, on the
    streams of the seed alone (a fork and its parent draw the same), sent task by task."""
    with timed(st, "grpo_val"):
        greedy, tries = attempts(client, st.net, ranks, val_tasks(args), args.val_samples, st.device, args.seed,
                                 args.eval_envs)
    ids = ["val-%d" % t["index"] for t in val_tasks(args)]
    run.validation(st.step, {i: [bool(x) for x in row] for i, row in zip(ids, tries)},
                   greedy={i: bool(g) for i, g in zip(ids, greedy)})
    log_line(st, "validation greedy %.3f pass@1 %.3f on %d tasks × %d samples" %
             (greedy.mean(), tries.mean(), len(greedy), args.val_samples))


def boundary(st, run, run_dir, client, args, ranks):
    """The end of a step: the console's commands, the periodic checkpoint. True: stop now."""
    if handle(run.step_boundary(st.step), st, run, run_dir, client, args, ranks):
        return True
    if args.checkpoint_every and st.step % args.checkpoint_every == 0:
        checkpoint(st, run, run_dir)
    return False


def summary(st, args, t0, cpu0, steps_done):
    b, a = st.results["before"], st.results["after"]
    out = {"sft_val_greedy": st.results.get("sft_val_greedy")}
    for k in ("greedy", "pass@1"):
        before, after = np.array(b[k]), np.array(a[k])
        d, se = paired(before, after)
        out[k] = {"before": float(before.mean()), "after": float(after.mean()), "change": d, "change_se": se}
    wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
    out.update({"wall_s": wall, "cpu_s_rank0": cpu, "steps_this_process": steps_done, "test_tasks": args.test_tasks,
                "test_samples": args.test_samples, "world_size": st.ranks.world, "timing": st.timing})
    for phase, steps in (("sft", args.sft_steps), ("grpo", args.grpo_steps)):
        t = out["timing"].get(phase)
        if t and steps and t["cpu_s"] > 0:
            t.update(steps=steps, steps_per_s=steps / t["wall_s"], steps_per_cpu_s=steps / t["cpu_s"])
    return out


def main(argv=None):
    args = parse_args(argv)
    t0, cpu0 = time.monotonic(), time.process_time()
    torch.set_num_threads(args.threads)
    ranks = Ranks()
    client = Client(args.serve, token=os.environ.get("PIXELIS_SERVE_TOKEN"))
    spec = reach(client, args.serve)
    layout = spec["observation"]["coarse"]["layout"]
    st = State(args, layout, spec["action_space"]["size"], ranks)
    st.action_names = action_names(spec)
    if args.resume:
        st.load(args.resume)
    run_dir, first = run_dir_of(args), st.step
    run = connect(args)
    together = False  # every rank leaves train() at the same step, unless one of them failed
    try:
        train(st, run, client, args, ranks, run_dir, t0, cpu0, first)
        together = True
    finally:
        client.close()
        if ranks.world > 1:
            close_distributed(st, together)


def reach(client, url):
    """serve's spec: the first request, where a server that is not there is said so in one line
    (exit 1), not as a traceback."""
    try:
        return client.spec()
    except OSError as e:  # refused, a name that does not resolve, a timeout
        sys.exit("pixel_grpo.py: cannot reach pixelis serve at %s (%s): start it with `pixelis serve` "
                 "(it listens on http://127.0.0.1:8765), or give its URL with --serve" % (url, e.strerror or e))


def close_distributed(st, together):
    """Takes DDP and the process group down while the interpreter is whole. PyTorch 1.13's gloo
    process group joins its worker thread in its destructor without releasing the GIL; a worker
    still freeing a tensor Python owns then waits for the GIL for ever, and the rank never exits
    (pytorch#56297; here it hung one torchrun in two). After a barrier the worker holds no such
    tensor; DDP's reducer, which keeps the group alive, is dropped before the group is destroyed.
    The barrier only when every rank left training together (finished or stopped at one step):
    after an error on one rank the others would wait for it."""
    if together:
        dist.barrier()
    st.model = st.net
    dist.destroy_process_group()


def train(st, run, client, args, ranks, run_dir, t0, cpu0, first):
    """SFT (unless resumed past it), GRPO, the test evaluation after it and the results; a stop
    command ends it early, without done()."""
    # The boundary before the first step: a fork's edits, which its welcome carried, apply from it.
    if handle(run.step_boundary(st.step), st, run, run_dir, client, args, ranks):
        return
    finished = True
    if st.phase == "sft":
        finished = sft_phase(st, run, client, args, ranks, run_dir)
    if finished:
        finished = grpo_phase(st, run, client, args, ranks, run_dir)
    if not finished:
        return
    run.phase("eval")
    run.log(st.step, test_eval(st, client, args, ranks, "after"), weights={})
    path = checkpoint(st, run, run_dir)
    if ranks.rank == 0:
        res = summary(st, args, t0, cpu0, st.step - first)
        res["checkpoint"] = path
        with open(os.path.join(run_dir, "results.json"), "w") as f:
            json.dump(res, f, indent=1)
        print(json.dumps(res), flush=True)
    run.done()


if __name__ == "__main__":
    main()
