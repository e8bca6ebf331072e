// The Search screen measured as users meet it: every question of the question sets typed into
// the box of the real desktop app (WebKitGTK under Xvfb) over the evaluation workspace, the
// rank of the first accepted item among the results the page shows, and the time from asking to
// the results drawn (the page's own clock, which the screen shows). Beside it, `burrow eval
// --search` on the same workspace with the same embedding model: the box must find what the
// library ranks, question by question. Run by scripts/bench-search-ui.sh.
//
// Environment: BURROW_APP, BURROW_CLI (the same build), BENCH_HOME (a Burrow home holding the
// evaluation workspace with its vectors: scripts/eval/workspace.sh; copied, never changed),
// BENCH_EMBEDDING (the embedding model's GGUF), BENCH_SETS (question files, comma-separated;
// default scripts/eval/questions.jsonl,scripts/eval/questions-fresh.jsonl), BENCH_MODE (hybrid).

import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { openSession, startDriver } from "./webdriver.mjs";

const ROOT = resolve(import.meta.dirname, "../..");
const OUT = join(ROOT, "ui/test-results/bench");
const APP = process.env.BURROW_APP ?? join(ROOT, "target/debug/burrow-app");
const CLI = process.env.BURROW_CLI ?? join(ROOT, "target/debug/burrow");
const HOME = process.env.BENCH_HOME;
const EMBEDDING = process.env.BENCH_EMBEDDING;
const MODE = process.env.BENCH_MODE ?? "hybrid";
const SETS = (process.env.BENCH_SETS ?? "scripts/eval/questions.jsonl,scripts/eval/questions-fresh.jsonl").split(",");
const log = (...a) => console.error("[bench-search]", ...a);
if (!HOME || !EMBEDDING) throw new Error("BENCH_HOME and BENCH_EMBEDDING are needed (see the header)");

const tmp = mkdtempSync(join(tmpdir(), "burrow-bench-search-"));
const home = join(tmp, "home");
mkdirSync(home, { recursive: true });
cpSync(join(HOME, "workspace.db"), join(home, "workspace.db"));
writeFileSync(join(home, "settings.json"), JSON.stringify({ embedding_model: EMBEDDING }));

/// Whether a result's item (`data-ref`: repo:path, repo#n, repo@hash) is the accepted `a`, as
/// `burrow eval` decides (src/app/eval.rs, `Accepted::is`).
function accepts(a, ref) {
  if (!ref) return false;
  const number = a.match(/^(.*)#(\d+)$/);
  if (number) return ref === `${number[1]}#${number[2]}`;
  const commit = a.match(/^([^@]*)@([0-9a-fA-F]{7,})$/);
  if (commit) {
    const r = ref.match(/^([^@]*)@([0-9a-f]+)$/);
    const want = commit[2].toLowerCase();
    return !!r && r[1] === commit[1] && (r[2].startsWith(want) || want.startsWith(r[2]));
  }
  return ref === a;
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p) => s[Math.round((s.length - 1) * p)];
  return { p50: at(0.5), p95: at(0.95), max: s[s.length - 1] };
};

const driver = await startDriver();
const report = { mode: MODE, sets: [] };
let sess;
try {
  sess = await openSession(driver, APP, ["--home", home, "--no-workspace", "--no-model"]);
  await sess.until("the page to be ready", "return document.body.dataset.ready === '1';");
  await sess.click("#tab-search");
  await sess.exec(`document.querySelector('#search-mode').value = ${JSON.stringify(MODE)}; return true;`);
  let asked = 0;
  /// Asks the box `text` and waits for its results: [ms, refs of the first ten shown].
  const ask = async (text) => {
    await sess.exec(
      "const q = document.querySelector('#search-query'); q.value = arguments[0]; document.querySelector('#search-form').requestSubmit(); return true;",
      [text],
    );
    asked++;
    const got = await sess.until(
      "the results",
      `const r = document.querySelector('#search-results');
       if (!r.dataset.search || Number(r.dataset.search) < ${asked}) return null;
       return [Number(r.dataset.ms), [...r.querySelectorAll('li.search-hit')].slice(0, 10).map(li => li.dataset.ref ?? null), document.querySelector('#search-note').textContent];`,
      [],
      60_000,
    );
    return got;
  };
  // The first search loads the embedding model: timed apart.
  const [firstMs, , firstNote] = await ask("where are ignore files read");
  log(`first search (in meaning or hybrid mode, it loads the embedding model): ${firstMs} ms; ${firstNote}`);
  report.first_ms = firstMs;
  for (const file of SETS) {
    const questions = readFileSync(join(ROOT, file), "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    const ranks = [];
    const times = [];
    const notes = new Set();
    for (const q of questions) {
      const [ms, refs, note] = await ask(q.question);
      const i = refs.findIndex((ref) => q.accept.some((a) => accepts(a, ref)));
      ranks.push([q.id, i < 0 ? null : i + 1]);
      times.push(ms);
      if (note.includes("ranked by words only")) notes.add(note);
    }
    // The library's own ranks for the same questions, for the same workspace and model.
    const cli = JSON.parse(
      execFileSync(CLI, ["--home", home, "eval", join(ROOT, file), "--search", MODE, "--embedding-model", EMBEDDING, "--json"], {
        encoding: "utf8",
        maxBuffer: 1 << 26,
        stdio: ["ignore", "pipe", "ignore"],
      }),
    )[0];
    const library = new Map(cli.ranks);
    const differ = ranks.filter(([id, r]) => library.get(id) !== r).map(([id, r]) => ({ id, app: r, library: library.get(id) }));
    const n = ranks.length;
    const at = (k) => ranks.filter(([, r]) => r !== null && r <= k).length / n;
    const mrr = ranks.reduce((s, [, r]) => s + (r !== null && r <= 10 ? 1 / r : 0), 0) / n;
    const set = { file, questions: n, recall_at_1: at(1), recall_at_5: at(5), mrr_at_10: mrr, ms: stats(times), library: cli.all, differ, words_only_notes: [...notes] };
    report.sets.push(set);
    log(
      `${file}: ${n} questions, recall@1 ${set.recall_at_1.toFixed(3)} / recall@5 ${set.recall_at_5.toFixed(3)} / MRR@10 ${mrr.toFixed(3)}` +
        ` (library: ${cli.all.recall_at_1.toFixed(3)} / ${cli.all.recall_at_5.toFixed(3)} / ${cli.all.mrr_at_10.toFixed(3)});` +
        ` asked to drawn p50 ${set.ms.p50} ms, p95 ${set.ms.p95} ms, max ${set.ms.max} ms; ${differ.length} ranks differ` +
        (differ.length ? `: ${JSON.stringify(differ)}` : ""),
    );
    if (notes.size) log(`ranked by words only: ${[...notes].join(" | ")}`);
  }
} finally {
  await sess?.close().catch(() => undefined);
  await driver.stop();
  rmSync(tmp, { recursive: true, force: true });
}
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, "search.json"), JSON.stringify(report, null, 2));
if (report.sets.some((s) => s.differ.length)) process.exitCode = 1;
