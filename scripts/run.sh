#!/usr/bin/env bash
# The main job: set up, build, and start a streamed chat with the default model.
# Extra arguments go to `burrow chat` (e.g. scripts/run.sh "What is Rust?").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "[run] building burrow (release; the first build compiles llama.cpp and takes several minutes)" >&2
cargo build --release --quiet
exec target/release/burrow chat "$@"
