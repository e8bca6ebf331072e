#!/usr/bin/env bash
# The UI benchmark in the real webview (ui/e2e/bench.mjs, page side in ui/src/bench.ts): a token
# stream at model speed (120 tok/s, SmolLM2 on 2 cores) and at 1000 tok/s into step 501 of a
# 500-step trace, and scrolling that trace; each against its naive variant in the same page.
# Reports frame intervals, tokens dropped or reordered, and time for a token to reach the
# screen. Needs `scripts/setup.sh --test` first. BENCH_REPEAT=N for more rounds.
set -euo pipefail
source "$(dirname "$0")/webview-env.sh"
run_in_webview ui/e2e/bench.mjs
