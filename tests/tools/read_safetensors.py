#!/usr/bin/env python3
"""An independent safetensors reader (Python 3 standard library only).

Parses FILE as the safetensors format is published
(https://github.com/huggingface/safetensors, "Format"): an 8-byte
little-endian unsigned header length N, N bytes of UTF-8 JSON, then the
byte buffer. Checks what the format requires (header a JSON object, known
dtypes, data_offsets inside the buffer, tensors contiguous without gap or
overlap and covering the whole buffer, byte size = product(shape) x dtype
size, __metadata__ string to string), decodes every tensor with struct, and
compares it with EXPECTED: a JSON file
{"tensors": {name: {"dtype": "F64", "shape": [...], "hex": "..."}},
 "metadata": {key: value}}.
Prints "ok: N tensors, M elements" and exits 0, or prints the first problem
and exits 1. Used by tests/kernel/export.tests.cpp.
"""
import json
import math
import struct
import sys

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
         "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}
FORMATS = {"F64": "d", "F32": "f", "I64": "q", "I32": "i", "U64": "Q", "U32": "I", "U8": "B"}


def fail(msg):
    print("safetensors check failed: " + msg)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        fail("usage: read_safetensors.py FILE EXPECTED.json")
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    with open(sys.argv[2], "r", encoding="utf-8") as f:
        expected = json.load(f)
    if len(raw) < 8:
        fail("shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        fail("header length %d runs past the end of the file (%d bytes)" % (n, len(raw)))
    header_text = raw[8:8 + n].decode("utf-8")
    if not header_text.startswith("{"):
        fail("the header does not start with '{'")
    header = json.loads(header_text)
    if not isinstance(header, dict):
        fail("the header is not a JSON object")
    buffer = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        fail("__metadata__ is not a map of strings to strings")
    spans = []
    tensors = {}
    elements = 0
    for name, info in header.items():
        if set(info) != {"dtype", "shape", "data_offsets"}:
            fail("tensor %r has keys %r" % (name, sorted(info)))
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in SIZES:
            fail("tensor %r: unknown dtype %r" % (name, dtype))
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            fail("tensor %r: bad shape %r" % (name, shape))
        count = math.prod(shape)
        if not (0 <= begin <= end <= len(buffer)):
            fail("tensor %r: data_offsets %r outside the %d-byte buffer" % (name, [begin, end], len(buffer)))
        if end - begin != count * SIZES[dtype]:
            fail("tensor %r: %d bytes for %s%r" % (name, end - begin, dtype, shape))
        spans.append((begin, end, name))
        data = buffer[begin:end]
        values = struct.unpack("<%d%s" % (count, FORMATS[dtype]), data) if dtype in FORMATS else None
        tensors[name] = (dtype, shape, data, values)
        elements += count
    spans.sort()
    at = 0
    for begin, end, name in spans:
        if begin != at:
            fail("tensor %r starts at %d, expected %d (gap or overlap)" % (name, begin, at))
        at = end
    if at != len(buffer):
        fail("the tensors cover %d of the %d buffer bytes" % (at, len(buffer)))

    want = expected["tensors"]
    if sorted(want) != sorted(tensors):
        fail("tensor names %r, expected %r" % (sorted(tensors), sorted(want)))
    for name, w in want.items():
        dtype, shape, data, values = tensors[name]
        if dtype != w["dtype"] or shape != w["shape"]:
            fail("tensor %r is %s%r, expected %s%r" % (name, dtype, shape, w["dtype"], w["shape"]))
        if data.hex() != w["hex"]:
            fail("tensor %r: bytes differ" % name)
        if values is not None:
            again = struct.pack("<%d%s" % (len(values), FORMATS[dtype]), *values)
            if again != data:
                fail("tensor %r: values do not round-trip" % name)
    for key, value in expected.get("metadata", {}).items():
        if metadata.get(key) != value:
            fail("__metadata__[%r] is %r, expected %r" % (key, metadata.get(key), value))
    print("ok: %d tensors, %d elements" % (len(tensors), elements))


if __name__ == "__main__":
    main()
