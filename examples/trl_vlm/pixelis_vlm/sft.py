"""SFT on the CoTA conversations as pixelis's own SFT does it (train/sft): the
loss on the assistant's turns only, each turn by its CoTA role.

    imitate  next-token likelihood of the turn: −log π(turn)
    skip     no loss: a fair try that turned out wrong stays in the context only
    avoid    unlikelihood of the turn (Welleck et al. 2019): −log(1 − π(turn) + ε)

    L = −[ Σ_imitate log π(turn) + Σ_avoid w_avoid · log(1 − π(turn) + ε) ] / (n_imitate + w_avoid · n_avoid)

π(turn) being the product of its tokens' probabilities: a turn (a tool call
or the answer) is the action pixelis's loss weighs as one (train/sft/loss.go,
whose avoid weight, sft.avoid_weight, defaults to 0.5).

TRL's SFTTrainer masks a VLM's assistant turns (`assistant_only_loss`) but all
alike, so the Collator here finds the turns itself, with the mask of TRL's
training chat template (get_training_chat_template), and Trainer is
transformers' Trainer with this loss.
"""

import torch
import transformers
from trl.chat_template_utils import get_training_chat_template

from . import data

ROLE_IMITATE, ROLE_SKIP, ROLE_AVOID = "imitate", "skip", "avoid"
AVOID_WEIGHT = 0.5  # configs/default.toml sft.avoid_weight
EPS = 1e-6          # train/sft's unlikelihoodEps: log(1 − π + ε) stays finite as π reaches 1
IGNORE = -100


def runs(mask):
    """The [start, end) spans of consecutive ones in a 0/1 sequence."""
    out, start = [], None
    for i, m in enumerate(list(mask) + [0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i))
            start = None
    return out


class Collator:
    """Batches of conversations (rows of data.conversations) for the
    Trainer: the processor's inputs, right-padded, and which assistant turn
    each token belongs to with the turns' weights."""

    def __init__(self, proc, tools, avoid_weight=AVOID_WEIGHT):
        self.proc = proc
        self.tools = tools
        self.template = get_training_chat_template(proc)
        self.weights = {ROLE_IMITATE: 1.0, ROLE_SKIP: 0.0, ROLE_AVOID: float(avoid_weight)}

    def encode(self, row):
        """One conversation: (processor fields, turn of each token (0 for
        none, k for the k-th assistant turn), [(role, weight)] of the turns)."""
        msgs = data.chat(row["messages"], row["images"])
        enc = self.proc.apply_chat_template(msgs, tools=self.tools, tokenize=True, return_dict=True,
                                            return_tensors="pt", chat_template=self.template,
                                            return_assistant_tokens_mask=True)
        mask = enc.pop("assistant_masks")[0].tolist()
        roles = [m.get("cota_role") or ROLE_IMITATE for m in row["messages"] if m["role"] == "assistant"]
        spans = runs(mask)
        if len(spans) != len(roles):
            raise ValueError("conversation %s: %d assistant turns, %d spans in the template's assistant mask"
                             % (row.get("id"), len(roles), len(spans)))
        turn = torch.zeros(len(mask), dtype=torch.long)
        for k, (a, b) in enumerate(spans, 1):
            turn[a:b] = k
        turns = []
        for role in roles:
            if role not in self.weights:
                raise ValueError("conversation %s: cota_role %r: want one of %s"
                                 % (row.get("id"), role, ", ".join(self.weights)))
            turns.append((role, self.weights[role]))
        return dict(enc), turn, turns

    def __call__(self, rows):
        encoded = [self.encode(r) for r in rows]
        length = max(e["input_ids"].shape[1] for e, _, _ in encoded)
        pad = self.proc.tokenizer.pad_token_id
        batch = {}
        for key in encoded[0][0]:
            parts = [e[key] for e, _, _ in encoded]
            if key in ("pixel_values", "image_grid_thw"):  # flat over the batch's images
                batch[key] = torch.cat(parts)
            else:  # one row a conversation: right-padded
                fill = pad if key == "input_ids" else 0
                batch[key] = torch.stack([torch.nn.functional.pad(p[0], (0, length - p.shape[1]), value=fill)
                                          for p in parts])
        # Turns numbered across the batch from 1; 0 is no turn (its weight 0).
        turn = torch.zeros(len(rows), length, dtype=torch.long)
        weight, avoid = [0.0], [False]
        for i, (_, t, turns) in enumerate(encoded):
            t = torch.where(t > 0, t + len(weight) - 1, t)
            turn[i, :t.shape[0]] = t
            weight += [w for _, w in turns]
            avoid += [role == ROLE_AVOID for role, _ in turns]
        batch["turn"] = turn
        batch["turn_weight"] = torch.tensor(weight)
        batch["turn_avoid"] = torch.tensor(avoid)
        return batch


def loss(logits, input_ids, turn, turn_weight, turn_avoid):
    """The loss of the module's text from the model's logits: each turn's
    log π summed over its tokens (the logits at t predicting token t+1)."""
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    per_turn = torch.zeros(turn_weight.shape[0], dtype=logp.dtype, device=logp.device)
    per_turn = per_turn.index_add(0, turn[:, 1:].reshape(-1), logp.reshape(-1))
    unlikely = torch.log(1 - per_turn.exp() + EPS)
    term = torch.where(turn_avoid, unlikely, per_turn)
    w = turn_weight.to(term.dtype)
    return -(w * term).sum() / w.sum().clamp_min(EPS)


class Trainer(transformers.Trainer):
    """transformers' Trainer with the CoTA loss on the Collator's batches."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.model_accepts_loss_kwargs = False  # the loss is a mean: the Trainer divides it over accumulation

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        turn, weight, avoid = inputs.pop("turn"), inputs.pop("turn_weight"), inputs.pop("turn_avoid")
        out = model(**inputs)
        value = loss(out.logits, inputs["input_ids"], turn, weight, avoid)
        return (value, out) if return_outputs else value
