"""Reference sentence embeddings for all-MiniLM-L6-v2, in plain numpy (no torch).

A float64 re-implementation of what sentence-transformers computes for this
model (modules.json: Transformer -> Pooling(mean) -> Normalize):
BERT encoder forward pass, mean pooling over the attention mask, L2 normalize.
Tokenization uses the HF `tokenizers` library on tokenizer.json, with
[CLS]/[SEP] added, truncation at max_seq_length (sentence_bert_config.json,
256) and no padding (tokenizer.json itself pads/truncates to 128: overridden).

The output is a fixture to check other implementations (e.g. a GGUF
conversion run by llama.cpp) against.

Usage:  python3 scripts/embed/reference.py MODEL_DIR OUT.json
Needs:  pip install numpy tokenizers safetensors
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A fast auburn fox leaped over a sleepy hound.",
    "ripgrep recursively searches directories for a regex pattern",
    "Fix the crash when the wallet is closed during a rescan (#887)",
    'fn main() { println!("hello"); }',
    "Überprüfen Sie die Übersetzung — naïve café",
    "",
    "Search is what the agent and the user lean on first. " * 40,
]

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):  # exact erf form, HF "gelu"
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def linear(x, W, prefix):  # torch Linear: y = x W^T + b
    return x @ W[prefix + ".weight"].T + W[prefix + ".bias"]


def encode(W, cfg, ids, mask):
    """ids, mask: int arrays [batch, seq]. Returns token states [batch, seq, hidden]."""
    eps, nh = cfg["layer_norm_eps"], cfg["num_attention_heads"]
    B, L = ids.shape
    x = (W["embeddings.word_embeddings.weight"][ids]
         + W["embeddings.position_embeddings.weight"][np.arange(L)]
         + W["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    H = x.shape[-1]
    hd = H // nh
    key_ok = mask[:, None, None, :].astype(bool)  # [B,1,1,L]
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        def heads(t):  # [B,L,H] -> [B,nh,L,hd]
            return t.reshape(B, L, nh, hd).transpose(0, 2, 1, 3)
        q = heads(linear(x, W, p + "attention.self.query"))
        k = heads(linear(x, W, p + "attention.self.key"))
        v = heads(linear(x, W, p + "attention.self.value"))
        s = np.where(key_ok, q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd), -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        ctx = (a @ v).transpose(0, 2, 1, 3).reshape(B, L, H)
        x = layer_norm(x + linear(ctx, W, p + "attention.output.dense"),
                       W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"], eps)
        h = linear(gelu(linear(x, W, p + "intermediate.dense")), W, p + "output.dense")
        x = layer_norm(x + h, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    return x


def embed(W, cfg, ids, mask):
    """Mean pooling over the mask, then L2 normalize (as sentence-transformers)."""
    x = encode(W, cfg, ids, mask)
    m = mask[..., None].astype(np.float64)
    pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


def embed_naive(W, cfg, ids):
    """Independent cross-check: one unpadded sequence, token-by-token and head-by-head loops."""
    eps, nh = cfg["layer_norm_eps"], cfg["num_attention_heads"]
    x = np.stack([W["embeddings.word_embeddings.weight"][t] + W["embeddings.position_embeddings.weight"][j]
                  + W["embeddings.token_type_embeddings.weight"][0] for j, t in enumerate(ids)])
    x = layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    hd = x.shape[1] // nh
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}.attention."
        q, k, v = (linear(x, W, p + "self." + n) for n in ("query", "key", "value"))
        ctx = np.zeros_like(x)
        for h in range(nh):
            sl = slice(h * hd, (h + 1) * hd)
            for t in range(len(ids)):
                sc = np.array([np.dot(q[t, sl], k[u, sl]) for u in range(len(ids))]) / math.sqrt(hd)
                w = np.exp(sc - sc.max())
                ctx[t, sl] = (w / w.sum()) @ v[:, sl]
        x = layer_norm(x + linear(ctx, W, p + "output.dense"), W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
        p = f"encoder.layer.{i}."
        inter = linear(x, W, p + "intermediate.dense")
        inter = np.vectorize(lambda z: 0.5 * z * (1.0 + math.erf(z / math.sqrt(2.0))))(inter)
        x = layer_norm(x + linear(inter, W, p + "output.dense"), W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    e = x.mean(0)
    return e / np.linalg.norm(e)


def main(model_dir, out_path):
    d = Path(model_dir)
    cfg = json.loads((d / "config.json").read_text())
    max_len = json.loads((d / "sentence_bert_config.json").read_text())["max_seq_length"]
    W = {k: v.astype(np.float64) for k, v in load_file(str(d / "model.safetensors")).items()}
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_len)

    out = []
    for text in SENTENCES:
        ids = np.array([tok.encode(text).ids])
        e = embed(W, cfg, ids, np.ones_like(ids))[0]
        out.append({"text": text, "token_ids": ids[0].tolist(), "embedding": [round(float(f), 6) for f in e]})

    # Sanity checks.
    E = np.array([s["embedding"] for s in out])
    print("token counts:", [len(s["token_ids"]) for s in out])
    print("norms (rounded vectors):", [round(float(n), 6) for n in np.linalg.norm(E, axis=1)])
    print("sentence 1 ids:", out[0]["token_ids"])
    assert out[0]["token_ids"] == [101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 102]
    cos = E @ E.T / np.outer(np.linalg.norm(E, axis=1), np.linalg.norm(E, axis=1))
    print(f"cos(1,2) = {cos[0, 1]:.4f}   cos(1,3) = {cos[0, 2]:.4f}")
    print("cosine matrix:\n", np.array2string(cos, precision=3, suppress_small=True))
    ref = np.array(embed(W, cfg, np.array([out[0]["token_ids"]]), np.ones((1, 12), int))[0])
    # Padding: sentence 1 batched with sentence 4 (longer), padded with [PAD]=0 and masked.
    a, b = out[0]["token_ids"], out[3]["token_ids"]
    n = max(len(a), len(b))
    ids = np.array([a + [0] * (n - len(a)), b + [0] * (n - len(b))])
    mask = np.array([[1] * len(a) + [0] * (n - len(a)), [1] * len(b) + [0] * (n - len(b))])
    pad = embed(W, cfg, ids, mask)
    print(f"padded batch vs alone, max |diff|: s1 {np.abs(pad[0] - ref).max():.2e}, "
          f"s4 {np.abs(pad[1] - E[3]).max():.2e} (s4 vs rounded)")
    naive = embed_naive(W, cfg, out[0]["token_ids"])
    print(f"naive loop implementation vs batched, sentence 1 max |diff|: {np.abs(naive - ref).max():.2e}")

    write_json(out_path, out)
    print("wrote", out_path)


def write_json(out_path, sentences):
    """One sentence object per line, so diffs stay readable."""
    head = '{"model": "all-MiniLM-L6-v2", "pooling": "mean", "normalized": true, "sentences": [\n'
    body = ",\n".join(json.dumps(s, ensure_ascii=False) for s in sentences)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(head + body + "\n]}\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
