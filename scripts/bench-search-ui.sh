#!/usr/bin/env bash
# The Search screen measured in the real desktop app (ui/e2e/bench-search.mjs): each question of
# the question sets typed into the box over the evaluation workspace; the rank of the first
# accepted item shown and the time from asking to the results drawn, beside `burrow eval
# --search` on the same workspace (the ranks must agree). Needs `scripts/setup.sh --test` and
# the evaluation workspace with its vectors (scripts/eval/workspace.sh).
#
#   scripts/bench-search-ui.sh HOME EMBEDDING_GGUF [MODE]
#
# BENCH_PROFILE=release measures release builds of the app and the CLI (as users run them);
# the default is the debug builds the tests use.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 HOME EMBEDDING_GGUF [words|meaning|hybrid]" >&2
  exit 2
fi
export BENCH_HOME="$(realpath "$1")" BENCH_EMBEDDING="$(realpath "$2")" BENCH_MODE="${3:-hybrid}"
source "$(dirname "$0")/webview-env.sh"
profile="${BENCH_PROFILE:-debug}"
if [[ $profile == release ]]; then
  cargo build --quiet --release -p burrow-app --bin burrow-app
  cargo build --quiet --release --bin burrow
  export BURROW_APP="$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/burrow-app"
else
  cargo build --quiet --bin burrow
fi
export BURROW_CLI="$(realpath -m "${CARGO_TARGET_DIR:-target}")/$profile/burrow"
run_in_webview ui/e2e/bench-search.mjs
