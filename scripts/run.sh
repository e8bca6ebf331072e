#!/usr/bin/env bash
# The main job: set up, build, index the default workspace (this repository: its files, history
# and docs; incremental after the first run), and start a streamed chat with the default model.
# Extra arguments go to `burrow chat` (e.g. scripts/run.sh "What is Rust?").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "[run] building burrow (release; the first build compiles llama.cpp and takes several minutes)" >&2
cargo build --release --quiet
echo "[run] indexing the default workspace: $PWD" >&2
target/release/burrow workspace add "$PWD" --name burrow >&2
exec target/release/burrow chat "$@"
