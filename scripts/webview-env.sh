# Sourced by the scripts that drive the real app in WebKitGTK (e2e.sh, bench-ui.sh): builds the UI
# and the debug app, and sets up the environment for the webview under Xvfb. Then call
# `run_in_webview SCRIPT.mjs`. Needs `scripts/setup.sh --test` first.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ -x ui/.node/bin/node ]]; then export PATH="$PWD/ui/.node/bin:$PATH"; fi
export PATH="$HOME/.cargo/bin:$PATH"
(cd ui && npm run --silent build)
cargo build --quiet -p burrow-app
# Software rendering: Xvfb has no GPU, and WebKit's DMA-BUF renderer fails without one.
export WEBKIT_DISABLE_DMABUF_RENDERER=1 LIBGL_ALWAYS_SOFTWARE=1
# Where cargo put it: the target directory may be outside the clone (CI shares one).
export BURROW_APP="$(realpath -m "${CARGO_TARGET_DIR:-target}")/debug/burrow-app"

run_in_webview() {
  xvfb-run --auto-servernum --server-args="-screen 0 1280x900x24" node "$@"
}
