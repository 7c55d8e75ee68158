"""A tiny causal language model and its tokenizer, built here from a config
and a word list: no model hub is needed. Randomly initialised (a fixed seed),
small enough that a training step takes milliseconds on a CPU."""

import datasets
import torch
import transformers
import trl
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


def one(prompts, completions, **kwargs):
    """A constant reward of 1: with half, the weighted reward GRPOTrainer logs is w_one + 0.5 w_half."""
    return [1.0] * len(completions)


def half(prompts, completions, **kwargs):
    """A constant reward of 0.5."""
    return [0.5] * len(completions)


def common_args():
    """TrainingArguments every test's trainer takes: CPU, no hub, a log line every step."""
    return dict(report_to="none", use_cpu=True, logging_steps=1, save_strategy="no", disable_tqdm=True,
                learning_rate=1e-3, seed=0)


def sft_trainer(out, max_steps=10 ** 6, **args):
    """transformers.Trainer on next-token prediction over sentences(64), evaluated on sentences(8, seed=1)."""
    tok = tokenizer()

    def encode(batch):
        return tok(batch["text"], truncation=True, max_length=16)

    data = datasets.Dataset.from_dict({"text": sentences(64)}).map(encode, batched=True, remove_columns=["text"])
    held = datasets.Dataset.from_dict({"text": sentences(8, seed=1)}).map(encode, batched=True, remove_columns=["text"])
    targs = transformers.TrainingArguments(out, max_steps=max_steps, per_device_train_batch_size=4,
                                           per_device_eval_batch_size=4, **dict(common_args(), **args))
    return transformers.Trainer(model=model(tok), args=targs, train_dataset=data, eval_dataset=held,
                                data_collator=transformers.DataCollatorForLanguageModeling(tok, mlm=False))


def saved_model(path):
    """model(tokenizer()) saved in path, for a trainer that loads its model, and a
    reference model beside it, from a directory (GRPOTrainer with beta > 0)."""
    model(tokenizer()).save_pretrained(path)
    return path


def grpo_trainer(out, reward_funcs=(one, half), max_steps=10 ** 6, model_path=None, **args):
    """TRL's GRPOTrainer: groups of 4 completions of 4 tokens for sentences(32) as prompts;
    the model is model(tok), or the one saved in model_path."""
    tok = tokenizer()
    cfg = trl.GRPOConfig(out, max_steps=max_steps, per_device_train_batch_size=4, num_generations=4,
                         max_completion_length=4, **dict(common_args(), **args))
    prompts = datasets.Dataset.from_dict({"prompt": sentences(32)})
    return trl.GRPOTrainer(model=model_path or model(tok), processing_class=tok, reward_funcs=list(reward_funcs), args=cfg,
                           train_dataset=prompts, eval_dataset=datasets.Dataset.from_dict({"prompt": sentences(8, seed=1)}))
