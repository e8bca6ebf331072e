#!/usr/bin/env python3
# Would the model's own probability of "yes" pick a better item among the first search's leading
# matches than search's first place? For each run of a `burrow eval --out RUNS` file: step 0's
# items (the first search, first K distinct), each opened with `burrow tool` as Burrow opens a
# match (1,200 characters), then asked of llama-server (the same GGUF) with the agent's check
# question ("Does this item answer the question? Reply yes or no."), reading the first token's
# probabilities. Prints one JSON line per question, then the count right for the first match,
# for the highest log P(yes) - log P(no), and for that score less LAMBDA per rank.
#
#   scripts/eval/check-yes.py HOME RUNS.jsonl MODEL.gguf [K]
#
# The prompt is written in ChatML (Qwen's and SmolLM2's template), as Burrow renders it.
import atexit, json, math, os, subprocess, sys, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOME, RUNS, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
K = int(sys.argv[4]) if len(sys.argv) > 4 else 5
PORT = 8089
B = [os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release/burrow"), "--home", HOME]
SERVER = subprocess.check_output([os.path.join(ROOT, "scripts/build-llama-server.sh")], text=True).strip().splitlines()[-1]
server = subprocess.Popen([SERVER, "-m", MODEL, "--port", str(PORT), "-t", str(os.cpu_count()), "-c", "4096", "-np", "1"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
atexit.register(server.terminate)
for _ in range(120):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health"); break
    except Exception:
        time.sleep(1)
qs = {json.loads(l)["id"]: json.loads(l) for l in open(os.path.join(ROOT, "scripts/eval/questions.jsonl"))}

def run_json(rid):
    return json.loads(subprocess.check_output(B + ["runs", "show", str(rid), "--json"]))

def key(it):
    return (it["kind"], it.get("repo"), it.get("number"), it.get("path"), (it.get("hash") or "")[:10])

def open_item(it):
    """The text Burrow's opening of the item shows (agent/first.rs `open_call`); kinds are
    the run record's Locator tags: file, issue, pull_request, commit."""
    args = {}
    k = it["kind"]
    if k in ("issue", "pull_request"):
        args["number"] = it["number"]; tool = "get_issue" if k == "issue" else "get_pull_request"
    elif k == "file":
        args["path"] = it["path"]; tool = "read_file"
        if it.get("line"):
            s = max(1, it["line"] - 5); args["start_line"] = s; args["end_line"] = s + 39
    else:
        args["hash"] = it["hash"]; tool = "show_commit"
    if it.get("repo"): args["repo"] = it["repo"]
    return subprocess.run(B + ["tool", tool, json.dumps(args)], capture_output=True, text=True).stdout[:1200]

def cite(it):
    r = it.get("repo") or ""
    if it.get("number") is not None: return f"{r}#{it['number']}"
    if it.get("hash"): return f"{r}@{it['hash'][:10]}"
    return f"{r}:{it['path']}" + (f":{it['line']}" if it.get("line") else "")

def accepted(q, it):
    for a in q["accept"]:
        if "#" in a and it.get("number") is not None and a == f"{it.get('repo')}#{it['number']}": return True
        if "@" in a and it.get("hash") and a.split("@")[1].startswith(it["hash"][:10]): return True
        if ":" in a and "@" not in a and it.get("path") and a.split(":", 1)[1] == it["path"]: return True
    return False

def score(task, it, shown):
    prompt = ("<|im_start|>system\nYou check whether an item from a code workspace answers a user's question.<|im_end|>\n"
              f"<|im_start|>user\nQuestion: {task}\n\nItem {cite(it)}:\n{shown}\n\nDoes this item answer the question? Reply yes or no.<|im_end|>\n<|im_start|>assistant\n")
    body = json.dumps({"prompt": prompt, "n_predict": 1, "n_probs": 40, "temperature": 0, "cache_prompt": False}).encode()
    r = json.load(urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{PORT}/completion", body, {"Content-Type": "application/json"})))
    cp = r["completion_probabilities"][0]
    probs = cp.get("top_probs") or cp.get("probs") or cp.get("top_logprobs")
    y = n = 1e-9
    for p in probs:
        tok = (p.get("token") or p.get("tok_str") or "").strip().lower()
        pr = p.get("prob", None)
        if pr is None: pr = math.exp(p["logprob"])
        if tok == "yes": y += pr
        elif tok == "no": n += pr
    return math.log(y) - math.log(n)

out = []
for line in open(RUNS):
    r = json.loads(line); q = qs[r["id"]]
    run = run_json(r["run_id"]); items = []
    for it in run["steps"][0]["items"] or []:
        if key(it) not in [key(x) for x in items]: items.append(it)
    items = items[:K]
    scored = [(score(run["task"], it, open_item(it)), i, accepted(q, it)) for i, it in enumerate(items)]
    rec = {"id": r["id"], "split": q["split"], "agent": r["correct"], "first": bool(scored and scored[0][2]),
           "any": any(s[2] for s in scored), "scores": [[round(s[0], 2), s[2]] for s in scored]}
    out.append(rec); print(json.dumps(rec), flush=True)

print(f"questions {len(out)}: first match right {sum(r['first'] for r in out)}, an accepted item among the {K} {sum(r['any'] for r in out)}")
for lam in [0.0, 0.2, 0.5, 1.0]:
    right = sum(max(enumerate(r["scores"]), key=lambda t: t[1][0] - lam * t[0])[1][1] for r in out if r["scores"])
    print(f"highest score less {lam} a rank: right {right}")
