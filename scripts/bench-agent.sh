#!/usr/bin/env bash
# The agent benchmark: a run of exactly STEPS steps (the final answer is held back until the
# last) with the default model over a workspace of this repository and, when the shared
# fixtures are beside it, the bitcoin-core/gui issue backup. For each protocol it prints each
# step's prompt tokens, KV-cache reuse, time to first token, and where the wall time went
# (model, tools, setup, the loop), against the targets: reuse >= 90% from step 2, TTFT of the
# last step <= 1.5x step 2, everything but model and tools < 2% of wall.
#
#   scripts/bench-agent.sh [STEPS] [PROTOCOL...]
#
# The model gets its trained context (CTX, 8192 for SmolLM2) so that twelve steps fit without
# summarizing; the step after a summary evaluates its prompt anew, by design.
# Everything is written to a temporary BURROW_HOME that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STEPS=${1:-12}
shift || true
PROTOCOLS=("$@")
[[ ${#PROTOCOLS[@]} -gt 0 ]] || PROTOCOLS=(json-typed json-action json-finish text tool-calls)
CTX=${CTX:-8192}
BACKUP=$ROOT/../shared/fixtures/issues/bitcoin-core-gui-backup
log() { echo "[bench] $*" >&2; }

[[ -f models/SmolLM2-135M-Instruct.Q4_1.gguf ]] || python3 models/fetch.py
log "building (release)"
cargo build --release --quiet --bin burrow
BURROW=$ROOT/target/release/burrow

HOME_DIR=$(mktemp -d)
trap 'rm -rf "$HOME_DIR"' EXIT
export BURROW_HOME=$HOME_DIR
log "indexing $ROOT"
"$BURROW" workspace add "$ROOT" --json >/dev/null
if [[ -d $BACKUP ]]; then
  log "importing $BACKUP"
  "$BURROW" workspace import "$BACKUP" --repo bitcoin-core/gui --json >/dev/null
fi

for p in "${PROTOCOLS[@]}"; do
  log "$p: $STEPS steps"
  "$BURROW" bench --agent --steps "$STEPS" --protocol "$p" --ctx "$CTX"
  echo
done
