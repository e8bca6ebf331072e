#!/usr/bin/env bash
# Builds llama.cpp's own llama-server from the llama.cpp sources on PyPI (the llama_cpp_python
# sdist vendors the whole tree), CPU only, with the CPU flags Burrow's engine is built with, so
# that the remote backend is tested against the real server and not a mock. With llguidance
# (LLAMA_LLGUIDANCE), as the engine is: the server then takes the grammars Burrow's engine
# enforces, unchanged. llama.cpp's CMake would clone llguidance from GitHub; its C library is
# built here from the crates.io release the engine links (scripts/llguidance-c).
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
# The llguidance release scripts/llguidance-c pins (its lock file): a new one builds anew.
LLG_VERSION=$(sed -n '/^name = "llguidance"$/{n;s/^version = "\(.*\)"$/\1/p}' "$ROOT/scripts/llguidance-c/Cargo.lock")
[[ -n $LLG_VERSION ]] || { echo "scripts/llguidance-c/Cargo.lock names no llguidance" >&2; exit 1; }
DONE=$WORK/build/.done-$SDIST_VERSION-llguidance-$LLG_VERSION
log() { echo "[llama-server] $*" >&2; }
# shellcheck source=scripts/llama-cmake.sh
source "$ROOT/scripts/llama-cmake.sh"

if [[ -x $BIN && -f $DONE ]]; then
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
log "building llguidance's C library ($LLG_VERSION, from crates.io): about a minute"
cargo build --release --locked --quiet --manifest-path "$ROOT/scripts/llguidance-c/Cargo.toml" \
  --target-dir "$WORK/llguidance" >&2
LLG=$WORK/llguidance/release
cp "$(dirname "$(cargo metadata --format-version 1 --locked \
  --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" \
  --manifest-path "$ROOT/scripts/llguidance-c/Cargo.toml" | python3 -c '
import json, sys
meta = json.load(sys.stdin)
print(next(p["manifest_path"] for p in meta["packages"] if p["name"] == "llguidance"))')")/llguidance.h" "$LLG/"
# llama.cpp's common/CMakeLists.txt fetches and builds llguidance itself: pointed at this one.
python3 - "$SRC/common/CMakeLists.txt" "$LLG" <<'PY'
import re, sys
path, llg = sys.argv[1], sys.argv[2]
text = open(path).read()
fetch = re.compile(r"ExternalProject_Add\(llguidance_ext\n.*?\n    \)\n", re.S)
if "add_custom_target(llguidance_ext)" not in text:
    if not fetch.search(text) or "set(LLGUIDANCE_PATH ${LLGUIDANCE_SRC}/target/release)" not in text:
        sys.exit(f"{path}: llguidance's block is not as expected; cannot point it at {llg}")
    text = fetch.sub("add_custom_target(llguidance_ext)\n", text)
text = re.sub(r"set\(LLGUIDANCE_PATH [^)]*\)", lambda _: f'set(LLGUIDANCE_PATH "{llg}")', text)
open(path, "w").write(text)
PY
log "building llama-server (Release, CPU, the engine's flags, llguidance): about 5 minutes on 2 cores, once"
llama_cmake_configure "$SRC" "$WORK/build" "$WORK/cmake.log" \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_LLGUIDANCE=ON
cmake --build "$WORK/build" --target llama-server -j"$(nproc)" >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log" >&2; exit 1; }
touch "$DONE"
echo "$BIN"
