#!/usr/bin/env bash
# Every test: set up (packages, toolchain check, Node and the UI's packages, the default model,
# the end-to-end tools), then formatting, lints, the UI's type check, build and unit tests, the
# Rust unit and integration tests (which run the real default model and the shell's commands
# through Tauri's IPC), and the end-to-end tests in the real webview under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
# Node from PyPI, when setup.sh had to install it.
if [[ -x ui/.node/bin/node ]]; then export PATH="$PWD/ui/.node/bin:$PATH"; fi
export PATH="$HOME/.cargo/bin:$PATH"
say() { echo "[test] $*" >&2; }
say "UI: type check and build (tsc, vite build), then unit tests (vitest)"
(cd ui && npm run --silent build && npm test --silent)
say "formatting (cargo fmt --check)"
cargo fmt --all -- --check
say "lints (cargo clippy; the first build compiles llama.cpp and takes several minutes)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
say "unit and integration tests"
cargo test --workspace --quiet
say "end to end: the app in WebKitGTK under Xvfb, driven by tauri-driver"
scripts/e2e.sh
say "all tests passed"
