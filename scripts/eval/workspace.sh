#!/usr/bin/env bash
# The workspace the question set is about: ripgrep at the commit the answers were verified on,
# with its history, and the bitcoin-core/gui backup beside the repository (../shared).
#
# Usage: scripts/eval/workspace.sh RIPGREP_CLONE [BURROW_HOME]
#   RIPGREP_CLONE: a clone of https://github.com/BurntSushi/ripgrep with its history; it is
#   checked out at the pinned commit (detached). BURROW_HOME defaults to target/eval-home.
# Then: target/release/burrow --home target/eval-home eval scripts/eval/questions.jsonl ...
# EMBED=1 also gives every unit a vector of the embedding model (about 10 minutes on 2 cores),
# for `eval --search meaning,hybrid` and `search --mode`.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
ripgrep="${1:?usage: $0 RIPGREP_CLONE [BURROW_HOME]}"
home="${2:-$here/target/eval-home}"
commit=3fce3b5bb0236da2df6d99672afb8a719642eca7
backup="$here/../shared/fixtures/issues/bitcoin-core-gui-backup"
burrow="${BURROW:-$here/target/release/burrow}"

git -C "$ripgrep" cat-file -e "$commit^{commit}" ||
    { echo "$ripgrep has no commit $commit: fetch ripgrep's history first" >&2; exit 1; }
git -C "$ripgrep" -c advice.detachedHead=false checkout -q "$commit"
[ -d "$backup" ] || { echo "no issues backup at $backup" >&2; exit 1; }
"$burrow" --home "$home" workspace add "$ripgrep" --name ripgrep
"$burrow" --home "$home" workspace import --repo bitcoin-core/gui "$backup"
if [ "${EMBED:-0}" = 1 ]; then
    "$burrow" --home "$home" workspace embed
fi
"$burrow" --home "$home" workspace status
