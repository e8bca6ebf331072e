#!/usr/bin/env bash
# Burrow's engine against llama.cpp's own llama-bench: same model, same threads, same llama.cpp
# source (the tree llama-cpp-sys-2 vendors), same CPU flags, run alternately in one script.
#
#   scripts/bench-vs-llama-bench.sh [MODEL.gguf] [THREADS] [ROUNDS]
#
# llama-cpp-sys-2 ships llama.cpp without tools/*.cpp, so llama-bench.cpp is taken from the
# llama_cpp_python sdist on PyPI (whose vendored llama.cpp carries it) and compiled, unchanged,
# against the crate's vendored tree. Everything is built under scripts/.llama-bench (ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODEL=${1:-$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf}
THREADS=${2:-$(nproc)}
ROUNDS=${3:-3}
WORK=$ROOT/scripts/.llama-bench
SDIST_VERSION=0.3.36
log() { echo "[bench] $*" >&2; }

[[ -f $MODEL ]] || { echo "model not found: $MODEL (run: python3 models/fetch.py)" >&2; exit 1; }

VENDORED=$(cargo metadata --format-version 1 2>/dev/null | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
pkg = next(p for p in meta["packages"] if p["name"] == "llama-cpp-sys-2")
print(os.path.join(os.path.dirname(pkg["manifest_path"]), "llama.cpp"))')
log "vendored llama.cpp: $VENDORED"

BENCH_BIN=$WORK/build/bin/llama-bench
if [[ ! -x $BENCH_BIN ]]; then
  mkdir -p "$WORK"
  if [[ ! -d $WORK/sdist ]]; then
    log "downloading llama_cpp_python==$SDIST_VERSION (sdist) for llama-bench.cpp"
    python3 -m pip download --no-deps --no-binary :all: -d "$WORK/dl" "llama_cpp_python==$SDIST_VERSION" >/dev/null
    mkdir -p "$WORK/sdist"
    tar xzf "$WORK/dl/llama_cpp_python-$SDIST_VERSION.tar.gz" -C "$WORK/sdist" \
      --wildcards "*/vendor/llama.cpp/tools/llama-bench/*"
  fi
  log "preparing the source tree"
  rm -rf "$WORK/src"
  cp -r "$VENDORED" "$WORK/src"
  chmod -R u+w "$WORK/src"
  cp "$WORK"/sdist/llama_cpp_python-$SDIST_VERSION/vendor/llama.cpp/tools/llama-bench/*.cpp \
     "$WORK"/sdist/llama_cpp_python-$SDIST_VERSION/vendor/llama.cpp/tools/llama-bench/CMakeLists.txt \
     "$WORK/src/tools/llama-bench/"
  # Only llama-bench: the other tools' sources are not in the crate.
  printf 'find_package(Threads REQUIRED)\nllama_add_compile_flags()\nadd_subdirectory(llama-bench)\n' \
    > "$WORK/src/tools/CMakeLists.txt"
  # The same configuration llama-cpp-sys-2's build script uses for target-cpu=x86-64-v3.
  FLAGS=""
  if [[ $(uname -m) == x86_64 ]]; then FLAGS="-march=x86-64-v3"; fi
  log "building llama-bench (Release, $FLAGS)"
  cmake -S "$WORK/src" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_SSE42=ON \
    -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF >"$WORK/cmake.log" 2>&1 || { tail -30 "$WORK/cmake.log"; exit 1; }
  cmake --build "$WORK/build" --target llama-bench -j"$(nproc)" >"$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log"; exit 1; }
fi

log "building burrow (release)"
cargo build --release --quiet
BURROW=$ROOT/target/release/burrow

OUT=$WORK/results
mkdir -p "$OUT"
rm -f "$OUT"/*.json*
for round in $(seq 1 "$ROUNDS"); do
  log "round $round/$ROUNDS: llama-bench"
  "$BENCH_BIN" -m "$MODEL" -t "$THREADS" -p 512 -n 128 -r 3 -o jsonl >>"$OUT/llama-bench.jsonl" 2>/dev/null
  log "round $round/$ROUNDS: burrow bench"
  "$BURROW" bench --model "$MODEL" --threads "$THREADS" --repetitions 3 --json >"$OUT/burrow-$round.json"
done

python3 - "$OUT" "$THREADS" <<'EOF'
import glob, json, statistics, sys
out, threads = sys.argv[1], sys.argv[2]
lb = [json.loads(l) for l in open(f"{out}/llama-bench.jsonl") if l.strip()]
pp = statistics.median(r["avg_ts"] for r in lb if r["n_prompt"] == 512 and r["n_gen"] == 0)
tg = statistics.median(r["avg_ts"] for r in lb if r["n_gen"] == 128 and r["n_prompt"] == 0)
bu = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/burrow-*.json"))]
bpp = statistics.median(b["prefill_tps"] for b in bu)
btg = statistics.median(b["decode_tps"] for b in bu)
gr = statistics.median(b["grammar_ratio"] for b in bu)
reuse = statistics.median(b["reuse_speedup"] for b in bu)
load = statistics.median(b["load_ms"] for b in bu)
print(f"threads {threads}, {len(bu)} rounds (medians)")
print(f"prefill 512:  llama-bench {pp:8.1f} tok/s   burrow {bpp:8.1f} tok/s   ratio {bpp/pp:.2f}x")
print(f"decode 128:   llama-bench {tg:8.1f} tok/s   burrow {btg:8.1f} tok/s   ratio {btg/tg:.2f}x")
print(f"grammar decode / unconstrained (burrow): {gr:.2f}x")
print(f"follow-up TTFT, full / reuse (burrow):   {reuse:.1f}x")
print(f"model load (burrow): {load:.0f} ms")
EOF
