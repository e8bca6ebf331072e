#!/usr/bin/env python3
"""`burrow serve` under concurrent streaming clients (issue 19), beside llama.cpp's own
llama-server serving the same model with one slot, rounds alternated (A B A B) on one machine.

For each server and round: N clients stream at once through the official `openai` client
(tests/.venv, installed by scripts/setup.sh --test), each asking for TOKENS tokens with the
end of turn ignored; reported are the tokens per second over all clients, the median and p95
time to first token, and requests that failed or came back short (dropped).

Usage: scripts/bench-serve.py [--burrow BIN] [--llama-server BIN] [--model GGUF]
                              [--clients 8] [--tokens 64] [--rounds 3] [--threads 2]
Run with tests/.venv/bin/python (it needs the openai package).
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import openai

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc):
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=5)
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"the server exited: {proc.returncode}")
        try:
            client.models.list()
            return
        except Exception:
            time.sleep(0.2)
    sys.exit(f"{url} never answered")


def start(kind, args):
    port = free_port()
    if kind == "burrow":
        home = tempfile.mkdtemp()
        cmd = [args.burrow, "--home", home, "serve", "-m", args.model, "--port", str(port),
               "--ctx", "4096", "--threads", str(args.threads)]
    else:
        cmd = [args.llama_server, "-m", args.model, "--port", str(port), "-c", "4096",
               "-np", "1", "-t", str(args.threads), "--no-webui"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    wait_ready(url, proc)
    return proc, url


def round_(url, args):
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=600)
    model = client.models.list().data[0].id
    out = {}

    def one(i):
        started = time.monotonic()
        first, pieces, finish = None, 0, None
        try:
            for chunk in client.chat.completions.create(
                model=model, max_tokens=args.tokens, temperature=0.7, seed=i, stream=True,
                stream_options={"include_usage": True}, extra_body={"ignore_eos": True},
                messages=[{"role": "user", "content": f"Write a story about the number {i}."}],
            ):
                for c in chunk.choices:
                    if c.delta.content:
                        first = first or time.monotonic()
                        pieces += 1
                    if c.finish_reason:
                        finish = c.finish_reason
                if chunk.usage:
                    out[i] = {"tokens": chunk.usage.completion_tokens}
            out.setdefault(i, {})
            out[i].update({"ttft": (first or time.monotonic()) - started, "finish": finish})
        except Exception as e:  # a dropped request is a result, not a crash of the benchmark
            out[i] = {"error": str(e)}

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    ok = [r for r in out.values() if "error" not in r and r.get("tokens") == args.tokens]
    ttfts = sorted(r["ttft"] for r in ok)
    p95 = ttfts[min(len(ttfts) - 1, int(round(0.95 * (len(ttfts) - 1))))] if ttfts else float("nan")
    return {
        "tok_s": sum(r["tokens"] for r in ok) / wall,
        "ttft_median": statistics.median(ttfts) if ttfts else float("nan"),
        "ttft_p95": p95,
        "dropped": args.clients - len(ok),
        "wall": wall,
    }


def main():
    p = argparse.ArgumentParser()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    p.add_argument("--burrow", default=os.path.join(target, "release", "burrow"))
    p.add_argument("--llama-server", default=os.path.join(target, "llama-server", "build", "bin", "llama-server"))
    p.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    kinds = ["burrow"] + (["llama-server"] if os.path.exists(args.llama_server) else [])
    results = {k: [] for k in kinds}
    for r in range(args.rounds):
        for kind in kinds:
            proc, url = start(kind, args)
            try:
                results[kind].append(round_(url, args))
            finally:
                proc.terminate()
                proc.wait()
            print(f"round {r + 1} {kind}: {results[kind][-1]}", file=sys.stderr)
    print(f"{args.clients} streaming clients x {args.tokens} tokens, {os.path.basename(args.model)}, "
          f"{args.threads} threads, {args.rounds} rounds (median):")
    print(f"{'server':<14}{'tok/s':>8}{'TTFT med s':>12}{'TTFT p95 s':>12}{'dropped':>9}")
    med = {}
    for kind in kinds:
        rs = results[kind]
        m = {k: statistics.median(x[k] for x in rs) for k in ["tok_s", "ttft_median", "ttft_p95"]}
        med[kind] = m
        print(f"{kind:<14}{m['tok_s']:>8.1f}{m['ttft_median']:>12.2f}{m['ttft_p95']:>12.2f}"
              f"{sum(x['dropped'] for x in rs):>9}")
    if len(kinds) == 2:
        print(f"burrow / llama-server throughput: {med['burrow']['tok_s'] / med['llama-server']['tok_s']:.2f}")


if __name__ == "__main__":
    main()
