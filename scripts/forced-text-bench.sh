#!/usr/bin/env bash
# The answer step of three lookups, timed with two builds of burrow alternated: one that decodes
# the text a grammar forces a token at a time, one that evaluates it in batches. Prints each
# run's answer step as a JSON line, then the medians and the median of the paired ratios.
#
#   scripts/forced-text-bench.sh BURROW_WITHOUT BURROW_WITH HOME [MODEL] [ROUNDS]
#
# HOME: a Burrow home with the evaluation workspace (scripts/eval/workspace.sh).
set -euo pipefail
without=${1:?usage: $0 BURROW_WITHOUT BURROW_WITH HOME [MODEL] [ROUNDS]}
with=${2:?usage: $0 BURROW_WITHOUT BURROW_WITH HOME [MODEL] [ROUNDS]}
home=${3:?usage: $0 BURROW_WITHOUT BURROW_WITH HOME [MODEL] [ROUNDS]}
model=${4:-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
rounds=${5:-3}
tasks=(
  "In the node console I ran createwallet, later hit the up arrow and Enter, and it created a wallet whose name is just an ellipsis. Which issue reports this?"
  "Which commit added the FAQ entry on search and replace?"
  "Which pull request made the GUI exit with an error when the command line has unrecognized arguments?"
)
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for round in $(seq "$rounds"); do
  for t in "${!tasks[@]}"; do
    for build in without with; do
      bin=$without
      [ "$build" = with ] && bin=$with
      "$bin" --home "$home" bench --agent --steps 3 --threads 2 -m "$model" \
          --task "${tasks[$t]}" --json 2>/dev/null |
        python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["steps"][-1]
prefill = s["ttft_ms"] - s["setup_ms"]
print(json.dumps({"build": sys.argv[1], "round": int(sys.argv[2]), "task": int(sys.argv[3]),
    "status": d["status"], "generated": s["generated_tokens"],
    "decode_ms": round(s["model_ms"] - prefill, 1), "step_ms": round(s["ttft_ms"] + s["model_ms"] - prefill, 1)}))
' "$build" "$round" "$t" | tee -a "$lines"
    done
  done
done
python3 - "$lines" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["build"], r["round"], r["task"]): r for r in rows}
print("| | without | with | with / without (median of pairs) |")
print("|---|---|---|---|")
for key, label in (("decode_ms", "answer step's decode, ms"), ("step_ms", "answer step, ms"), ("generated", "tokens generated")):
    w = [r[key] for r in rows if r["build"] == "without"]
    v = [r[key] for r in rows if r["build"] == "with"]
    pairs = [by[("with", r, t)][key] / by[("without", r, t)][key]
             for (b, r, t) in by if b == "without" and ("with", r, t) in by and by[("without", r, t)][key]]
    print(f"| {label} | {statistics.median(w):.0f} | {statistics.median(v):.0f} | {statistics.median(pairs):.2f} |")
PY
