// Decode speed where users watch it (issue 20): the same agent task run in the desktop app (the
// real WebKitGTK webview under Xvfb, streaming every token to the window) and by the CLI
// (`burrow ask`), alternated round by round, each step's decode tok/s read from the kept run
// records (`burrow runs show ID --json`: generated tokens / decode ms) and compared at the same
// step (the same depth of history, give or take what the model wrote). Run by
// scripts/bench-app-decode.sh.
//
// Variants (BENCH_VARIANTS, comma-separated; default all): app (as it ships), app-spin (OpenMP
// threads that spin while they wait: OMP_WAIT_POLICY=ACTIVE), app-passive (that sleep: PASSIVE),
// app-spincount (OpenMP's threads spin a shorter while before they sleep:
// GOMP_SPINCOUNT=BENCH_SPINCOUNT, default 10000; libgomp's default is 300000), app-1t (one engine
// thread fewer), app-nice (the webview's threads at nice 10), app-idle (the webview's threads
// scheduled only when a core is idle: SCHED_IDLE, which a waking model thread preempts),
// app-batch (the webview's threads never preempt a running thread when they wake: SCHED_BATCH),
// app-nocomp (WebKit's accelerated
// compositing off: WEBKIT_DISABLE_COMPOSITING_MODE=1, the page drawn without GL, here llvmpipe),
// app-still (no CSS animation or transition in the page), app-quiet (this script looks at the page
// every 2 s rather than every 150 ms while the run goes on: its own polling costs the webview and
// the driver), cli (the baseline), cli-spin, cli-passive, cli-spincount.
//
// Environment: BURROW_APP, BURROW_CLI (both from the same build), BURROW_MODEL (a GGUF; default
// SmolLM2), BENCH_ROUNDS (default 2), BENCH_STEPS (default 6).

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { appProcesses, openSession, sleep, startDriver } from "./webdriver.mjs";

const ROOT = resolve(import.meta.dirname, "../..");
const OUT = join(ROOT, "ui/test-results/bench");
const APP = process.env.BURROW_APP ?? join(ROOT, "target/debug/burrow-app");
const CLI = process.env.BURROW_CLI ?? join(ROOT, "target/debug/burrow");
const MODEL = process.env.BURROW_MODEL ?? join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const STEPS = Number(process.env.BENCH_STEPS ?? 6);
const VARIANTS = (process.env.BENCH_VARIANTS ?? "app,app-spin,app-passive,app-1t,app-nice,cli,cli-spin,cli-passive").split(",");
const TASK = "Which commits changed how search ranks results, and which files implement the ranking?";
const log = (...a) => console.error("[bench-decode]", ...a);

const tmp = mkdtempSync(join(tmpdir(), "burrow-bench-decode-"));
const home = join(tmp, "home");
const env = { ...process.env, BURROW_HOME: home };
delete env.BURROW_LOG;
const cli = (args, extra = {}) => execFileSync(CLI, args, { env: { ...env, ...extra }, encoding: "utf8", maxBuffer: 1 << 28 });

/// The settings both the app and the CLI run with: the step limit, and (for app-1t) one thread.
function settings(threads) {
  const models = threads ? { [MODEL]: { context_size: 8192, threads, gpu_layers: null } } : { [MODEL]: { context_size: 8192, threads: null, gpu_layers: null } };
  mkdirSync(home, { recursive: true });
  // Without Burrow's own first search and opening, the model takes every step itself: a
  // decoding step at each depth.
  writeFileSync(join(home, "settings.json"), JSON.stringify({ max_steps: STEPS, search_first: false, models }));
}

function newestRun() {
  const runs = JSON.parse(cli(["runs", "list", "--limit", "1", "--json"]));
  return JSON.parse(cli(["runs", "show", String(runs[0].id), "--json"]));
}

/// Steps that decoded: index, prompt tokens, tokens, tok/s.
function decodeFigures(run) {
  return run.steps
    .filter((s) => !["search", "open"].includes(s.origin?.by) && s.generated_tokens > 1 && s.decode_ms > 0)
    .map((s) => ({ index: s.index, prompt: s.prompt_tokens, tokens: s.generated_tokens, tps: (s.generated_tokens - 1) / (s.decode_ms / 1000) }));
}

const waitPolicy = (v) =>
  v.endsWith("-spin")
    ? { OMP_WAIT_POLICY: "ACTIVE" }
    : v.endsWith("-passive")
      ? { OMP_WAIT_POLICY: "PASSIVE" }
      : v.endsWith("-spincount")
        ? { GOMP_SPINCOUNT: process.env.BENCH_SPINCOUNT ?? "10000" }
        : v.endsWith("-nocomp")
          ? { WEBKIT_DISABLE_COMPOSITING_MODE: "1" }
          : {};

async function runApp(variant) {
  settings(variant === "app-1t" ? Math.max(1, cpus().length - 1) : null);
  const driver = await startDriver({ env: waitPolicy(variant) });
  try {
    const s = await openSession(driver, APP, ["--home", home, "--no-workspace", "--model", MODEL]);
    try {
      await s.until("the model", "const p = document.querySelector('#current-model'); return p ? p.textContent : null;", [], 120_000);
      if (variant === "app-nice") reniceWebview(["renice", "-n", "10", "-p"]);
      if (variant === "app-idle") reniceWebview(["chrt", "--idle", "-a", "-p", "0"]);
      if (variant === "app-batch") reniceWebview(["chrt", "--batch", "-a", "-p", "0"]);
      if (variant === "app-still") await s.exec(STILL);
      await s.exec(WATCH_UPDATES);
      const before = cpuSeconds();
      const t0 = Date.now();
      await s.keys("#task", `${TASK}\uE007`);
      // From the task on: not the typing.
      await s.exec("window.__updates = [];");
      // Again once the run is going: WebKit may have started another web process meanwhile
      // (the first call alone took effect in one run of three).
      if (variant === "app-idle" || variant === "app-batch") {
        await sleep(1000);
        reniceWebview(["chrt", variant === "app-idle" ? "--idle" : "--batch", "-a", "-p", "0"]);
      }
      await s.until("the run to end", "const b = document.querySelector('.run-meta .badge'); return b && b.textContent !== 'Running' ? b.textContent : null;", [], 900_000, variant === "app-quiet" ? 2000 : 150);
      const after = cpuSeconds();
      const wall = (Date.now() - t0) / 1000;
      const gaps = updateGaps(await s.exec("return window.__updates ?? [];"));
      (updateShares[variant] ??= []).push(gaps);
      log(`${variant}: the page's text changed ${gaps.n} times; between changes p50 ${gaps.p50} ms, p95 ${gaps.p95} ms, max ${gaps.max} ms`);
      const used = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k] - (before[k] ?? 0)) / wall]));
      (cpuShares[variant] ??= []).push(used);
      log(`${variant}: cores busy during the run: ${Object.entries(used).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ")}`);
    } finally {
      await s.close().catch(() => undefined);
    }
  } finally {
    await driver.stop();
  }
  // An app still running would take the cores from the next measurement.
  for (let i = 0; appProcesses(home).length > 0; i++) {
    if (i === 100) {
      const left = appProcesses(home);
      log(`the app was still running 10 s after its window closed (pids ${left.join(", ")}): killed`);
      for (const pid of left) process.kill(Number(pid), "SIGKILL");
    }
    await sleep(100);
  }
  return newestRun();
}

const cpuShares = {};
const updateShares = {};

/// Records when the page's text changes (a token drawn, a step added), to see whether the
/// window still shows the stream as it comes: the times, in ms, in `window.__updates`.
const WATCH_UPDATES =
  "window.__updates = []; new MutationObserver(() => window.__updates.push(Date.now())).observe(document.body, { subtree: true, childList: true, characterData: true });";

/// Intervals between the page's changes while the run went on: how often the user saw the
/// stream move. Not the first: the wait for the first step's first token (its prompt read).
function updateGaps(times) {
  const gaps = times.slice(2).map((t, i) => t - times[i + 1]).filter((g) => g > 0).sort((a, b) => a - b);
  const at = (q) => (gaps.length ? gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] : NaN);
  return { n: times.length, p50: at(0.5), p95: at(0.95), max: gaps.length ? gaps[gaps.length - 1] : NaN };
}

/// The app-still variant: no CSS animation or transition runs in the page (the streaming step's
/// blinking caret among them), to measure what they take from the model's cores.
const STILL =
  "const st = document.createElement('style'); st.textContent = '*, *::before, *::after { animation: none !important; transition: none !important; }'; document.head.append(st);";

/// Lowers the priority of every thread of the webview's processes with `command` (renice or
/// chrt; an experiment: the page then preempts the model's threads less often).
function reniceWebview(command) {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      // The page's processes, not the harness's WebKitWebDriver.
      if (!isWebview(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0])) continue;
    } catch {
      continue; // gone
    }
    try {
      const tids = readdirSync(`/proc/${pid}/task`);
      if (command[0] === "chrt") execFileSync(command[0], [...command.slice(1), pid], { stdio: "ignore" });
      else execFileSync(command[0], [...command.slice(1), ...tids], { stdio: "ignore" });
    } catch (e) {
      // The variant would then measure the app as it ships.
      log(`${command.join(" ")} ${pid} failed: ${e.message}`);
    }
  }
}

/// Whether the program `exe` is one of the webview's processes (the page's, its network's).
const isWebview = (exe) => exe.includes("WebKitWebProcess") || exe.includes("WebKitNetworkProcess");

/// CPU seconds so far of what runs beside the model: the model's threads, the rest of the app
/// (its main thread: events, IPC), the webview's processes and the X server.
function cpuSeconds() {
  const totals = {};
  const add = (k, v) => (totals[k] = (totals[k] ?? 0) + v);
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let exe;
    try {
      exe = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0];
    } catch {
      continue;
    }
    const group = exe.endsWith("burrow-app") ? "app" : isWebview(exe) ? "webview" : exe.endsWith("Xvfb") ? "xvfb" : Number(pid) === process.pid || exe.endsWith("tauri-driver") || exe.includes("WebKitWebDriver") ? "harness" : null;
    if (!group) continue;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        const secs = (Number(f[11]) + Number(f[12])) / 100;
        add(group === "app" && comm.startsWith("burrow-model") ? "model" : group === "app" && comm === "burrow-app" ? "app-main" : group === "app" ? "app-other" : group, secs);
      } catch {
        // the thread ended
      }
    }
  }
  return totals;
}


function runCli(variant) {
  settings(null);
  const before = childCpuSeconds();
  const t0 = Date.now();
  cli(["ask", TASK, "-m", MODEL, "--ctx", "8192", "--max-steps", String(STEPS), "--no-search-first", "--json"], waitPolicy(variant));
  const used = (childCpuSeconds() - before) / ((Date.now() - t0) / 1000);
  (cpuShares[variant] ??= []).push({ cli: used });
  log(`${variant}: cores busy during the run: cli ${used.toFixed(2)} (the whole process, loading included)`);
  return newestRun();
}

/// CPU seconds of this process's children that have ended (the CLI's run, once it returns).
function childCpuSeconds() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[13]) + Number(f[14])) / 100;
}

let failed = false;
const results = {};
try {
  log(`indexing ${ROOT}`);
  cli(["workspace", "add", ROOT, "--json"]);
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order so neither side always runs on a cooler machine.
    const order = r % 2 ? [...VARIANTS].reverse() : VARIANTS;
    for (const v of order) {
      const run = v.startsWith("app") ? await runApp(v) : runCli(v);
      const figs = decodeFigures(run);
      (results[v] ??= []).push(figs);
      log(`round ${r + 1} ${v}: ${figs.map((f) => `#${f.index} ${f.tps.toFixed(1)}`).join(" ")} tok/s (${run.status})`);
    }
  }
  // Per step index: the median tok/s of each variant, and its ratio to the CLI's.
  const med = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.floor(s.length / 2)] : NaN;
  };
  const indices = [...new Set(Object.values(results).flat(2).map((f) => f.index))].sort((a, b) => a - b);
  const table = [];
  for (const i of indices) {
    const row = { step: i };
    for (const v of VARIANTS) {
      const at = (results[v] ?? []).flat().filter((f) => f.index === i);
      if (at.length) row[v] = { tps: med(at.map((f) => f.tps)), prompt: med(at.map((f) => f.prompt)), n: at.length };
    }
    table.push(row);
  }
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, "decode.json"), JSON.stringify({ model: MODEL, steps: STEPS, rounds: ROUNDS, results, table, cpuShares, updateShares }, null, 2));
  console.log(`# decode tok/s per step, medians of ${ROUNDS} rounds (prompt tokens in brackets); ratio to cli`);
  console.log(["step", ...VARIANTS].map((c) => c.padStart(18)).join(""));
  for (const row of table) {
    const base = row.cli?.tps;
    console.log(
      [String(row.step), ...VARIANTS.map((v) => (row[v] ? `${row[v].tps.toFixed(1)} [${row[v].prompt}]${base && v !== "cli" ? ` ${(row[v].tps / base).toFixed(2)}x` : ""}` : "-"))]
        .map((c) => c.padStart(18))
        .join(""),
    );
  }
} catch (e) {
  failed = true;
  console.error(`[bench-decode] ${e.stack ?? e}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
