// The UI benchmark in the real WebKitGTK webview (run by scripts/bench-ui.sh): opens the app with
// ?bench and runs the page-side cases in ui/src/bench.ts, the app's way and the naive way side by
// side, alternating, so their ratios hold on a noisy machine. Prints a table and writes
// ui/test-results/bench/results.json.
//
// Environment: BURROW_APP (the app binary), BENCH_REPEAT (rounds, default 2).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { openSession, startDriver } from "./webdriver.mjs";

const ROOT = resolve(import.meta.dirname, "../..");
const OUT = join(ROOT, "ui/test-results/bench");
const APP = process.env.BURROW_APP ?? join(ROOT, "target/debug/burrow-app");
const REPEAT = Number(process.env.BENCH_REPEAT ?? 2);
const STEPS = 500;

const pairs = [
  [
    { kind: "idle", steps: STEPS, seconds: 3 },
    { kind: "idle", steps: 0, seconds: 3 },
  ],
  [
    { kind: "stream", steps: STEPS, tokensPerSecond: 120, seconds: 5, coalesce: true },
    { kind: "stream", steps: STEPS, tokensPerSecond: 120, seconds: 5, coalesce: false },
  ],
  [
    { kind: "stream", steps: STEPS, tokensPerSecond: 1000, seconds: 4, coalesce: true },
    { kind: "stream", steps: STEPS, tokensPerSecond: 1000, seconds: 4, coalesce: false },
  ],
  [
    { kind: "stream", steps: STEPS, tokensPerSecond: 120, seconds: 5, coalesce: true, skipOffscreen: false },
    { kind: "stream", steps: STEPS, tokensPerSecond: 120, seconds: 5, coalesce: true, skipOffscreen: true },
  ],
  [
    { kind: "scroll", steps: STEPS, seconds: 4, skipOffscreen: false },
    { kind: "scroll", steps: STEPS, seconds: 4, skipOffscreen: true },
  ],
];
// A, B, B, A, ...: neither variant always goes first.
const cases = [];
for (let r = 0; r < REPEAT; r++) for (const [a, b] of pairs) cases.push(...(r % 2 ? [b, a] : [a, b]));

const tmp = mkdtempSync(join(tmpdir(), "burrow-bench-ui-"));
mkdirSync(OUT, { recursive: true });
const driver = await startDriver();
let session;
let failed = false;
try {
  session = await openSession(driver, APP, ["--home", join(tmp, "home"), "--no-workspace", "--no-model"]);
  await session.until("the page", "return document.body.dataset.ready === '1';");
  const href = await session.exec("return location.href;");
  await session.wd("POST", "/url", { url: `${href.split("?")[0]}?bench` });
  await session.until("the benchmark hook", "return document.body.dataset.ready === '1' && !!window.burrowBench;");
  await session.exec("return window.burrowBench.start(arguments[0]);", [cases]);
  const results = await session.until(
    "the benchmark",
    "if (window.burrowBench.error) throw new Error(window.burrowBench.error); return window.burrowBench.result;",
    [],
    600_000,
  );
  const version = await session.exec("return navigator.userAgent;");
  writeFileSync(join(OUT, "results.json"), JSON.stringify({ userAgent: version, results }, null, 2));

  const row = (r) => {
    const f = r.frames;
    const what =
      r.kind === "stream"
        ? `stream ${r.tokensPerSecond} tok/s into step ${r.steps + 1}, ${r.coalesce ? "coalesced per frame" : "render per event"}${r.skipOffscreen === undefined ? "" : r.skipOffscreen ? ", off-screen skipped" : ", all laid out"}`
        : r.kind === "scroll"
          ? `scroll ${r.steps} steps, ${r.skipOffscreen ? "off-screen skipped" : "all laid out"}`
          : `idle, ${r.steps} steps shown`;
    const extra =
      r.kind === "stream"
        ? `sent ${r.sent} dropped ${r.dropped} out-of-order ${r.outOfOrder} · on screen p50 ${r.latencyP50Ms} p95 ${r.latencyP95Ms} ms · flush p50 ${r.flushP50Ms} p95 ${r.flushP95Ms} ms · ${r.builds} step builds · trace built in ${r.buildTraceMs} ms`
        : r.kind === "scroll"
          ? `height ${r.scrollHeight} px · trace built in ${r.buildTraceMs} ms`
          : "";
    return `${what.padEnd(62)} frames ${String(f.frames).padStart(4)} · p50 ${f.p50Ms} p95 ${f.p95Ms} max ${f.maxMs} ms · >33 ms: ${f.over33} · ${extra}`;
  };
  console.log(`# UI benchmark (${version})`);
  for (const r of results) console.log(row(r));
  const lost = results.filter((r) => r.kind === "stream" && (r.dropped !== 0 || r.outOfOrder !== 0));
  if (lost.length) {
    failed = true;
    console.error(`tokens were lost or reordered in ${lost.length} case(s)`);
  }
} catch (e) {
  failed = true;
  console.error(`[bench-ui] ${e.stack ?? e}`);
} finally {
  await session?.close().catch(() => undefined);
  await driver.stop();
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
