#!/usr/bin/env bash
# The workspace benchmark: index a real repository with its full history, re-index it unchanged,
# import the bitcoin-core/gui issue backup, then search latency over both, exact-string code
# search against `rg` on the same tree (alternating, same patterns), and a generated
# 100,000-issue import (bounded memory, search latency, database size).
#
#   scripts/bench-workspace.sh REPO_PATH [SCALE_N]
#
# REPO_PATH: a git clone with full history, e.g. BurntSushi/ripgrep. Everything is written to a
# temporary BURROW_HOME that is removed at the end; the user's own workspace is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPO=${1:?usage: scripts/bench-workspace.sh REPO_PATH [SCALE_N]}
REPO=$(cd "$REPO" && pwd)
SCALE_N=${2:-100000}
BACKUP=$ROOT/../shared/fixtures/issues/bitcoin-core-gui-backup
log() { echo "[bench] $*" >&2; }

command -v rg >/dev/null || { echo "rg not found: install ripgrep (apt install ripgrep)" >&2; exit 1; }
[[ -d $REPO/.git ]] || { echo "$REPO is not a git clone" >&2; exit 1; }
[[ -d $BACKUP ]] || { echo "issue fixture not found: $BACKUP" >&2; exit 1; }

log "building (release)"
cargo build --release --quiet --bin burrow --example workspace_bench
BURROW=$ROOT/target/release/burrow
BENCH=$ROOT/target/release/examples/workspace_bench

HOME_DIR=$(mktemp -d)
trap 'rm -rf "$HOME_DIR"' EXIT
export BURROW_HOME=$HOME_DIR
NAME=$(basename "$REPO")

# Wall time and peak RSS of one command, via GNU time when present.
timed() {
  local out=$HOME_DIR/time.txt
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%e %M' -o "$out" "$@"
    read -r SECS RSS_KB <"$out"
  else
    local t0; t0=$(date +%s.%N)
    "$@"
    SECS=$(echo "$(date +%s.%N) - $t0" | bc); RSS_KB=0
  fi
}

log "full index of $REPO"
timed "$BURROW" workspace add "$REPO" --json >"$HOME_DIR/add.json"
ADD_SECS=$SECS ADD_RSS=$RSS_KB
COMMITS_TOTAL=$(git -C "$REPO" rev-list --all | wc -l)

log "no-change re-index (5 runs)"
REINDEX=()
for _ in 1 2 3 4 5; do
  timed "$BURROW" workspace reindex "$NAME" --json >"$HOME_DIR/reindex.json"
  REINDEX+=("$SECS")
done

log "importing $BACKUP"
timed "$BURROW" workspace import "$BACKUP" --repo bitcoin-core/gui --json >"$HOME_DIR/import.json"
IMPORT_SECS=$SECS

log "search latency and grep vs rg"
"$BENCH" search "$HOME_DIR" "$NAME" "$REPO" >"$HOME_DIR/search.json"

log "generated imports: $((SCALE_N / 10)) and $SCALE_N issues with the fixture's word distribution, $SCALE_N with 40 words only"
mkdir -p "$HOME_DIR/scale-small" "$HOME_DIR/scale-large" "$HOME_DIR/scale-flat"
"$BENCH" scale "$HOME_DIR/scale-small" $((SCALE_N / 10)) "$BACKUP" corpus >"$HOME_DIR/scale-small.json"
"$BENCH" scale "$HOME_DIR/scale-large" "$SCALE_N" "$BACKUP" corpus >"$HOME_DIR/scale-large.json"
rm -rf "$HOME_DIR/scale-small" "$HOME_DIR/scale-large"
"$BENCH" scale "$HOME_DIR/scale-flat" "$SCALE_N" "$BACKUP" flat >"$HOME_DIR/scale-flat.json"

python3 - "$HOME_DIR" "$ADD_SECS" "$ADD_RSS" "$COMMITS_TOTAL" "$IMPORT_SECS" "${REINDEX[@]}" <<'EOF'
import json, statistics, sys
home, add_secs, add_rss, commits_total, import_secs, *reindex = sys.argv[1:]
load = lambda n: json.load(open(f"{home}/{n}.json"))
add, imp, search = load("add"), load("import"), load("search")
small, large, flat = load("scale-small"), load("scale-large"), load("scale-flat")
secs = float(add_secs)
files = add["files_indexed"]
print(f"full index:   {secs:.2f} s wall ({add['elapsed_ms']/1000:.2f} s in the indexer), "
      f"{files} files ({files/secs:.0f} files/s), {add['commits_added']} commits "
      f"({add['commits_added']/secs:.0f} commits/s; git rev-list --all: {commits_total}), "
      f"{add['refs']} refs, skipped {add['files_skipped']}, peak RSS {int(add_rss)/1024:.1f} MB")
r = sorted(float(x) for x in reindex)
print(f"re-index, no change: median {statistics.median(r)*1000:.0f} ms wall per process "
      f"(min {r[0]*1000:.0f}, max {r[-1]*1000:.0f}; includes process start)")
print(f"import bitcoin-core/gui backup: {float(import_secs):.2f} s, {imp['issues']} issues, "
      f"{imp['pull_requests']} PRs, {imp['comments']} comments")
print(f"search ({search['queries']} queries over both): p50 {search['search_p50_ms']:.2f} ms, "
      f"p95 {search['search_p95_ms']:.2f} ms, max {search['search_max_ms']:.2f} ms")
for g in search["grep"]:
    print(f"  exact {g['pattern']!r:16} burrow {g['burrow_ms']:7.2f} ms ({g['burrow_matches']} hits)"
          f"   rg {g['rg_ms']:7.2f} ms ({g['rg_matches']} lines)   ratio {g['ratio']:.2f}")
print(f"  search_code exact vs rg: median ratio {search['grep_median_ratio_vs_rg']:.2f} (burrow/rg; "
      f"rg's times include starting it: an rg run over nothing takes {search['rg_empty_run_ms']:.2f} ms)")
for s in (small, large, flat):
    print(f"scale {s['issues']} issues ({s['vocabulary']}, {s['distinct_words']} words): import "
          f"{s['import_ms']/1000:.1f} s ({s['issues_per_s']:.0f}/s, {s['import_file_mb']:.0f} MB of JSON), "
          f"peak RSS {s['peak_rss_mb']:.0f} MB, search p50 {s['search_p50_ms']:.2f} ms "
          f"p95 {s['search_p95_ms']:.2f} ms (unfiltered {s['p95_unfiltered_ms']:.1f}, by state "
          f"{s['p95_by_state_ms']:.1f}, by label {s['p95_by_label_ms']:.1f}), "
          f"{s['pages_with_a_note']} of {s['queries']} pages noted a partial ranking, "
          f"database {s['db_mb']:.0f} MB; hybrid with {s['vectors']} vectors (a hashing "
          f"stand-in for the model, filled in {s['vector_fill_ms']/1000:.1f} s): p50 "
          f"{s['hybrid_p50_ms']:.2f} ms p95 {s['hybrid_p95_ms']:.2f} ms")
print(f"peak RSS {large['issues']} vs {small['issues']} issues: "
      f"{large['peak_rss_mb']/small['peak_rss_mb']:.2f}x for {large['issues']/small['issues']:.0f}x the data")
EOF
