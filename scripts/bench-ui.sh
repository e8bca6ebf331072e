#!/usr/bin/env bash
# The UI benchmark in the real webview (ui/e2e/bench.mjs, page side in ui/src/bench.ts): a token
# stream at model speed (120 tok/s, SmolLM2 on 2 cores) and at 1000 tok/s into step 501 of a
# 500-step trace, and scrolling that trace; each against its naive variant in the same page.
# Reports frame intervals, tokens dropped or reordered, and time for a token to reach the
# screen. Needs `scripts/setup.sh --test` first. BENCH_REPEAT=N for more rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -x ui/.node/bin/node ]]; then export PATH="$PWD/ui/.node/bin:$PATH"; fi
export PATH="$HOME/.cargo/bin:$PATH"
(cd ui && npm run --silent build)
cargo build --quiet -p burrow-app
export WEBKIT_DISABLE_DMABUF_RENDERER=1 LIBGL_ALWAYS_SOFTWARE=1
BURROW_APP="$PWD/target/debug/burrow-app" \
  xvfb-run --auto-servernum --server-args="-screen 0 1280x900x24" node ui/e2e/bench.mjs
