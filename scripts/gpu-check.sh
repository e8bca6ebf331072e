#!/usr/bin/env bash
# Burrow's engine on a GPU beside llama.cpp's own llama-bench, on a machine that has an NVIDIA GPU
# and CUDA's compiler but no Rust toolchain and no network (the GPU machines lent to this
# project take 64 MiB of files). Two halves:
#
#   scripts/gpu-check.sh prepare DIR   # here: what the GPU machine needs, into DIR
#   scripts/gpu-check.sh run DIR OUT   # there: build, measure, write reports into OUT
#                                      # (device.txt, bench-*.txt, fit.txt, logs.tar.gz)
#
# .gpu and .gpu-build are ignored by git: the device tool is told to carry .gpu, and a warm
# machine keeps the ignored .gpu-build between calls, so a second run there skips the 200 s
# build (on 11-28, with .gpu-build not ignored, the tool removed it and the rerun rebuilt).
#
# prepare builds Burrow with llama.cpp as shared libraries (--features llama-cpp-2/dynamic-link,
# in $CARGO_TARGET_DIR/dynamic or $DYNAMIC_TARGET_DIR), packs the vendored llama.cpp tree with llama-bench.cpp (as
# bench-vs-llama-bench.sh prepares it, unbuilt), and takes the header of each model in models/
# (scripts/gguf-synth.py skeleton: SmolLM2's weights alone are 94 MiB).
#
# run builds that llama.cpp tree there with CUDA (shared libraries, and llama-bench against them),
# so Burrow runs on the same llama.cpp source it was compiled against, with the GPU backend; fills
# each model with made-up weights of the real shapes and types (the same work per token); then
#  1. scripts/bench-vs-llama-bench.sh for each model: prefill 512 and decode 128 alternated
#     round by round, then decode 64 behind 0-3,000 cached tokens, f16 and q8_0 KV cache;
#  2. layers fitted to free memory: with all but a little of the GPU's memory taken by another
#     process, Burrow loads a model with as many layers as fit (and says so) where an offload of
#     every layer would not fit; llama-bench -ngl 99 beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { echo "[gpu-check $(date +%T)] $*" >&2; }
# shellcheck source=scripts/llama-cmake.sh
source "$ROOT/scripts/llama-cmake.sh"

prepare() {
  local dir=$1 target=${DYNAMIC_TARGET_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}/dynamic}
  mkdir -p "$dir"
  log "burrow with llama.cpp as shared libraries, in $target"
  CARGO_TARGET_DIR=$target cargo build --release --quiet --features llama-cpp-2/dynamic-link --bin burrow
  strip -o "$dir/burrow" "$target/release/burrow"
  # The vendored tree with llama-bench.cpp added; it is built there, with CUDA.
  llama_bench_tree "$ROOT/scripts/.llama-bench" "$(llama_vendored_tree)"
  # Only the CPU and CUDA backends travel: the rest of ggml/src is 15 MiB the build never reads.
  local skip=()
  for b in et metal hexagon sycl vulkan opencl cann musa hip rpc webgpu zdnn zendnn virtgpu openvino blas; do
    skip+=("--exclude=./ggml/src/ggml-$b")
  done
  tar czf "$dir/llama.tar.gz" -C "$ROOT/scripts/.llama-bench/src" "${skip[@]}" --exclude=./gguf-py \
    --exclude=./docs --exclude=./models --exclude=./tests --exclude=./examples --exclude=./pocs .
  for m in "$ROOT"/models/*.gguf; do
    python3 "$ROOT/scripts/gguf-synth.py" skeleton "$m" "$dir/$(basename "$m" .gguf).skel"
  done
  du -sh "$dir"
}

run() {
  local dir=$1 out=$2 work=$ROOT/.gpu-build
  mkdir -p "$out" "$work"
  # The device tool brings back at most 8 files: the reports come as they are, the logs in one
  # archive, written however the run ends.
  LOGS=$work/logs
  rm -rf "$LOGS"
  mkdir -p "$LOGS"
  trap 'tar -czf "$OUT_DIR/logs.tar.gz" -C "$LOGS/.." logs 2>/dev/null || true' EXIT
  OUT_DIR=$out
  # BACKEND=cpu rehearses the whole run on a machine without a GPU (no fit check there).
  # Flash attention's kernels only for the KV cache types the bench runs (f16, q8_0): the others
  # would double the build, which the lent minutes pay for.
  local backend=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}"
    "-DGGML_CUDA_FA_QUANTS=${CUDA_FA_QUANTS:-f16-f16;q8_0-q8_0}")
  if [[ ${BACKEND:-cuda} == cpu ]]; then
    backend=()
  else
    nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv | tee "$out/device.txt"
    if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
      export PATH=/usr/local/cuda/bin:$PATH
    fi
    nvcc --version | tail -1 | tee -a "$out/device.txt"
  fi
  # A warm machine keeps the build: only the first run pays for it.
  if [[ ! -x $work/build/bin/llama-bench ]]; then
    rm -rf "$work/src" && mkdir -p "$work/src" && tar xzf "$dir/llama.tar.gz" -C "$work/src"
    local gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    log "configuring llama.cpp as shared libraries: ${backend[*]:-CPU only}"
    llama_cmake_configure "$work/src" "$work/build" "$LOGS/cmake.log" "${gen[@]}" \
      -DBUILD_SHARED_LIBS=ON "${backend[@]}" -DLLAMA_BUILD_SERVER=OFF
    log "building (llama.cpp, its CUDA kernels, llama-bench)"
    local t0=$SECONDS
    cmake --build "$work/build" --target llama-bench -j"$(nproc)" >"$LOGS/build.log" 2>&1 \
      || { tail -40 "$LOGS/build.log" >&2; return 1; }
    log "built in $((SECONDS - t0)) s"
  fi
  LD_LIBRARY_PATH=$(find "$work/build" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)
  export LD_LIBRARY_PATH
  ldd "$dir/burrow" | grep -E 'llama|ggml' >&2 || true
  if ldd "$dir/burrow" | grep -q 'not found'; then
    log "burrow needs libraries this build did not make"; ldd "$dir/burrow" >&2; return 1
  fi
  export BURROW_HOME=$work/home
  local threads=${THREADS:-8}
  for skel in "$dir"/*.skel; do
    local name
    name=$(basename "$skel" .skel)
    [[ -f $work/$name.gguf ]] || python3 "$ROOT/scripts/gguf-synth.py" fill "$skel" "$work/$name.gguf"
  done
  # The default model first, then the fit, then the rest while the time lasts (DEADLINE
  # seconds from the start: the machine is lent by the minute).
  local models=(${MODELS:-SmolLM2-135M-Instruct.Q4_1 qwen2.5-coder-0.5b-instruct-q4_k_m})
  bench_one "$dir" "$out" "$work" "$threads" "${models[0]}"
  [[ ${BACKEND:-cuda} == cpu ]] || fit_check "$dir" "$out" "$work" "$threads"
  for name in "${models[@]:1}"; do
    if (( SECONDS > ${DEADLINE:-480} )); then
      log "no time left for $name ($SECONDS s gone)"; continue
    fi
    bench_one "$dir" "$out" "$work" "$threads" "$name"
  done
}

bench_one() {
  local dir=$1 out=$2 work=$3 threads=$4 name=$5
  log "bench: $name"
  BURROW_BIN=$dir/burrow LLAMA_BENCH_BIN=$work/build/bin/llama-bench \
    scripts/bench-vs-llama-bench.sh "$work/$name.gguf" "$threads" "${ROUNDS:-5}" 0 "${DECODE_ROUNDS:-2}" \
    2>"$LOGS/bench-$name.log" | tee "$out/bench-$name.txt" \
    || { log "bench of $name failed:"; tail -5 "$LOGS/bench-$name.log" >&2; }
}

# Another process holds all but LEAVE GiB of the GPU's memory while each side loads the model
# with no layer count given (Burrow) or every layer asked for (llama-bench -ngl 99).
fit_check() {
  local dir=$1 out=$2 work=$3 threads=$4 model
  model=$work/${FIT_MODEL:-qwen2.5-coder-0.5b-instruct-q4_k_m}.gguf
  for leave in ${FIT_LEAVE:-1.6 1.2 0.5}; do
    rm -f "$work/held"
    python3 - "$leave" "$work/held" <<'EOF' &
import sys, time, torch
free, total = torch.cuda.mem_get_info()
held = torch.empty(max(0, free - int(float(sys.argv[1]) * 2**30)), dtype=torch.uint8, device="cuda")
open(sys.argv[2], "w").write(f"{torch.cuda.mem_get_info()[0] >> 20}\n")
time.sleep(300)
EOF
    local holder=$!
    for _ in $(seq 120); do
      [[ -s $work/held ]] && break
      kill -0 "$holder" 2>/dev/null || break
      sleep 0.5
    done
    if [[ ! -s $work/held ]]; then
      log "fit: the process meant to hold the GPU's memory did not (is torch there?); no fit check"
      kill "$holder" 2>/dev/null || true
      return 0
    fi
    log "fit: $(cat "$work/held" 2>/dev/null || echo '?') MiB left free by another process"
    {
      echo "## another process leaves $(cat "$work/held" 2>/dev/null || echo '?') MiB of the GPU free ($leave GiB asked)"
      echo "### burrow bench, no --gpu-layers"
      "$dir/burrow" bench --model "$model" --threads "$threads" --tests prefill,decode --repetitions 1 2>&1 \
        | grep -v '^\s*$' || echo "(burrow exited with an error)"
      echo "### llama-bench -ngl 99"
      "$work/build/bin/llama-bench" -m "$model" -t "$threads" -ngl 99 -p 512 -n 128 -r 1 2>&1 | tail -6 \
        || echo "(llama-bench exited with an error)"
    } | tee -a "$out/fit.txt"
    kill "$holder" 2>/dev/null || true
    wait "$holder" 2>/dev/null || true
  done
}

case ${1:-} in
  prepare) prepare "${2:?usage: scripts/gpu-check.sh prepare DIR}" ;;
  run) run "${2:?usage: scripts/gpu-check.sh run DIR OUT}" "${3:?usage: scripts/gpu-check.sh run DIR OUT}" ;;
  *) echo "usage: scripts/gpu-check.sh prepare DIR | run DIR OUT" >&2; exit 2 ;;
esac
