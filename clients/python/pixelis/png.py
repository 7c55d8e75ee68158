"""PNG decoding for the views `pixelis serve` sends to people (view.png,
frames/{k}). A trainer reads pixels as arrays instead (ObservationOptions
pixels), which need no decoding."""

from __future__ import annotations

import io
import struct
import zlib

try:
    from PIL import Image
except ImportError:  # the standard library decoder below works alone
    Image = None


def decode_png(data: bytes) -> tuple[int, int, int, bytes]:
    """Decode a PNG: (width, height, channels, pixels), pixels row-major
    bytes with channels bytes per pixel. Through PIL when it is installed;
    otherwise a standard-library decoder of 8-bit, non-interlaced greyscale,
    RGB and RGBA PNGs (what `pixelis serve` sends)."""
    if Image is not None:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            if im.mode not in ("L", "RGB", "RGBA"):
                im = im.convert("RGBA" if "A" in im.getbands() else "RGB")
            return im.width, im.height, len(im.getbands()), im.tobytes()
    return decode_png_stdlib(data)


def decode_png_stdlib(data: bytes) -> tuple[int, int, int, bytes]:
    """decode_png with the standard library alone."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    channels = {0: 1, 2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, colour, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 2:  # Up: the commonest filter, done bytewise in one pass
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f != 0:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                if f == 1:
                    line[i] = (line[i] + a) & 255
                elif f == 3:
                    line[i] = (line[i] + (a + b) // 2) & 255
                elif f == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    line[i] = (line[i] + pred) & 255
                else:
                    raise ValueError("bad PNG filter %d" % f)
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return width, height, channels, bytes(out)
