#!/usr/bin/env python3
"""How long Burrow takes to read and validate a large model's GGUF header.

Writes a synthetic GGUF shaped like a 7B model with a 152k-token vocabulary (Qwen2-style: token
strings, merges, token types) and ~5 GB of Q4_K weights as a sparse hole, then runs
`burrow models info --json` on it several times and reports the header read time Burrow measured
(`metadata_ms`). Usage: scripts/bench-metadata.py [path/to/burrow] [runs]
"""
import json, os, struct, subprocess, sys, tempfile, statistics

BURROW = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "target", "release", "burrow")
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 7


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def arr_str(items):
    return struct.pack("<IQ", 8, len(items)) + b"".join(s(i) for i in items)


def write(path):
    n_vocab, n_layer, n_embd, n_ff = 151936, 28, 3584, 18944
    meta = [
        kv("general.architecture", 8, s("qwen2")),
        kv("general.name", 8, s("Synthetic 7B")),
        kv("general.file_type", 4, struct.pack("<I", 15)),
        kv("qwen2.context_length", 4, struct.pack("<I", 32768)),
        kv("qwen2.block_count", 4, struct.pack("<I", n_layer)),
        kv("qwen2.embedding_length", 4, struct.pack("<I", n_embd)),
        kv("qwen2.attention.head_count", 4, struct.pack("<I", 28)),
        kv("qwen2.attention.head_count_kv", 4, struct.pack("<I", 4)),
        kv("tokenizer.ggml.model", 8, s("gpt2")),
        kv("tokenizer.ggml.tokens", 9, arr_str([f"tok{i}" for i in range(n_vocab)])),
        kv("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, n_vocab) + struct.pack(f"<{n_vocab}i", *([1] * n_vocab))),
        kv("tokenizer.ggml.merges", 9, arr_str([f"t{i} k{i}" for i in range(151387)])),
        kv("tokenizer.chat_template", 8, s("{% for m in messages %}{{ m.content }}{% endfor %}")),
    ]
    tensors = [("token_embd.weight", [n_embd, n_vocab]), ("output.weight", [n_embd, n_vocab])]
    for l in range(n_layer):
        tensors += [(f"blk.{l}.attn_q.weight", [n_embd, n_embd]), (f"blk.{l}.attn_k.weight", [n_embd, 512]),
                    (f"blk.{l}.attn_v.weight", [n_embd, 512]), (f"blk.{l}.attn_output.weight", [n_embd, n_embd]),
                    (f"blk.{l}.ffn_up.weight", [n_embd, n_ff]), (f"blk.{l}.ffn_down.weight", [n_ff, n_embd]),
                    (f"blk.{l}.ffn_gate.weight", [n_embd, n_ff])]
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)))
    for m in meta:
        out += m
    offset = 0
    for name, dims in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", 13, offset)  # Q5_K: 256 elements in 176 bytes
        n = 1
        for d in dims:
            n *= d
        offset += (n // 256 * 176 + 31) // 32 * 32
    out += b"\0" * ((32 - len(out) % 32) % 32)
    with open(path, "wb") as f:
        f.write(out)
        f.truncate(len(out) + offset)
    return len(out), len(out) + offset


with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "synthetic-7b.gguf")
    header, total = write(path)
    times = []
    for _ in range(RUNS):
        r = subprocess.run([BURROW, "models", "info", path, "--json"], capture_output=True, text=True, check=True)
        times.append(json.loads(r.stdout)["metadata_ms"])
    print(f"synthetic model: {total / 2**30:.1f} GiB file, {header / 2**20:.1f} MiB header "
          f"(152k-token vocabulary and merges)")
    print(f"header read and validated: median {statistics.median(times):.1f} ms, "
          f"max {max(times):.1f} ms over {RUNS} runs")
