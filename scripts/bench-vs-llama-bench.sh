#!/usr/bin/env bash
# Burrow's engine against llama.cpp's own llama-bench: same model, same threads, same llama.cpp
# source (the tree llama-cpp-sys-2 vendors), same CPU flags, run alternately in one script.
#
#   scripts/bench-vs-llama-bench.sh [MODEL.gguf] [THREADS] [ROUNDS] [DEPTH_ROUNDS] [DECODE_ROUNDS]
#
# ROUNDS (default 10; 0 skips it) alternates pp512 and tg128 from an empty cache.
# DEPTH_ROUNDS (default 3; 0 skips it) alternates llama-bench's `pp48 @ d0,700,1600,2600` with
# `burrow bench --tests depth`: 48 new tokens behind a cached prefix, which is what one agent
# step costs as its history grows; Burrow with and without padding the batch to 64 rows.
# DECODE_ROUNDS (default 3; 0 skips it) alternates llama-bench's `tg64 @ d0,1000,2000,3000`
# (with its default KV cache, then q8_0 with flash attention) with `burrow bench --tests
# decode-depth` (free and under the action grammar; f16, then q8_0): decoding deep in a run.
#
# BACKEND=cuda or BACKEND=vulkan (environment) runs both on the GPU, built by
# scripts/build-gpu.sh with that backend: every layer offloaded (llama-bench -ngl 99; Burrow's
# default), the device named in the report.
#
# BURROW_BIN and LLAMA_BENCH_BIN (environment), both set, skip the builds and compare those two
# binaries: how scripts/gpu-check.sh runs it on a GPU machine that has no Rust toolchain.
#
# llama-cpp-sys-2 ships llama.cpp without tools/*.cpp, so llama-bench.cpp is taken from the
# llama_cpp_python sdist on PyPI (whose vendored llama.cpp carries it) and compiled, unchanged,
# against the crate's vendored tree. Everything is built under scripts/.llama-bench (ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODEL=${1:-$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf}
THREADS=${2:-$(nproc)}
ROUNDS=${3:-10}
DEPTH_ROUNDS=${4:-3}
DECODE_ROUNDS=${5:-3}
BACKEND=${BACKEND:-cpu}
WORK=$ROOT/scripts/.llama-bench
log() { echo "[bench] $*" >&2; }
# shellcheck source=scripts/llama-cmake.sh
source "$ROOT/scripts/llama-cmake.sh"

[[ -f $MODEL ]] || { echo "model not found: $MODEL (run: python3 models/fetch.py)" >&2; exit 1; }

if [[ -n ${BURROW_BIN:-} && -n ${LLAMA_BENCH_BIN:-} ]]; then
  BACKEND=prebuilt
else
  VENDORED=$(llama_vendored_tree)
  log "vendored llama.cpp: $VENDORED"
fi

case $BACKEND in
  prebuilt)
    BURROW=$BURROW_BIN
    BENCH_BIN=$LLAMA_BENCH_BIN
    # llama-bench offloads nothing unless asked; Burrow offloads every layer that fits.
    GPU_ARGS=(-ngl 99)
    ;;
  cpu)
    BENCH_BIN=$(llama_bench_build "$WORK" "$VENDORED" "$WORK/build" -DLLAMA_BUILD_SERVER=OFF)
    log "building burrow (release)"
    cargo build --release --quiet
    BURROW=$ROOT/target/release/burrow
    GPU_ARGS=()
    ;;
  cuda|vulkan)
    read -r BURROW BENCH_BIN < <(scripts/build-gpu.sh "$BACKEND")
    # Every layer on the GPU: llama-bench's -ngl 99; Burrow's default offloads them all.
    GPU_ARGS=(-ngl 99)
    ;;
  *) echo "BACKEND must be cpu, cuda or vulkan, not $BACKEND" >&2; exit 2 ;;
esac
log "backend $BACKEND: $BURROW beside $BENCH_BIN"

OUT=$WORK/results
mkdir -p "$OUT"
rm -f "$OUT"/*.jsonl
# The machines are noisy (the same run varies by +-20%), so each round runs one short
# measurement of each side back to back, and the report uses medians over rounds and the median
# of the per-round ratios (paired, so slow drift cancels).
compact() { python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))'; }
for round in $(seq 1 "$ROUNDS"); do
  log "round $round/$ROUNDS"
  "$BENCH_BIN" -m "$MODEL" -t "$THREADS" "${GPU_ARGS[@]}" -p 512 -n 0 -r 1 -o jsonl 2>/dev/null >>"$OUT/lb-prefill.jsonl"
  "$BURROW" bench --model "$MODEL" --threads "$THREADS" --tests prefill --repetitions 1 --json \
    | compact >>"$OUT/bu-prefill.jsonl"
  "$BENCH_BIN" -m "$MODEL" -t "$THREADS" "${GPU_ARGS[@]}" -p 0 -n 128 -r 1 -o jsonl 2>/dev/null >>"$OUT/lb-decode.jsonl"
  "$BURROW" bench --model "$MODEL" --threads "$THREADS" --tests decode --repetitions 1 --json \
    | compact >>"$OUT/bu-decode.jsonl"
done
for round in $(seq 1 "$DEPTH_ROUNDS"); do
  log "depth round $round/$DEPTH_ROUNDS"
  "$BENCH_BIN" -m "$MODEL" -t "$THREADS" "${GPU_ARGS[@]}" -p 48 -n 0 -d 0,700,1600,2600 -r 1 -o jsonl 2>/dev/null >>"$OUT/lb-depth.jsonl"
  "$BURROW" bench --model "$MODEL" --threads "$THREADS" --ctx 4096 --tests depth --repetitions 1 --json \
    | compact >>"$OUT/bu-depth.jsonl"
done
for round in $(seq 1 "$DECODE_ROUNDS"); do
  log "decode-at-depth round $round/$DECODE_ROUNDS"
  "$BENCH_BIN" -m "$MODEL" -t "$THREADS" "${GPU_ARGS[@]}" -p 0 -n 64 -d 0,1000,2000,3000 -r 1 -o jsonl 2>/dev/null >>"$OUT/lb-tgdepth.jsonl"
  "$BURROW" bench --model "$MODEL" --threads "$THREADS" --ctx 4096 --tests decode-depth --repetitions 1 --json \
    | compact >>"$OUT/bu-tgdepth.jsonl"
  "$BENCH_BIN" -m "$MODEL" -t "$THREADS" "${GPU_ARGS[@]}" -p 0 -n 64 -d 0,1000,2000,3000 -r 1 -fa 1 -ctk q8_0 -ctv q8_0 -o jsonl 2>/dev/null >>"$OUT/lb-tgdepth-q8.jsonl"
  "$BURROW" bench --model "$MODEL" --threads "$THREADS" --ctx 4096 --kv-cache q8_0 --tests decode-depth --repetitions 1 --json \
    | compact >>"$OUT/bu-tgdepth-q8.jsonl"
done
log "burrow: grammar and KV reuse"
"$BURROW" bench --model "$MODEL" --threads "$THREADS" --tests grammar,reuse --repetitions "$ROUNDS" --json \
  | compact >"$OUT/bu-other.jsonl"

python3 - "$OUT" "$THREADS" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
out, threads, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
has = lambda name: os.path.exists(f"{out}/{name}.jsonl")
rows = lambda name: [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()] if has(name) else []
other = rows("bu-other")[0]
med = statistics.median
def line(name, lb, bu):
    paired = med(b / l for l, b in zip(lb, bu))
    print(f"{name}  llama-bench {med(lb):7.1f} tok/s   burrow {med(bu):7.1f} tok/s   "
          f"ratio of medians {med(bu)/med(lb):.2f}x   median paired ratio {paired:.2f}x")
print(f"threads {threads}, {rounds} alternating rounds")
device = next((r for name in ("lb-decode", "lb-tgdepth") for r in rows(name)), {})
print(f"llama-bench's backends: {device.get('backends', '?')}; GPU: {device.get('gpu_info') or 'none'}; "
      f"CPU: {device.get('cpu_info', '?')}; layers offloaded: {device.get('n_gpu_layers', '?')}")
loaded = next((r for name in ("bu-decode", "bu-tgdepth") for r in rows(name)), {})
if "layers" in loaded:
    gpus = "; ".join(f"{g['name']}: {(g['memory_total'] - g['memory_free']) >> 20} MiB in use of "
                     f"{g['memory_total'] >> 20} MiB" for g in loaded.get("gpus", []))
    print(f"burrow: {loaded['gpu_layers']} of {loaded['layers']} layers offloaded"
          + (f"; {gpus}" if gpus else ""))
if rows("lb-prefill"):
    line("prefill 512:", [r["avg_ts"] for r in rows("lb-prefill")], [r["prefill_tps"] for r in rows("bu-prefill")])
    line("decode 128: ", [r["avg_ts"] for r in rows("lb-decode")], [r["decode_tps"] for r in rows("bu-decode")])
print(f"grammar decode / unconstrained (burrow): {other['grammar_ratio']:.2f}x "
      f"({other['grammar_decode_tps']:.1f} vs {other['grammar_baseline_tps']:.1f} tok/s)")
print(f"  the same schema as GBNF on llama.cpp's grammar sampler: {other['gbnf_ratio']:.2f}x")
print(f"follow-up TTFT, full / reuse (burrow):   {other['reuse_speedup']:.1f}x "
      f"({other['ttft_full_ms']:.0f} ms vs {other['ttft_reuse_ms']:.0f} ms)")
print(f"model load (burrow): {other['load_ms']:.0f} ms; metadata read: {other['metadata_ms']:.2f} ms")
if rows("bu-depth"):
    lb = {}
    for r in rows("lb-depth"):
        lb.setdefault(r["n_depth"], []).append(r["avg_ts"])
    bu, pad = {}, {}
    for r in rows("bu-depth"):
        for p in r["depth"]:
            bu.setdefault(p["depth"], []).append(p["unpadded_prefill_tps"])
            pad.setdefault(p["depth"], []).append(p["unpadded_ttft_ms"] / p["ttft_ms"])
    print("48 new tokens behind a cached prefix (prefill tok/s, medians; time relative to depth 700):")
    for d in sorted(lb):
        if d not in bu:
            continue
        print(f"  depth {d:>4}: llama-bench {med(lb[d]):6.1f} ({med(lb[700])/med(lb[d]):.2f}x)   "
              f"burrow unpadded {med(bu[d]):6.1f} ({med(bu[700])/med(bu[d]):.2f}x), "
              f"median paired ratio {med(b / l for l, b in zip(lb[d], bu[d])):.2f}x   "
              f"padded to 64: first token {med(pad[d]):.2f}x faster")
if rows("bu-tgdepth"):
    def by_depth(name, key=None):
        got = {}
        for r in rows(name):
            if key is None:
                got.setdefault(r["n_depth"], []).append(r["avg_ts"])
            else:
                for p in r["decode_depth"]:
                    got.setdefault(p["depth"], []).append(p[key])
        return got
    lb, lb8 = by_depth("lb-tgdepth"), by_depth("lb-tgdepth-q8")
    free, gram = by_depth("bu-tgdepth", "free_tps"), by_depth("bu-tgdepth", "grammar_tps")
    free8 = by_depth("bu-tgdepth-q8", "free_tps")
    fa = sorted({str(r.get("flash_attn", r.get("flash_attn_type", "?"))) for r in rows("lb-tgdepth")})
    print(f"decode 64 tokens behind a cached prefix (tok/s, medians; llama-bench flash_attn {','.join(fa)}):")
    print(f"  {'depth':>5} | {'llama-bench':>11} {'burrow free':>11} {'ratio':>6} | {'burrow grammar':>14} | "
          f"{'llama-bench q8_0':>16} {'burrow q8_0':>11} {'ratio':>6}")
    for d in sorted(lb):
        if d not in free:
            continue
        r = med(b / l for l, b in zip(lb[d], free[d]))
        r8 = med(b / l for l, b in zip(lb8.get(d, [1]), free8.get(d, [0])))
        print(f"  {d:>5} | {med(lb[d]):11.1f} {med(free[d]):11.1f} {r:6.2f} | {med(gram[d]):14.1f} | "
              f"{med(lb8.get(d, [0])):16.1f} {med(free8.get(d, [0])):11.1f} {r8:6.2f}")
EOF
