#!/usr/bin/env bash
# Decode speed in the desktop app against the CLI (issue 20): the same agent task run in the
# real app under Xvfb (streaming to the window) and by `burrow ask`, alternated, each step's
# decode tok/s compared at the same step; with the engine's threads waiting by spinning, by
# sleeping, and one thread fewer (ui/e2e/bench-decode.mjs). Both from the same debug build (the
# engine and every dependency are optimized in it). Needs `scripts/setup.sh --test` first.
#
#   BENCH_ROUNDS=2 BENCH_STEPS=6 BENCH_VARIANTS=app,cli scripts/bench-app-decode.sh
#
# Prints a table and writes ui/test-results/bench/decode.json.
set -euo pipefail
source "$(dirname "$0")/webview-env.sh"
cargo build --quiet --bin burrow
export BURROW_CLI="$(realpath -m "${CARGO_TARGET_DIR:-target}")/debug/burrow"
run_in_webview ui/e2e/bench-decode.mjs
