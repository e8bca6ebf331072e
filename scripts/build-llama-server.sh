#!/usr/bin/env bash
# Builds llama.cpp's own llama-server from the llama.cpp sources on PyPI (the llama_cpp_python
# sdist vendors the whole tree), CPU only, with the CPU flags Burrow's engine is built with, so
# that the remote backend is tested against the real server and not a mock.
#
#   scripts/build-llama-server.sh            prints the path of the binary (builds it once)
#
# The build lives under $LLAMA_SERVER_DIR (default: $CARGO_TARGET_DIR/llama-server, or
# target/llama-server), so clones that share a target directory share it; a cold build takes
# about 5 minutes on 2 cores. No web UI is embedded (it would be downloaded).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SDIST_VERSION=0.3.36
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=${LLAMA_SERVER_DIR:-$TARGET_DIR/llama-server}
BIN=$WORK/build/bin/llama-server
log() { echo "[llama-server] $*" >&2; }
# shellcheck source=scripts/llama-cmake.sh
source "$ROOT/scripts/llama-cmake.sh"

if [[ -x $BIN && -f $WORK/build/.done-$SDIST_VERSION ]]; then
  echo "$BIN"
  exit 0
fi
mkdir -p "$WORK"
SRC=$WORK/sdist/llama_cpp_python-$SDIST_VERSION/vendor/llama.cpp
if [[ ! -f $SRC/tools/server/CMakeLists.txt ]]; then
  log "downloading llama_cpp_python==$SDIST_VERSION (sdist) for llama.cpp's sources"
  rm -rf "$WORK/dl" "$WORK/sdist"
  python3 -m pip download --no-deps --no-binary :all: -d "$WORK/dl" "llama_cpp_python==$SDIST_VERSION" >/dev/null
  mkdir -p "$WORK/sdist"
  tar xzf "$WORK/dl/llama_cpp_python-$SDIST_VERSION.tar.gz" -C "$WORK/sdist" \
    --wildcards "*/vendor/llama.cpp/*"
  rm -rf "$WORK/dl"
fi
log "building llama-server (Release, CPU, the engine's flags): about 5 minutes on 2 cores, once"
llama_cmake_configure "$SRC" "$WORK/build" "$WORK/cmake.log" \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
cmake --build "$WORK/build" --target llama-server -j"$(nproc)" >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log" >&2; exit 1; }
touch "$WORK/build/.done-$SDIST_VERSION"
echo "$BIN"
