#!/usr/bin/env python3
"""What the remote backend costs an agent step (issue 19): the same agent run over the same
workspace, in-process and through llama.cpp's own llama-server serving the same model file with
the same threads and context, alternated round by round (A B A B) on one machine.

First the same requests through both (`burrow bench --served` in-process, `burrow bench
--backend` through the server: a chat turn of ~400 prompt tokens evaluated whole, 128 tokens
decoded freely, a step under a JSON schema), which is what the HTTP layer costs. Then, for
each model step of the agent run, it prints the time to first token as the user waits for it (the prompt's
preparation included), the step's model time, the tokens it generated, and the ratio remote /
in-process of each (the median of the paired ratios), then the same for the run's model time
in all. The remote side pays for HTTP, JSON and SSE, and llama-server's own scheduling; both
keep the prompt's prefix warm between steps (Burrow's KV cache; llama-server's cache_prompt).
The agent runs with no repetition penalty (--repeat-penalty; llama-server's also counts the
prompt's last tokens, the engine's does not). Even so the two may write other steps: the two
llama.cpp builds differ in version, and near ties go either way; the per-step ratios then
compare different work, and the same requests are the HTTP layer's cost.

Usage: scripts/bench-remote.py [--burrow BIN] [--llama-server BIN] [--model GGUF]
                               [--steps 4] [--rounds 3] [--threads 2] [--ctx 8192]
                               [--repeat-penalty 1] [--requests-only]
Standard library only. Builds nothing: run `cargo build --release --bin burrow` and
`scripts/build-llama-server.sh` first (the defaults are where they put them).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"llama-server exited: {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("llama-server did not become ready")


def bench(burrow, env, args, agent=True):
    out = subprocess.run([burrow, "bench", *(["--agent"] if agent else []), "--json", *args],
                         env=env, capture_output=True, text=True)
    if out.returncode not in (0,):
        sys.exit(f"burrow bench failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def model_steps(report):
    return [s for s in report["steps"] if s.get("origin", {}).get("by") not in ("search", "open")]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--burrow", default=os.path.join(ROOT, "target/release/burrow"))
    p.add_argument("--llama-server", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")),
        "llama-server/build/bin/llama-server"))
    p.add_argument("--model", default=os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=8192)
    p.add_argument("--requests-only", action="store_true",
                   help="only the same requests both ways, not the agent runs")
    p.add_argument("--raw", help="write every run's report here (JSON)")
    p.add_argument("--repeat-penalty", type=float, default=1.0,
                   help="the agent's (default 1: llama-server's penalty also counts the prompt's "
                        "last tokens, the engine's does not, so with one the two write other steps)")
    a = p.parse_args()

    home = tempfile.mkdtemp(prefix="burrow-bench-remote-")
    env = dict(os.environ, BURROW_HOME=home)
    env.pop("BURROW_LOG", None)
    subprocess.run([a.burrow, "workspace", "add", ROOT, "--json"], env=env, check=True,
                   capture_output=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [a.llama_server, "-m", a.model, "-c", str(a.ctx), "-t", str(a.threads), "-np", "1",
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(url, server)
        penalty = ["--repeat-penalty", str(a.repeat_penalty)]
        here_args = ["--steps", str(a.steps), "-m", a.model, "--ctx", str(a.ctx),
                     "--threads", str(a.threads), *penalty]
        # The server scripts/build-llama-server.sh builds has llguidance: grammars go to it as
        # the engine compiles them.
        there_args = ["--steps", str(a.steps), "--backend", url, "--backend-llguidance", *penalty]
        rounds = []
        for r in range(0 if a.requests_only else a.rounds):
            here = bench(a.burrow, env, here_args)
            there = bench(a.burrow, env, there_args)
            rounds.append((here, there))
            print(f"round {r + 1}: in-process {here['wall_ms'] / 1000:.1f} s, "
                  f"llama-server {there['wall_ms'] / 1000:.1f} s", file=sys.stderr)
        served = []
        for r in range(a.rounds):
            here = bench(a.burrow, env, ["--served", "-m", a.model, "--ctx", str(a.ctx),
                                         "--threads", str(a.threads), "--repetitions", "1"], agent=False)
            there = bench(a.burrow, env, ["--backend", url, "--backend-llguidance",
                                          "--repetitions", "1"], agent=False)
            served.append((here, there))
    finally:
        server.terminate()
        server.wait()

    print(f"the same requests, in-process and through llama-server ({a.rounds} rounds, medians; "
          f"ratio = remote / in-process, median of pairs)")
    for key, label, unit in [("ttft_ms", "chat turn, first token", "ms"),
                             ("prefill_tokens_per_s", "prefill", "tok/s"),
                             ("decode_tokens_per_s", "decode", "tok/s"),
                             ("grammar_decode_tokens_per_s", "decode under a JSON schema", "tok/s")]:
        h = [x[key] for x, _ in served]
        t = [y[key] for _, y in served]
        print(f"  {label:<28} in-process {med(h):8.1f} {unit:<5}  llama-server {med(t):8.1f} {unit:<5}  "
              f"ratio {med([y / x for x, y in zip(h, t) if x]):.3f}")
    print(f"  ({served[0][0]['prompt_tokens']} prompt tokens, {served[0][0]['generated_tokens']} "
          f"generated; grammar enforced by the server: {not served[0][1]['grammar_unconstrained']})")
    print()
    if a.requests_only:
        return
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump([{"in_process": h, "llama_server": t} for h, t in rounds], f, indent=1)
    n = min(len(model_steps(h)) for h, _ in rounds)
    n = min(n, min(len(model_steps(t)) for _, t in rounds))
    print(f"model {os.path.basename(a.model)}, {a.threads} threads, context {a.ctx}, "
          f"{a.rounds} rounds (medians; ratio = remote / in-process, median of pairs)")
    print(f"{'step':>4} {'prompt':>7} {'gen':>4} | {'TTFT here':>9} {'there':>7} {'ratio':>6} | "
          f"{'tok/s here':>10} {'there':>6} {'ratio':>6} | {'cached here':>11} {'there':>6} | {'same length':>11}")
    for i in range(n):
        hs = [model_steps(h)[i] for h, _ in rounds]
        ts = [model_steps(t)[i] for _, t in rounds]
        ttft_h = [s["first_token_ms"] or s["ttft_ms"] for s in hs]
        ttft_t = [s["first_token_ms"] or s["ttft_ms"] for s in ts]
        # Decode speed compares even where the two runs wrote different steps.
        step_h = [(s["generated_tokens"] - 1) / max(s["model_ms"] - s["ttft_ms"], 1) * 1000 for s in hs]
        step_t = [(s["generated_tokens"] - 1) / max(s["model_ms"] - s["ttft_ms"], 1) * 1000 for s in ts]
        same = sum(x["generated_tokens"] == y["generated_tokens"] for x, y in zip(hs, ts))
        print(f"{hs[0]['index']:>4} {hs[0]['prompt_tokens']:>7} {hs[0]['generated_tokens']:>4} | "
              f"{med(ttft_h):>7.0f}ms {med(ttft_t):>5.0f}ms "
              f"{med([y / x for x, y in zip(ttft_h, ttft_t)]):>6.2f} | "
              f"{med(step_h):>10.1f} {med(step_t):>6.1f} "
              f"{med([y / x for x, y in zip(step_h, step_t)]):>6.2f} | "
              f"{med([s['cached_tokens'] for s in hs]):>11.0f} {med([s['cached_tokens'] for s in ts]):>6.0f} | "
              f"{same}/{len(hs)} rounds")
    run_h = [sum(s["setup_ms"] + s["model_ms"] for s in model_steps(h)[:n]) for h, _ in rounds]
    run_t = [sum(s["setup_ms"] + s["model_ms"] for s in model_steps(t)[:n]) for _, t in rounds]
    print(f"model steps in all: in-process {med(run_h):.0f} ms, llama-server {med(run_t):.0f} ms, "
          f"ratio {med([y / x for x, y in zip(run_h, run_t)]):.3f}")


if __name__ == "__main__":
    main()
