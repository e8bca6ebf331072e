#!/usr/bin/env python3
"""A model of a real GGUF's exact shape with made-up weights, for benchmarks on machines the
real weights cannot reach (the GPU machine takes 64 MiB of files; SmolLM2 alone is 94 MiB).

    gguf-synth.py skeleton MODEL.gguf OUT.skel   # the header only: metadata, vocabulary, tensor infos
    gguf-synth.py fill OUT.skel OUT.gguf [SEED]  # the header, then weights made up to fit it

The filled model has the real model's architecture, tensor shapes and quantization types,
vocabulary and chat template, so the engine does the same work per token as with the real one;
its weights are random numbers in a trained model's range (norms 1, the rest about 0.02), with
each quantized block's scales set so that no value is NaN or infinite. What it writes is
nonsense: it is for measuring speed, never answers.
"""
import math
import mmap
import struct
import sys

# ggml type: (elements per block, bytes per block, [(offset of an f16 scale in the block, value)])
TYPES = {
    0: (1, 4, None),  # F32
    1: (1, 2, None),  # F16
    30: (1, 2, None),  # BF16
    2: (32, 18, [(0, 0.0045)]),  # Q4_0: d * (q - 8)
    3: (32, 20, [(0, 0.005), (2, -0.0375)]),  # Q4_1: d * q + m
    6: (32, 22, [(0, 0.0022)]),  # Q5_0
    7: (32, 24, [(0, 0.0025), (2, -0.04)]),  # Q5_1
    8: (32, 34, [(0, 2.7e-4)]),  # Q8_0: d * int8
    10: (256, 84, [(80, 0.0025), (82, 0.00375)]),  # Q2_K: d * sc * q - dmin * m
    11: (256, 110, [(108, 5e-4)]),  # Q3_K
    12: (256, 144, [(0, 1e-4), (2, 7.5e-4)]),  # Q4_K
    13: (256, 176, [(0, 5e-5), (2, 7.75e-4)]),  # Q5_K
    14: (256, 210, [(208, 1.5e-5)]),  # Q6_K: d * int8 scale * (q - 32)
}

# GGUF metadata value types: fixed sizes (8 = string, 9 = array are read apart).
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return s.decode("utf-8", "replace")

    def value(self, kind):
        if kind in SCALAR:
            fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[SCALAR[kind]]
            return self.take(fmt)
        if kind == 8:
            return self.string()
        if kind == 9:
            inner, n = self.take("I"), self.take("Q")
            if inner in SCALAR:
                self.pos += SCALAR[inner] * n
                return None
            for _ in range(n):
                self.value(inner)
            return None
        raise ValueError(f"unknown GGUF value type {kind} at byte {self.pos}")


def parse(data):
    """The tensors (name, shape, type, offset), the alignment and where the data starts."""
    r = Reader(data)
    if r.take("4s") != b"GGUF":
        raise ValueError("not a GGUF file")
    version = r.take("I")
    if version < 2:
        raise ValueError(f"GGUF version {version} is too old")
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    alignment = 32
    for _ in range(n_kv):
        key, kind = r.string(), r.take("I")
        v = r.value(kind)
        if key == "general.alignment":
            alignment = v
    tensors = []
    for _ in range(n_tensors):
        name, n_dims = r.string(), r.take("I")
        dims = [r.take("Q") for _ in range(n_dims)]
        kind, offset = r.take("I"), r.take("Q")
        tensors.append((name, dims, kind, offset))
    start = (r.pos + alignment - 1) // alignment * alignment
    return tensors, alignment, start


def nbytes(dims, kind):
    if kind not in TYPES:
        raise ValueError(f"ggml type {kind} is not one this script makes weights for")
    per, size, _ = TYPES[kind]
    n = math.prod(dims)
    if n % per:
        raise ValueError(f"{n} elements are not whole blocks of {per}")
    return n // per * size


def weights(name, dims, kind, rng):
    import numpy as np

    n = math.prod(dims)
    if kind in (0, 1, 30):
        # Norm weights are 1 in a trained model: random ones would scale activations at random.
        values = np.ones(n, np.float32) if "norm" in name else rng.normal(0, 0.02, n).astype(np.float32)
        if kind == 0:
            return values.tobytes()
        if kind == 1:
            return values.astype(np.float16).tobytes()
        return (values.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    per, size, scales = TYPES[kind]
    blocks = np.frombuffer(rng.bytes(n // per * size), np.uint8).reshape(-1, size).copy()
    for offset, value in scales:
        blocks[:, offset : offset + 2] = np.frombuffer(np.float16(value).tobytes(), np.uint8)
    return blocks.tobytes()


def skeleton(src, out):
    # The header only: numpy is not needed here (the machine that fills has it).
    with open(src, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    tensors, _, start = parse(data)
    for name, dims, kind, _ in tensors:
        nbytes(dims, kind)  # refuse, here, a type the fill could not make
    with open(out, "wb") as f:
        f.write(bytes(data[:start]))
    print(f"{out}: {start} bytes of header, {len(tensors)} tensors")


def fill(skel, out, seed):
    header = open(skel, "rb").read()
    tensors, alignment, start = parse(header)
    if start != len(header):
        raise ValueError(f"{skel}: {len(header)} bytes, but its header ends at {start}")
    import numpy as np

    rng = np.random.default_rng(seed)
    with open(out, "wb") as f:
        f.write(header)
        for name, dims, kind, offset in sorted(tensors, key=lambda t: t[3]):
            pos = f.tell() - start
            if offset < pos:
                raise ValueError(f"tensor {name} overlaps the one before it")
            f.write(b"\0" * (offset - pos))
            f.write(weights(name, dims, kind, rng))
        f.write(b"\0" * ((-(f.tell() - start)) % alignment))
        size = f.tell()
    print(f"{out}: {len(tensors)} tensors, {size >> 20} MiB")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "skeleton":
        skeleton(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "fill":
        fill(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    else:
        sys.exit(__doc__)
