// End to end in the real WebKitGTK webview: tauri-driver (in front of WebKitWebDriver) starts
// the built app under Xvfb, and this script drives it over plain WebDriver (HTTP + JSON, no
// client library): add a workspace and see it indexed, load and switch models, run a task and
// see its steps and plan, stop a run, reopen it from history, change a setting. A screenshot of
// each screen is saved under ui/test-results/e2e/. Run by scripts/e2e.sh.
//
// Environment: BURROW_APP (the app binary), BURROW_MODEL (a GGUF), TAURI_DRIVER (the driver).

import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync, linkSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");
const OUT = join(ROOT, "ui/test-results/e2e");
const APP = process.env.BURROW_APP ?? join(ROOT, "target/debug/burrow-app");
const MODEL = process.env.BURROW_MODEL ?? join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf");
const DRIVER = process.env.TAURI_DRIVER ?? "tauri-driver";
const PORT = 4444;
const BASE = `http://127.0.0.1:${PORT}`;
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

const log = (...a) => console.error("[e2e]", ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- fixtures: a Burrow home with two model names for one file, and a small git repository ----

const tmp = mkdtempSync(join(tmpdir(), "burrow-e2e-"));
const home = join(tmp, "home");
const models = join(home, "models");
mkdirSync(models, { recursive: true });
// A second model to switch to: the same weights under another file name (a hard link, no copy).
const MODEL_B = join(models, "smollm2-copy.gguf");
linkSync(MODEL, MODEL_B);
writeFileSync(join(models, "broken.gguf"), "GGUF not really a model");
const project = join(tmp, "wallet-tool");
mkdirSync(join(project, "src"), { recursive: true });
writeFileSync(
  join(project, "src/wallet.rs"),
  "/// Loads a wallet file from disk.\npub fn load_wallet(path: &str) -> Wallet {\n    todo!()\n}\n",
);
writeFileSync(join(project, "README.md"), "# wallet-tool\nReads wallet files. See src/wallet.rs.\n");
const git = (...args) =>
  execFileSync("git", args, {
    cwd: project,
    env: { ...process.env, GIT_AUTHOR_NAME: "Ada", GIT_AUTHOR_EMAIL: "ada@example.org", GIT_COMMITTER_NAME: "Ada", GIT_COMMITTER_EMAIL: "ada@example.org" },
  });
git("init", "-q", "-b", "main");
git("add", ".");
git("commit", "-q", "-m", "Add the wallet loader");
mkdirSync(OUT, { recursive: true });

// ---- WebDriver over fetch ----

async function wd(method, path, body) {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json.value ?? json)}`);
  return json.value;
}

let session = "";
const s = (p) => `/session/${session}${p}`;
async function find(css) {
  const ref = await wd("POST", s("/element"), { using: "css selector", value: css });
  const id = ref?.[ELEMENT] ?? Object.values(ref ?? {})[0];
  if (typeof id !== "string") throw new Error(`no element ${css}: ${JSON.stringify(ref)}`);
  return id;
}
const click = async (css) => wd("POST", s(`/element/${await find(css)}/click`), {});
const type = async (css, text) => {
  const el = await find(css);
  await wd("POST", s(`/element/${el}/clear`), {});
  await wd("POST", s(`/element/${el}/value`), { text });
};
const keys = async (css, text) => wd("POST", s(`/element/${await find(css)}/value`), { text });
const exec = (script, args = []) => wd("POST", s("/execute/sync"), { script, args });
const text = (css) => exec("const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", [css]);

/// Polls `script` (which returns a value or null) until it returns something.
async function until(what, script, args = [], timeoutMs = 120_000) {
  const start = Date.now();
  let last;
  for (;;) {
    try {
      last = await exec(script, args);
      if (last !== null && last !== false && last !== undefined) return last;
    } catch (e) {
      last = String(e);
    }
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await sleep(150);
  }
}

// WebKitGTK under Xvfb answers a screenshot only after its next paint, and a page with nothing
// changing never paints again (seen: a screenshot waits forever unless a caret blinks). A
// 1-pixel animated element, there only while the screenshot is taken, keeps frames coming.
const TICK_ON =
  "const t = document.createElement('div'); t.id = 'e2e-tick'; t.style.cssText = 'position:fixed;right:0;bottom:0;width:1px;height:1px;opacity:0.01'; document.body.append(t); let n = 0; (function f(){ if (!t.isConnected) return; t.style.opacity = String(0.01 + (n++ % 2) * 0.01); requestAnimationFrame(f); })();";
const TICK_OFF = "document.getElementById('e2e-tick')?.remove();";

async function screenshot(name) {
  await exec(TICK_ON);
  const png = await wd("GET", s("/screenshot")).finally(() => exec(TICK_OFF));
  writeFileSync(join(OUT, `${name}.png`), Buffer.from(png, "base64"));
  log(`screenshot ${name}.png`);
}

const tab = (name) => click(`#tab-${name}`);

// ---- the run ----

const results = [];
async function step(name, f) {
  const t = Date.now();
  try {
    await f();
    results.push({ name, ok: true, ms: Date.now() - t });
    log(`ok   ${name} (${Date.now() - t} ms)`);
  } catch (e) {
    results.push({ name, ok: false, ms: Date.now() - t, error: String(e) });
    log(`FAIL ${name}: ${e.stack ?? e}`);
    await screenshot(`failed-${name.replace(/\W+/g, "-")}`).catch(() => undefined);
    throw e;
  }
}

const driver = spawn(DRIVER, ["--port", String(PORT), "--native-driver", "/usr/bin/WebKitWebDriver"], {
  stdio: ["ignore", "inherit", "inherit"],
});
let failed = false;
try {
  for (let i = 0; ; i++) {
    try {
      await fetch(`${BASE}/status`);
      break;
    } catch {
      if (i > 100) throw new Error("tauri-driver did not start");
      await sleep(100);
    }
  }

  let coldStartMs = 0;
  await step("cold start to an interactive window", async () => {
    const t0 = Date.now();
    const created = await wd("POST", "/session", {
      capabilities: {
        alwaysMatch: {
          "tauri:options": {
            application: APP,
            args: ["--home", home, "--no-workspace", "--no-model"],
          },
        },
      },
    });
    session = created.sessionId;
    await until("the page to be ready", "return document.body.dataset.ready === '1';");
    coldStartMs = Date.now() - t0;
    await until("the task box", "return !!document.querySelector('#task');");
    await screenshot("01-run-empty");
  });

  await step("add a workspace and see indexing finish", async () => {
    await tab("workspace");
    await type("#add-path", project);
    await click("#add");
    await until(
      "the repository to be indexed",
      "const r = document.querySelector('#repos tr[data-repo=\"wallet-tool\"]'); return r && r.textContent.includes('ready') ? r.textContent : null;",
    );
    const job = await until("the finished job", "const j = document.querySelector('.index-job.index-done'); return j ? j.textContent : null;");
    if (!/2 files indexed/.test(job)) throw new Error(`unexpected report: ${job}`);
    // A folder that cannot be indexed: a clear message, and the indexed one stays.
    await type("#add-path", join(tmp, "no-such-folder"));
    await click("#add");
    const err = await until("the failure message", "const e = document.querySelector('.index-job.index-failed .error-box'); return e ? e.textContent : null;");
    if (!err.includes("no-such-folder")) throw new Error(`the message does not name the folder: ${err}`);
    await screenshot("02-workspace");
  });

  await step("load a model, switch to another, see a load failure", async () => {
    await tab("models");
    await until("the models list", `return document.querySelectorAll('tr[data-path]').length >= 2;`);
    await click(`tr[data-path="${MODEL}"] button.load`);
    await until("the model to load", `const r = document.querySelector('tr[data-path="${MODEL}"] button.load'); return r && r.textContent === 'In use';`);
    await click(`tr[data-path="${MODEL_B}"] button.load`);
    const current = await until(
      "the switch",
      `const c = document.querySelector('.current-model'); return c && c.textContent.includes(${JSON.stringify(MODEL_B)}) ? c.textContent : null;`,
    );
    if (!/Memory/.test(current)) throw new Error(`no memory figure: ${current}`);
    const problem = await text(".warning");
    if (!problem || !problem.includes("broken.gguf")) throw new Error(`the unreadable file is not reported: ${problem}`);
    await screenshot("03-models");
  });

  await step("settings: a short run limit is saved", async () => {
    await tab("settings");
    await until("the settings form", "return !!document.querySelector('#settings-form');");
    await type("#settings-form input[name=max_steps]", "4");
    await click("#save-settings");
    await until("the saved notice", "return [...document.querySelectorAll('.notice')].some(n => n.textContent.includes('Settings saved'));");
    // A value out of range is not sent: the form says what is wrong (the core refuses it too,
    // naming the field: src-tauri/tests/commands.rs).
    const saved = "return [...document.querySelectorAll('.notice')].filter(n => n.textContent.includes('Settings saved')).length;";
    const before = await exec(saved);
    await type("#settings-form input[name=max_steps]", "0");
    await click("#save-settings");
    await sleep(300);
    const invalid = await exec("const i = document.querySelector('#settings-form input[name=max_steps]'); return i.validity.valid ? null : i.validationMessage;");
    if (!invalid) throw new Error("max_steps 0 was accepted");
    if ((await exec(saved)) !== before) throw new Error("max_steps 0 was saved");
    await type("#settings-form input[name=max_steps]", "4");
    await click("#save-settings");
    await screenshot("04-settings");
  });

  let firstRun = 0;
  await step("run a task: steps and the plan appear, then the answer", async () => {
    await tab("run");
    await keys(
      "#task",
      "First write a short plan with todo_write, then find where the wallet file is loaded.\uE007",
    );
    await until("the first step", "return document.querySelectorAll('.step').length > 0;");
    await screenshot("05-run-streaming");
    await until("the run to end", "const b = document.querySelector('.run-meta .badge'); return b && b.textContent !== 'Running' ? b.textContent : null;", [], 400_000);
    const steps = await exec("return document.querySelectorAll('.step').length;");
    if (steps < 1) throw new Error("no steps shown");
    const stats = await text(".step .step-stats");
    if (!stats || !/prompt tokens/.test(stats) || !/first token/.test(stats)) throw new Error(`no step figures: ${stats}`);
    const plan = await exec("return document.querySelectorAll('#todos li.todo').length;");
    log(`run ended after ${steps} steps with ${plan} plan items: ${await text(".run-meta")}`);
    if (plan < 1) throw new Error("the plan did not appear");
    firstRun = Number((await text(".run-meta")).match(/run (\d+)/)?.[1] ?? 0);
    await screenshot("06-run-done");
  });

  await step("stop a run with Esc", async () => {
    await type("#task", "List every file in the workspace and explain each one in detail.");
    await keys("#task", "\uE007");
    await until("the run to start", "return document.querySelector('.run-meta .badge')?.textContent === 'Running';");
    await until("a step to stream", "return document.querySelectorAll('.step').length > 0;");
    await keys("#stop", "\uE00C");
    const status = await until("the run to stop", "const b = document.querySelector('.run-meta .badge'); return b && b.textContent !== 'Running' ? b.textContent : null;", [], 120_000);
    if (status !== "Stopped") throw new Error(`the run ended as ${status}, not stopped`);
    await screenshot("07-run-stopped");
  });

  await step("reopen a run from history with its whole trace", async () => {
    await tab("history");
    await until("the runs list", "return document.querySelectorAll('tr[data-run]').length >= 2;");
    await screenshot("08-history");
    await click(`tr[data-run="${firstRun}"] button.open-run`);
    const meta = await until("the reopened run", "const m = document.querySelector('.run-meta'); return m && m.textContent.includes('from history') ? m.textContent : null;");
    if (!meta.includes(`run ${firstRun}`)) throw new Error(`opened the wrong run: ${meta}`);
    const steps = await exec("return document.querySelectorAll('.step').length;");
    if (steps < 1) throw new Error("the reopened run has no steps");
    await screenshot("09-history-reopened");
  });

  await step("readable at 800x600", async () => {
    await wd("POST", s("/window/rect"), { width: 800, height: 600 });
    await sleep(500);
    const overflow = await exec("return document.documentElement.scrollWidth > window.innerWidth + 1;");
    await screenshot("10-run-800x600");
    if (overflow) throw new Error("the page scrolls sideways at 800x600");
  });

  writeFileSync(join(OUT, "results.json"), JSON.stringify({ coldStartMs, results }, null, 2));
  log(`cold start to an interactive window: ${coldStartMs} ms`);
} catch (e) {
  failed = true;
  writeFileSync(join(OUT, "results.json"), JSON.stringify({ results, error: String(e) }, null, 2));
} finally {
  if (session) await wd("DELETE", `/session/${session}`).catch(() => undefined);
  driver.kill();
  if (existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
