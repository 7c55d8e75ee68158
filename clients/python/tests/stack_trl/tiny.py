"""A tiny causal language model and its tokenizer, built here from a config
and a word list: no model hub is needed. Randomly initialised (a fixed seed),
small enough that a training step takes milliseconds on a CPU."""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL = ["<pad>", "<s>", "</s>", "<unk>"]
WORDS = ("the a red green blue square circle cross left right above below is at of and what where which "
         "colour shape object zoom segment read track answer yes no one two three four five").split()


def tokenizer():
    vocab = {w: i for i, w in enumerate(SPECIAL + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


def model(tok, seed=0):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return LlamaForCausalLM(cfg)


def sentences(n, seed=0):
    """n short sentences over the word list, the same for a seed."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        idx = torch.randint(len(WORDS), (8,), generator=g).tolist()
        out.append(" ".join(WORDS[i] for i in idx))
    return out
