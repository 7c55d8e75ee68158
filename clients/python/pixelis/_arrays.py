"""The arrays of `pixelis serve`'s answers, in either encoding.

json: each array is a member of the answer object, nested lists of numbers.
npy (Content-Type application/x-pixelis-npy): a length-prefixed frame,

    u32 little-endian H · H bytes of JSON header · the arrays

whose header is the answer object without its arrays plus "arrays": [{name,
offset, length}], each array a complete .npy file (format 1.0) at `offset`
bytes after the header. With numpy the arrays become numpy arrays that share
the body's memory (writable: the body is read into a bytearray); without it,
nested lists.
"""

import ast
import json
import struct

try:
    import numpy as np
except ImportError:  # the standard library is enough; numpy is faster
    np = None

NPY_CONTENT_TYPE = "application/x-pixelis-npy"

_DTYPES = {"<f4": ("f", 4), "<f8": ("d", 8), "|u1": ("B", 1), "|b1": ("?", 1), "<i4": ("i", 4)}
_headers: "dict[str, tuple[str, tuple[int, ...]]]" = {}  # .npy header text → (descr, shape), parsed once


def _npy_header(text):
    got = _headers.get(text)
    if got is None:
        d = ast.literal_eval(text)
        if d.get("fortran_order"):
            raise ValueError("a Fortran-order .npy array")
        got = _headers[text] = (d["descr"], tuple(d["shape"]))
    return got


def decode_npy(buf):
    """One .npy file (format 1.0) in buf (bytes-like): a numpy array, or
    nested lists without numpy."""
    mv = memoryview(buf)
    if bytes(mv[:6]) != b"\x93NUMPY" or mv[6] != 1:
        raise ValueError("not a .npy file of format 1.0")
    (hlen,) = struct.unpack_from("<H", mv, 8)
    descr, shape = _npy_header(bytes(mv[10:10 + hlen]).decode("latin-1"))
    if descr not in _DTYPES:
        raise ValueError("unsupported .npy dtype %s" % descr)
    count = 1
    for d in shape:
        count *= d
    start = 10 + hlen
    if np is not None:
        return np.frombuffer(mv, dtype=np.dtype(descr), count=count, offset=start).reshape(shape)
    code, size = _DTYPES[descr]
    flat = mv[start:start + count * size].cast(code).tolist()
    return _nest(flat, shape)


def _nest(flat, shape):
    if len(shape) <= 1:
        return flat if shape else flat[0]
    step = len(flat) // shape[0]
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def decode_frame(body):
    """An npy frame: the header object with every array added under its name."""
    mv = memoryview(body)
    (hlen,) = struct.unpack_from("<I", mv, 0)
    head = json.loads(bytes(mv[4:4 + hlen]))
    base = 4 + hlen
    for a in head.pop("arrays", []):
        head[a["name"]] = decode_npy(mv[base + a["offset"]:base + a["offset"] + a["length"]])
    return head


# Arrays an answer may carry, with their element types, so that the json
# encoding yields numpy arrays of the same types as the npy one.
ARRAY_DTYPES = {
    "obs": "float32", "final_obs": "float32", "pixels": "uint8", "final_pixels": "uint8",
    "action_mask": "bool", "reward": "float64", "reward_terms": "float64",
    "terminated": "bool", "truncated": "bool",
}


def as_arrays(answer):
    """With numpy, turn the nested lists of a json-encoded answer into numpy
    arrays of the npy encoding's types (float32 values printed shortest
    come back exact)."""
    if np is None:
        return answer
    for name, dtype in ARRAY_DTYPES.items():
        v = answer.get(name)
        if isinstance(v, list):
            answer[name] = np.asarray(v, dtype=dtype)
    return answer
