#!/usr/bin/env bash
# The main job: set up, build the UI and the desktop app (release), and start the app with the
# default model and, as the default workspace, this repository (indexed on the first start,
# with progress shown in the window; later starts leave it as it is, and Re-index updates it).
# Extra arguments go to burrow-app (see `target/release/burrow-app --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [[ -x ui/.node/bin/node ]]; then export PATH="$PWD/ui/.node/bin:$PATH"; fi
echo "[run] building the UI and Burrow (release; the first build compiles llama.cpp and WebKit bindings and takes several minutes)" >&2
(cd ui && npm run --silent build)
cargo build --release --quiet -p burrow-app -p burrow
exec target/release/burrow-app --workspace "$PWD" "$@"
