#!/usr/bin/env bash
# The end-to-end tests: builds the UI and the app (debug), then drives the real app under Xvfb
# through tauri-driver and WebKitWebDriver (ui/e2e/run.mjs). Screenshots and results.json land
# in ui/test-results/e2e/. Needs `scripts/setup.sh --test` first.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -x ui/.node/bin/node ]]; then export PATH="$PWD/ui/.node/bin:$PATH"; fi
export PATH="$HOME/.cargo/bin:$PATH"
(cd ui && npm run --silent build)
cargo build --quiet -p burrow-app
rm -rf ui/test-results/e2e
# Software rendering: Xvfb has no GPU, and WebKit's DMA-BUF renderer fails without one.
export WEBKIT_DISABLE_DMABUF_RENDERER=1 LIBGL_ALWAYS_SOFTWARE=1
BURROW_APP="$PWD/target/debug/burrow-app" \
  xvfb-run --auto-servernum --server-args="-screen 0 1280x900x24" node ui/e2e/run.mjs
