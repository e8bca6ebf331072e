#!/usr/bin/env bash
# Builds Burrow with a GPU backend of llama.cpp (cuda or vulkan), and llama.cpp's llama-bench
# with the same backend from the same vendored tree, for scripts/bench-vs-llama-bench.sh
# (BACKEND=cuda|vulkan) on a machine with that GPU. Prints the two binaries' paths.
#
#   scripts/build-gpu.sh cuda|vulkan
#
# Needs, beside the CPU build's packages: cuda, NVIDIA's CUDA toolkit (nvcc on PATH or in
# /usr/local/cuda/bin); vulkan, apt `libvulkan-dev glslc spirv-headers` with Vulkan headers
# 1.3.272 or newer (Debian 12 has 1.3.239: use LunarG's SDK there). Burrow's build goes to
# $CARGO_TARGET_DIR/gpu-BACKEND (default target/gpu-BACKEND), llama-bench's to
# scripts/.llama-bench/build-BACKEND, so the CPU builds are left as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BACKEND=${1:-}
log() { echo "[build-gpu] $*" >&2; }
# shellcheck source=scripts/llama-cmake.sh
source "$ROOT/scripts/llama-cmake.sh"

case $BACKEND in
  cuda)
    if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
      export PATH=/usr/local/cuda/bin:$PATH
    fi
    command -v nvcc >/dev/null || {
      log "no nvcc: install NVIDIA's CUDA toolkit (https://developer.nvidia.com/cuda-downloads)"
      exit 1
    }
    CMAKE_FLAG=-DGGML_CUDA=ON
    ;;
  vulkan)
    # ggml-vulkan compiles its shaders with glslc and finds SPIR-V's headers through CMake.
    command -v glslc >/dev/null || { log "no glslc: apt-get install glslc"; exit 1; }
    if [[ -z ${VULKAN_SDK:-} ]]; then
      pkg-config --exists vulkan || { log "no Vulkan headers: apt-get install libvulkan-dev"; exit 1; }
      # llama.cpp uses VK_EXT_layer_settings (headers 1.3.272, late 2023); Debian 12 has
      # 1.3.239, and the build fails deep in ggml-vulkan.cpp without it.
      pkg-config --atleast-version=1.3.272 vulkan || {
        log "Vulkan headers $(pkg-config --modversion vulkan) are older than 1.3.272, which llama.cpp needs:"
        log "install LunarG's Vulkan SDK (https://vulkan.lunarg.com; it sets VULKAN_SDK) or a newer libvulkan-dev"
        exit 1
      }
    fi
    [[ -f /usr/share/cmake/SPIRV-Headers/SPIRV-HeadersConfig.cmake ]] \
      || { log "no SPIR-V headers: apt-get install spirv-headers"; exit 1; }
    CMAKE_FLAG=-DGGML_VULKAN=ON
    ;;
  *)
    echo "usage: scripts/build-gpu.sh cuda|vulkan" >&2
    exit 2
    ;;
esac

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}/gpu-$BACKEND
log "burrow with --features $BACKEND in $TARGET (a cold build takes a while: llama.cpp and its kernels)"
CARGO_TARGET_DIR=$TARGET cargo build --release --quiet --features "$BACKEND" --bin burrow
BENCH=$(llama_bench_build "$ROOT/scripts/.llama-bench" "$(llama_vendored_tree)" \
  "$ROOT/scripts/.llama-bench/build-$BACKEND" -DLLAMA_BUILD_SERVER=OFF "$CMAKE_FLAG")
echo "$TARGET/release/burrow $BENCH"
