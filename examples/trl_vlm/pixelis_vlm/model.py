"""The policy: the Qwen2.5-VL architecture of transformers, with LoRA adapters.

    tiny(convs, tools, out_dir)    a randomly initialised Qwen2.5-VL small enough
                                   for a CPU (1.4 M parameters), with a
                                   tokenizer trained on the conversations and a
                                   Qwen2-VL image processor at the view's size,
                                   saved to out_dir like any checkpoint; with
                                   sizes=QWEN25_VL_3B, the 3B's random-weight
                                   model (gpu_check.sh)
    load(model_dir)                model and processor of such a directory or of a
                                   real checkpoint (Qwen/Qwen2.5-VL-3B-Instruct on
                                   a GPU box), the processor's chat template set
                                   to one TRL parses tool calls of
    lora(model, rank)              PEFT's LoRA on the language model's projections
    save(model, proc, out_dir)     a trained policy, its LoRA merged, as load() reads it

Nothing is downloaded: the tokenizer is trained here with `tokenizers`.

The chat template is TRL's copy of Qwen3-VL's (trl.chat_template_utils): the
same vision tokens as Qwen2.5-VL's, and it renders tool calls, tool messages
with images and a tool list, all of which Qwen2.5-VL's own template cannot; TRL
knows it, so `add_response_schema` gives the tokenizer the parser that reads
tool calls back out of a completion, and `get_training_chat_template` its
version with generation markers for the loss on the assistant's turns.
"""

import json

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (AutoProcessor, ProcessorMixin, PreTrainedTokenizerFast, Qwen2_5_VLConfig,
                          Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor)
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
from transformers.utils import is_torchvision_available
from trl.chat_template_utils import add_response_schema, qwen3_vl_chat_template

# The chat template of every processor load() returns.
CHAT_TEMPLATE = qwen3_vl_chat_template

PAD, EOS = "<|endoftext|>", "<|im_end|>"
# Tokens the template and the model's config refer to: kept whole, never merged.
SPECIAL = [PAD, "<|im_start|>", EOS, "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# Template words a tool call is made of: single tokens, decoded as text (the
# response parser reads them in the decoded completion).
TOOL_WORDS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>"]

# The view is 64 pixels a side; 56 = 2 × 28 is the nearest size the image
# processor's patches (14) and their 2×2 merge fit: 4 image tokens an image.
IMAGE_PIXELS = 56 * 56
IMAGE_SIZE = {"shortest_edge": IMAGE_PIXELS, "longest_edge": IMAGE_PIXELS}  # the processor's bounds, in pixels

# The tiny model's sizes: 1.4 M parameters, 0.26 M of them the vision tower
# (1,389,632 with the 1,149 tokens 200 conversations train). vocab is the BPE
# trainer's most; a small corpus stops short of it.
TINY = dict(hidden=128, layers=4, heads=4, kv_heads=2, intermediate=512, vision_hidden=64, vision_depth=2,
            vision_heads=2, max_positions=4096, vocab=2048)

# Qwen2.5-VL-3B-Instruct's sizes (its config.json, transformers' Qwen2.5-VL docs), for a
# random-weight model of the real size on a GPU (gpu_check.sh): 3.75 B parameters, 0.67 B
# of them the vision tower. The tokenizer is still the one trained here; the embedding
# keeps the real checkpoint's 151,936 rows so that memory and step time are the 3B's.
QWEN25_VL_3B = dict(hidden=2048, layers=36, heads=16, kv_heads=2, intermediate=11008, vision_hidden=1280,
                    vision_depth=32, vision_heads=16, vision_intermediate=3420, window_size=112,
                    fullatt_blocks=[7, 15, 23, 31], max_positions=128000, rope_theta=1000000.0,
                    mrope=[16, 24, 24], embedding_rows=151936, vocab=2048)
SIZES = {"tiny": TINY, "3b": QWEN25_VL_3B}  # gpu_check.sh's SIZE


def _corpus(conversations, tools):
    """Texts the tokenizer learns from: the messages and the tool list as
    the template renders them (JSON), and the template's own words."""
    yield json.dumps(tools, ensure_ascii=False)
    yield CHAT_TEMPLATE
    if hasattr(conversations, "select_columns"):  # a Dataset: leave its images undecoded
        conversations = conversations.select_columns(["messages"])
    for row in conversations:
        for m in row["messages"]:
            for part in m["content"]:
                if part.get("text"):
                    yield part["text"]
            for c in m.get("tool_calls") or []:
                yield '<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>' % (
                    c["function"]["name"], c["function"]["arguments"])


def tokenizer(conversations, tools, vocab=TINY["vocab"]):
    """A byte-level BPE tokenizer trained on the conversations (and the
    tools' JSON schema): any text encodes, the frequent words are one token.
    Each tool's name is one token too, so that naming a tool is one choice
    among the tools: split into BPE pieces (GET_, PROPERTIES, OBJECT_AT, ...),
    a model trained on a few hundred conversations recombines the pieces into
    names no tool has (GET_OBJECT, TRACK_PROPERTIES), which TRL's tool loop
    answers "Tool … not found" and serve never sees."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(conversations, tools), trainer=trainer)
    names = [t["function"]["name"] for t in tools]
    tok.add_tokens([AddedToken(w, special=False, normalized=False) for w in TOOL_WORDS + names])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=None,
                                   padding_side="left", model_max_length=TINY["max_positions"])


class ImageProcessor(Qwen2_5_VLProcessor):
    """Qwen2.5-VL's processor without its video processor, which needs
    torchvision (not in the pinned stack): images and text only, the pixel
    world's views being images."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        tok = tokenizer
        self.image_token, self.video_token = "<|image_pad|>", "<|video_pad|>"
        self.image_token_id = tok.convert_tokens_to_ids(self.image_token)
        self.video_token_id = tok.convert_tokens_to_ids(self.video_token)
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)


def processor(tok):
    """A Qwen2.5-VL processor of tok, its images at IMAGE_PIXELS."""
    images = Qwen2VLImageProcessorPil(size=IMAGE_SIZE, patch_size=14,
                                      merge_size=2, temporal_patch_size=2)
    return ImageProcessor(image_processor=images, tokenizer=tok, chat_template=CHAT_TEMPLATE)


def config(tok, sizes=TINY):
    """A Qwen2.5-VL config of the given sizes whose token ids are tok's.
    Sizes without mrope, rope_theta, vision_intermediate, window_size,
    fullatt_blocks or embedding_rows (TINY) get the small model's choices."""
    head_dim = sizes["hidden"] // sizes["heads"]
    quarter = head_dim // 8  # mrope's (temporal, height, width) sections sum to head_dim / 2, as 16, 24, 24 in 3B
    mrope = sizes.get("mrope", [head_dim // 2 - 2 * quarter, quarter, quarter])
    ids = tok.convert_tokens_to_ids
    text = dict(vocab_size=max(len(tok), sizes.get("embedding_rows", 0)), hidden_size=sizes["hidden"],
                intermediate_size=sizes["intermediate"],
                num_hidden_layers=sizes["layers"], num_attention_heads=sizes["heads"],
                num_key_value_heads=sizes["kv_heads"], max_position_embeddings=sizes["max_positions"],
                rope_parameters={"rope_type": "default", "rope_theta": sizes.get("rope_theta", 10000.0),
                                 "mrope_section": mrope},
                pad_token_id=tok.pad_token_id, bos_token_id=None, eos_token_id=tok.eos_token_id,
                tie_word_embeddings=True)
    vision = dict(depth=sizes["vision_depth"], hidden_size=sizes["vision_hidden"],
                  intermediate_size=sizes.get("vision_intermediate", 2 * sizes["vision_hidden"]),
                  num_heads=sizes["vision_heads"], out_hidden_size=sizes["hidden"], patch_size=14,
                  spatial_merge_size=2, temporal_patch_size=2, window_size=sizes.get("window_size", 56),
                  fullatt_block_indexes=sizes.get("fullatt_blocks", [sizes["vision_depth"] - 1]))
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=ids("<|image_pad|>"),
                            video_token_id=ids("<|video_pad|>"), vision_start_token_id=ids("<|vision_start|>"),
                            vision_end_token_id=ids("<|vision_end|>"), pad_token_id=tok.pad_token_id,
                            bos_token_id=None, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)


def tiny(conversations, tools, out_dir, seed=0, sizes=TINY, dtype=None, device=None):
    """Build the tiny model and its processor from the conversations (a
    Dataset or rows of `data.conversations`) and the tools' schema, save both
    to out_dir, and return (model, processor). Other sizes (QWEN25_VL_3B)
    build a random-weight model of that size the same way, its weights made
    in dtype on device (a 3B's float32 weights on a CPU take 15 GB)."""
    proc = processor(tokenizer(conversations, tools))
    torch.manual_seed(seed)
    with torch.device(device or "cpu"):
        model = Qwen2_5_VLForConditionalGeneration(config(proc.tokenizer, sizes))
    if dtype is not None:
        model = model.to(dtype)
    model.generation_config.pad_token_id = proc.tokenizer.pad_token_id
    model.generation_config.eos_token_id = proc.tokenizer.eos_token_id
    model.save_pretrained(out_dir)
    proc.save_pretrained(out_dir)
    return model, _ready(proc)


def _ready(proc):
    """proc with the chat template TRL parses, left padding and the parser of
    tool calls on its tokenizer."""
    proc.chat_template = CHAT_TEMPLATE
    proc.tokenizer.chat_template = CHAT_TEMPLATE
    proc.tokenizer.padding_side = "left"
    return add_response_schema(proc)


def load(model_dir, dtype=torch.float32, image_pixels=IMAGE_PIXELS):
    """(model, processor) of model_dir: what tiny() saved, or a real Qwen2.5-VL
    checkpoint (a local directory or a hub name, fetched as transformers does).
    Images are resized to image_pixels (a multiple of 28² keeps them whole
    patches): 56² = 4 image tokens a view for the tiny model, more for a real
    one (224² = 64)."""
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(model_dir, dtype=dtype)
    size = {"shortest_edge": image_pixels, "longest_edge": image_pixels}
    if is_torchvision_available():
        proc = AutoProcessor.from_pretrained(model_dir, size=size)
    else:
        proc = ImageProcessor.from_pretrained(model_dir, size=size)
    return model, _ready(proc)


def lora(model, rank=16, alpha=32, dropout=0.05):
    """model with PEFT's LoRA adapters on the language model's attention and
    MLP projections (the vision tower stays frozen), as in the seeds."""
    from peft import LoraConfig, get_peft_model

    targets = r"model\.language_model\..*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
    return get_peft_model(model, LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets,
                                            task_type="CAUSAL_LM"))


def save(model, proc, out_dir):
    """The policy, its LoRA adapters merged, and its processor to out_dir: a
    checkpoint load() reads as any other."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(out_dir)
    proc.save_pretrained(out_dir)
