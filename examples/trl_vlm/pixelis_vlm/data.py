"""The chat data `pixelis data gen --chat DIR` writes, loaded with `datasets`.

    conversations(dir)  one CoTA trajectory a row: messages, images (SFT)
    tasks(dir)          one task a row: prompt, images, split, index (GRPO, evaluation)

Both are `datasets.Dataset`s whose `images` column holds PIL images (the
files' paths made absolute, then cast to `datasets.Image`), so they load
offline from the directory alone. A row's messages keep the file's uniform
schema (every content a list of parts, a tool call's arguments a JSON string,
absent keys None); `chat(row)` turns a row into the messages a processor's
chat template renders: the images set into their parts, the arguments parsed,
the None keys dropped.
"""

import json
import os

import datasets

CONVERSATIONS = "conversations.jsonl"
TASKS = "tasks.jsonl"


def _load(directory, name):
    path = os.path.join(os.path.abspath(directory), name)
    if not os.path.exists(path):
        raise FileNotFoundError("%s: no such file (written by `pixelis data gen --chat %s`)" % (path, directory))
    ds = datasets.load_dataset("json", data_files=path, split="train")
    root = os.path.dirname(path)
    ds = ds.map(lambda row: {"images": [os.path.join(root, p) for p in row["images"]]})
    return ds.cast_column("images", datasets.List(datasets.Image()))


def conversations(directory):
    """The CoTA trajectories of DIR as a Dataset (messages, images, id, split, index, ...)."""
    return _load(directory, CONVERSATIONS)


def tasks(directory):
    """The tasks of DIR as a Dataset (prompt, images, id, split, index, ...)."""
    return _load(directory, TASKS)


def _clean(message):
    """A message without the keys the uniform schema filled with None, its
    tool calls' arguments parsed."""
    out = {k: v for k, v in message.items() if v is not None}
    out["content"] = [{k: v for k, v in part.items() if v is not None} for part in message["content"]]
    if message.get("tool_calls"):
        out["tool_calls"] = [{"type": c["type"], "function": {"name": c["function"]["name"],
                                                              "arguments": json.loads(c["function"]["arguments"])}}
                             for c in message["tool_calls"]]
    return out


def chat(messages, images):
    """messages (a row's `messages` or `prompt`) with images set into their
    image parts, in order, as processors' chat templates and TRL take them."""
    images = list(images)
    out = [_clean(m) for m in messages]
    k = 0
    for m in out:
        for part in m["content"]:
            if part["type"] == "image":
                if k >= len(images):
                    raise ValueError("%d images for more image parts" % len(images))
                part["image"] = images[k]
                k += 1
    if k != len(images):
        raise ValueError("%d images for %d image parts" % (len(images), k))
    return out
