// End to end in the real WebKitGTK webview: tauri-driver (in front of WebKitWebDriver) starts
// the built app under Xvfb, and this script drives it over plain WebDriver (webdriver.mjs): add a
// workspace and see it indexed, load and switch models and see one fail to load, run a task and
// see its steps and plan, stop a run, reopen it from history, change a setting, import issues (a
// malformed file, then a good one), open a file and an issue from a trace's links, search the
// workspace from the Search screen and open a result, type in a
// model's settings while the screen redraws, serve the model over the OpenAI API from its
// switch and list that server as a model served elsewhere; then close the
// app in the middle of a run and start it again the way the README's run command does (the
// folder it starts in as default workspace, the default model, here in the dark theme) and
// continue the interrupted run. A screenshot of each screen is saved under
// ui/test-results/e2e/. Run by scripts/e2e.sh.
//
// Environment: BURROW_APP (the app binary), BURROW_MODEL (a GGUF), TAURI_DRIVER (the driver).

import { execFileSync } from "node:child_process";
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { appProcesses, openSession, sleep, startDriver } from "./webdriver.mjs";

const ROOT = resolve(import.meta.dirname, "../..");
const OUT = join(ROOT, "ui/test-results/e2e");
const APP = process.env.BURROW_APP ?? join(ROOT, "target/debug/burrow-app");
const MODEL = process.env.BURROW_MODEL ?? join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf");
// The default model: another real model (another architecture, tokenizer and chat template) to
// switch to. The runs below use SmolLM2, four times faster.
const QWEN = process.env.BURROW_MODEL_2 ?? join(ROOT, "models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");

const log = (...a) => console.error("[e2e]", ...a);

/// A port nothing listens on now.
function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

// ---- fixtures: a Burrow home with two model names for one file, and two small git repositories ----

const tmp = mkdtempSync(join(tmpdir(), "burrow-e2e-"));
const home = join(tmp, "home");
const models = join(home, "models");
mkdirSync(models, { recursive: true });
// A second model to switch to: the same weights under another file name (a hard link, no copy).
const MODEL_B = join(models, "smollm2-copy.gguf");
linkSync(MODEL, MODEL_B);
// Listed from the project's models/, where the app finds it as it finds SmolLM2.
const MODEL_Q = QWEN;
writeFileSync(join(models, "broken.gguf"), "GGUF not really a model");
// A model from the future: a readable GGUF whose architecture this llama.cpp does not know (the
// real weights with general.architecture renamed). It is listed, and loading it fails.
const FUTURE = join(models, "future-arch.gguf");
{
  const bytes = readFileSync(MODEL);
  const key = Buffer.from("general.architecture");
  const at = bytes.indexOf(key);
  // key, then the value's type (u32) and length (u64), then the name.
  const value = at + key.length + 4 + 8;
  if (at < 0 || bytes.subarray(value, value + 5).toString() !== "llama") throw new Error("unexpected GGUF layout in the model");
  bytes.write("zzyzx", value);
  writeFileSync(FUTURE, bytes);
}

function gitRepo(dir, files, message) {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  const git = (...args) =>
    execFileSync("git", args, {
      cwd: dir,
      env: { ...process.env, GIT_AUTHOR_NAME: "Ada", GIT_AUTHOR_EMAIL: "ada@example.org", GIT_COMMITTER_NAME: "Ada", GIT_COMMITTER_EMAIL: "ada@example.org" },
    });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", message);
}
const project = join(tmp, "wallet-tool");
gitRepo(
  project,
  {
    "src/wallet.rs": "/// Loads a wallet file from disk.\npub fn load_wallet(path: &str) -> Wallet {\n    todo!()\n}\n",
    "README.md": "# wallet-tool\nReads wallet files. See src/wallet.rs.\n",
  },
  "Add the wallet loader",
);
// Its GitHub remote: the issues imported for ada/wallet-tool belong to it.
execFileSync("git", ["remote", "add", "origin", "https://github.com/ada/wallet-tool.git"], { cwd: project });
// Its issues, as `gh api repos/ada/wallet-tool/issues` prints them, and the same file cut short.
const issues = join(tmp, "issues.json");
writeFileSync(
  issues,
  JSON.stringify([
    {
      number: 7,
      title: "Loading a wallet from a read-only folder fails",
      state: "open",
      body: "load_wallet opens the file for writing, so a wallet on a read-only disk cannot be opened.",
      user: { login: "bob" },
      labels: [{ name: "bug" }],
      created_at: "2026-03-02T10:00:00Z",
      updated_at: "2026-03-03T09:30:00Z",
    },
  ]),
);
const badIssues = join(tmp, "cut-short.json");
writeFileSync(badIssues, readFileSync(issues, "utf8").slice(0, 60));
// The folder the app is started in the second time: its default workspace.
const startFolder = join(tmp, "ledger-tool");
gitRepo(
  startFolder,
  {
    "src/ledger.py": "def balance(entries):\n    return sum(e.amount for e in entries)\n",
    "src/report.py": "from ledger import balance\n\ndef report(entries):\n    print(balance(entries))\n",
    "README.md": "# ledger-tool\nSums ledger entries.\n",
  },
  "Add the ledger",
);
mkdirSync(OUT, { recursive: true });


// ---- the session in use ----

let sess = null;
const click = (css) => sess.click(css);
const type = (css, t) => sess.type(css, t);
const keys = (css, t) => sess.keys(css, t);
const exec = (script, args) => sess.exec(script, args);
const text = (css) => sess.text(css);
const until = (what, script, args, timeoutMs) => sess.until(what, script, args, timeoutMs);
async function screenshot(name) {
  await sess.screenshot(join(OUT, `${name}.png`));
  log(`screenshot ${name}.png`);
}
const tab = (name) => click(`#tab-${name}`);
/// Loads a listed model from the Models screen and waits until it is the one in use.
async function loadFromList(path) {
  const button = `tr[data-path="${path}"] button.load`;
  // The button is disabled while a run is live or a model loads, and a click on it then does
  // nothing. Once, late in a loaded suite, a load after a failed run never started (120 s);
  // a click on the still-disabled button would do that, but the page then was not seen: so
  // wait until it is enabled, and if a load still does not come, say what the page shows.
  // The screen reads its lists again each time it is shown and redraws them where they
  // changed: a click between WebDriver's hit test and such a redraw lands wherever the redraw
  // put something else (seen twice in CI, after the failed run: the button enabled, no load
  // begun, 120 s). So wait until the screen is no longer busy, then until the button is enabled.
  await until("the Models screen to finish reading its lists", "return !document.querySelector('#screen-models').hasAttribute('aria-busy');");
  await until("the load button to be enabled", `const r = document.querySelector('${button}'); return r && !r.disabled;`);
  await click(button);
  const page = () =>
    exec(
      `const r = document.querySelector('${button}');
       return JSON.stringify({ button: r?.textContent, disabled: r?.disabled, current: document.querySelector('.current-model')?.textContent,
                               loading: document.querySelector('#model-loading')?.textContent, error: document.querySelector('#model-error')?.textContent,
                               busy: document.querySelector('[aria-busy]')?.id ?? null,
                               notices: [...document.querySelectorAll('.notice')].map(n => n.textContent) });`,
    ).catch(() => "unreadable");
  try {
    // A load shows at once: its progress (the button disabled), its failure, or the model in use.
    await until("the load to begin", `const r = document.querySelector('${button}'); return (r && r.disabled) || document.querySelector('#model-error') !== null || null;`, [], 20_000);
    await until("the model to load", `const r = document.querySelector('${button}'); return r && r.textContent === 'In use';`);
  } catch (e) {
    throw new Error(`${e.message}; the page: ${await page()}`);
  }
}

/// Waits for the notice that settings were saved; a refusal (an error notice) fails at once.
async function settingsSaved() {
  const notice = await until(
    "the settings to be saved",
    "return [...document.querySelectorAll('.notice')].map(n => n.textContent).find(t => t.includes('Settings saved') || t.includes('Saving settings')) ?? null;",
  );
  if (!notice.includes("Settings saved")) throw new Error(`the settings were not saved: ${notice}`);
}

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

let driver = await startDriver();
let failed = false;
try {
  let coldStartMs = 0;
  await step("cold start to an interactive window", async () => {
    const t0 = Date.now();
    sess = await openSession(driver, APP, ["--home", home, "--no-workspace", "--no-model"]);
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
    await loadFromList(MODEL);
    // Two real models: SmolLM2, then Qwen2.5-Coder (the default), then SmolLM2 again under its
    // second name, which the rest of the test runs.
    await click(`tr[data-path="${MODEL_Q}"] button.load`);
    const qwen = await until(
      "the switch to Qwen",
      `const c = document.querySelector('.current-model'); return c && c.textContent.includes(${JSON.stringify(MODEL_Q)}) ? c.textContent : null;`,
    );
    // Its own facts, not SmolLM2's: another quantization.
    if (!/Q4_K_M/.test(qwen)) throw new Error(`the model in use shows another model's facts: ${qwen}`);
    await click(`tr[data-path="${MODEL_B}"] button.load`);
    const current = await until(
      "the switch",
      `const c = document.querySelector('.current-model'); return c && c.textContent.includes(${JSON.stringify(MODEL_B)}) ? c.textContent : null;`,
    );
    if (!/Memory/.test(current)) throw new Error(`no memory figure: ${current}`);
    // Three files, two of them with one GGUF name: each is listed under a name of its own.
    const names = await exec("return [...document.querySelectorAll('tr[data-path]')].map(r => r.dataset.model);");
    if (new Set(names).size !== names.length) throw new Error(`models listed under one name: ${names.join(", ")}`);
    const problem = await text(".warning");
    if (!problem || !problem.includes("broken.gguf") || !problem.includes("not a GGUF file")) throw new Error(`the unreadable file is not reported: ${problem}`);
    // A model that fails to load: the list says why before it is tried, its failure names it,
    // and the model in use stays in use.
    const why = await text(`tr[data-path="${FUTURE}"] .unsupported-why`);
    if (!why || !why.includes("zzyzx")) throw new Error(`the list does not say why the model is unsupported: ${why}`);
    await click(`tr[data-path="${FUTURE}"] button.load`);
    const failure = await until("the load failure", "const e = document.querySelector('#model-error'); return e ? e.textContent : null;");
    if (!failure.includes("future-arch.gguf") || !failure.includes("zzyzx")) throw new Error(`the failure does not say what and why: ${failure}`);
    const still = await until("the model in use", `const c = document.querySelector('.current-model'); return c ? c.textContent : null;`);
    if (!still.includes(MODEL_B)) throw new Error(`the model in use changed after a failed load: ${still}`);
    await screenshot("03-models");
  });

  await step("serve the model in use over the OpenAI API, and see a server it answers on listed", async () => {
    // Still on Models, SmolLM2 (its second name) in use.
    const port = await freePort();
    await type("#serve-port", String(port));
    await click("#serve-toggle");
    const url = await until("the server's URL", "const u = document.querySelector('#serve-url'); return u ? u.textContent : null;");
    if (url !== `http://127.0.0.1:${port}/v1`) throw new Error(`served at ${url}, not on port ${port}`);
    const models = await (await fetch(`${url}/models`)).json();
    if (models.data?.[0]?.context_length === undefined) throw new Error(`no model served: ${JSON.stringify(models)}`);
    const reply = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "Say hello." }], max_tokens: 4, temperature: 0 }),
    });
    const body = await reply.json();
    if (reply.status !== 200 || body.choices?.[0]?.message?.content === undefined || body.usage?.completion_tokens < 1) {
      throw new Error(`the chat completion failed: ${reply.status} ${JSON.stringify(body)}`);
    }
    // The same server, added as a model served elsewhere: probed, it answers.
    await type("#add-remote input[name=url]", `http://127.0.0.1:${port}`);
    await type("#add-remote input[name=name]", "here");
    await click("#add-remote button[type=submit]");
    await until("the server listed as answering", `const r = document.querySelector('tr[data-remote="here"]'); return r && r.textContent.includes('answers');`, undefined, 30000);
    await screenshot("03b-serving");
    await click('tr[data-remote="here"] button.remove');
    await until("the server removed", `return !document.querySelector('tr[data-remote="here"]');`);
    await click("#serve-toggle");
    await until("the server stopped", "return !document.querySelector('#serve-url');");
    const stopped = await fetch(`${url}/models`).then(() => "answered", () => "refused");
    if (stopped !== "refused") throw new Error("the server still answers after it was switched off");
  });

  await step("settings: a short run limit, and no search before the model's first step, are saved", async () => {
    await tab("settings");
    await until("the settings form", "return !!document.querySelector('#settings-form');");
    await type("#settings-form input[name=max_steps]", "4");
    // SmolLM2 copies Burrow's first search instead of writing the plan the next run asks for;
    // with the setting off it plans (the first search is covered by the UI's unit tests and
    // the agent's tests).
    if (!(await exec("return document.querySelector('#settings-form input[name=search_first]').checked;"))) {
      throw new Error("the first search is not on by default");
    }
    await click("#settings-form input[name=search_first]");
    await click("#save-settings");
    await settingsSaved();
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
  await step("run a task: steps appear, then the answer (and the plan, where the model writes one)", async () => {
    await tab("run");
    await keys(
      "#task",
      "First write a short plan, then find where the wallet file is loaded.\uE007",
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
    // Under issue 22's prompt (the plan optional, Burrow numbering its items) SmolLM2 no
    // longer writes one for this task; the plan panel's rendering is covered by the UI's unit
    // tests (renderTodos).
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
    await sess.wd("POST", "/window/rect", { width: 800, height: 600 });
    await sleep(500);
    const overflow = await exec("return document.documentElement.scrollWidth > window.innerWidth + 1;");
    await screenshot("10-run-800x600");
    if (overflow) throw new Error("the page scrolls sideways at 800x600");
    await sess.wd("POST", "/window/rect", { width: 1100, height: 760 });
  });

  await step("a run that errors: its message is shown, the app stays usable, the run is kept", async () => {
    // A context too small for the agent's prompt, set on the model in use and applied by loading
    // it again: the engine refuses the prompt with a typed error before llama.cpp could abort.
    await tab("models");
    const row = `tr[data-path="${MODEL_B}"]`;
    await click(`${row} details.model-settings summary`);
    await type(`${row} input[name=context_size]`, "256");
    await click(`${row} details.model-settings button[type=submit]`);
    await settingsSaved();
    for (const path of [MODEL, MODEL_B]) {
      await loadFromList(path);
    }
    const current = await text(".current-model");
    if (!current.includes("256 tokens")) throw new Error(`the context setting was not applied: ${current}`);
    await tab("run");
    await type("#task", "Where is the wallet loaded?");
    await keys("#task", "\uE007");
    await until("the run to start", "return document.querySelector('.run-meta .badge')?.textContent === 'Running' || document.querySelector('.run-meta .badge')?.textContent === 'Error' || null;");
    const end = await until("the run to end", "const b = document.querySelector('.run-meta .badge'); return b && b.textContent !== 'Running' ? b.textContent : null;", [], 120_000);
    const message = await exec("return [...document.querySelectorAll('#run-main .error-box')].map(e => e.textContent).join(' | ');");
    log(`the run ended as ${end}: ${message}`);
    if (end !== "Error" && end !== "Failed") throw new Error(`the run ended as ${end}`);
    if (!/256/.test(message) || !/token/.test(message)) throw new Error(`the message does not say what went wrong: ${message}`);
    const runId = Number((await text(".run-meta")).match(/run (\d+)/)?.[1] ?? 0);
    await screenshot("11-run-error");
    // Still usable: the task box takes a task, a model loads, and History kept the run.
    if (await exec("return document.querySelector('#task').disabled;")) throw new Error("the task box stayed disabled");
    await tab("models");
    await loadFromList(MODEL);
    await tab("history");
    const kept = await until("the failed run in history", `const r = document.querySelector('tr[data-run="${runId}"]'); return r ? r.querySelector('.badge').textContent : null;`);
    if (kept !== end) throw new Error(`history shows run ${runId} as ${kept}, the run view as ${end}`);
  });

  await step("import issues: a malformed file is refused, then the good one is indexed", async () => {
    const job = (file, state) =>
      `const j = [...document.querySelectorAll('.index-job.index-${state}')].find(j => j.dataset.source.endsWith(${JSON.stringify(file)})); return j ? j.textContent : null;`;
    await tab("workspace");
    await type("#import-path", badIssues);
    await type("#import-slug", "ada/wallet-tool");
    await click("#import");
    const err = await until("the malformed import's message", job("cut-short.json", "failed"));
    if (!/cut-short\.json/.test(err) || !/line|column|byte|EOF|end/i.test(err)) throw new Error(`the message does not say where the file is broken: ${err}`);
    const repo = await text('#repos tr[data-repo="wallet-tool"]');
    if (!repo || !repo.includes("ready")) throw new Error(`the indexed repository changed after a failed import: ${repo}`);
    await type("#import-path", issues);
    await click("#import");
    const done = await until("the import", job("issues.json", "done"));
    if (!/1 issue\b/.test(done) || /files? indexed/.test(done)) throw new Error(`unexpected import report: ${done}`);
    // Imported into the repository whose remote it names, not beside it.
    const row = await until("the issue count", `const r = document.querySelector('#repos tr[data-repo="wallet-tool"]'); return r && r.children[4].textContent === '1' ? r.textContent : null;`);
    log(`after the import: ${row}`);
    await screenshot("12-workspace-import");
  });

  await step("open what a trace links to: a file and an issue", async () => {
    // A trace whose links are known (SmolLM2 decides which tools it calls): a step as the agent
    // would stream it, fed through the page's own event dispatch (the ?bench test hook).
    const href = await exec("return location.href;");
    await sess.wd("POST", "/url", { url: `${href.split("?")[0]}?bench` });
    await until("the page with its test hook", "return document.body.dataset.ready === '1' && !!window.burrowBench;");
    await tab("run");
    const agent = (event) => ({ kind: "agent", event });
    const observation = "src/wallet.rs:2: pub fn load_wallet(path: &str) -> Wallet {\nReported in #7.";
    // The step's record, with the locators its tool gave for what the observation shows.
    const step = {
      index: 0, prompt_tokens: 600, cached_tokens: 0, output: "{}", thought: "Search the code for the loader.",
      action: { tool: "search_code", args: { query: "load_wallet", repo: "wallet-tool" } },
      final_answer: null, observation, error: null, todos: [],
      items: [
        { kind: "file", path: "src/wallet.rs", line: 2, repo: "wallet-tool" },
        { kind: "issue", number: 7, repo: null },
      ],
      generated_tokens: 30, setup_ms: 1, ttft_ms: 100, decode_ms: 300, tool_ms: 2,
    };
    const events = [
      agent({ type: "run_started", run_id: null, task: "Where is the wallet loaded?", protocol: "json-typed", model: "e2e" }),
      agent({ type: "step_started", index: 0 }),
      agent({ type: "step_finished", step }),
    ];
    await exec("window.burrowBench.feed(arguments[0]); return true;", [events]);
    await until("the links", "return document.querySelectorAll('.step a.item-link').length >= 2 || null;");
    await click(".step a.link-file");
    const file = await until("the file", "const d = document.querySelector('#item-viewer[open] pre.item-text'); return d ? d.textContent : null;");
    if (!file.includes("pub fn load_wallet")) throw new Error(`the viewer does not show the file: ${file}`);
    const title = await text("#item-viewer h2");
    if (title !== "src/wallet.rs:2") throw new Error(`the viewer is titled ${title}`);
    await screenshot("13-item-file");
    // Esc closes the dialog, as a dialog should.
    await keys("#item-viewer header button", "\uE00C");
    await until("the viewer to close", "return !document.querySelector('#item-viewer[open]');");
    await click(".step a.link-issue");
    const issue = await until("the issue", "const d = document.querySelector('#item-viewer[open] pre.item-text'); return d ? d.textContent : null;");
    if (!issue.includes("read-only folder") || !issue.includes("bob")) throw new Error(`the viewer does not show issue #7: ${issue}`);
    await screenshot("14-item-issue");
    await click("#item-viewer header button");
    await until("the viewer to close", "return !document.querySelector('#item-viewer[open]');");
    // The fed run ends, so the task box takes the next task.
    await exec("window.burrowBench.feed(arguments[0]); return true;", [[{ kind: "run_ended", run_id: null, status: "succeeded", final_answer: "In src/wallet.rs.", error: null }]]);
    await until("the task box", "return !document.querySelector('#task').disabled;");
  });

  await step("search the workspace from the Search screen, and open a result", async () => {
    await tab("search");
    // Typing alone searches, once typing pauses.
    await type("#search-query", "wallet read-only folder");
    const hits = "return [...document.querySelectorAll('#search-results li.search-hit')].map(li => li.dataset.kind + ' ' + li.querySelector('.hit-title').textContent);";
    const all = await until("the results", `const r = (() => { ${hits} })(); return r.length ? r : null;`);
    // Issue #7 says all three words; the file and the README say "wallet" alone.
    if (!all[0].startsWith("issue ") || !all[0].includes("read-only folder")) throw new Error(`the issue is not first: ${JSON.stringify(all)}`);
    const marks = await exec("return [...document.querySelectorAll('#search-results li.search-hit:first-child mark')].map(m => m.textContent);");
    if (!marks.some((m) => /read|only|folder/i.test(m))) throw new Error(`no match is marked in the first snippet: ${JSON.stringify(marks)}`);
    // No vectors in this workspace: a hybrid search says it ranked by words alone.
    const note = await text("#search-note");
    if (!note.includes("ranked by words only")) throw new Error(`the note does not say how it ranked: ${note}`);
    await screenshot("14b-search");
    // Kept to code, the same words find the loader.
    await exec("const k = document.querySelector('#search-kind'); k.value = 'code'; k.dispatchEvent(new Event('change')); return true;");
    const code = await until("the code results", `const r = (() => { ${hits} })(); return r.length && r.every(h => h.startsWith('code ')) ? r : null;`);
    if (!code[0].includes("src/wallet.rs")) throw new Error(`the loader is not found: ${JSON.stringify(code)}`);
    await click("#search-results li.search-hit:first-child .hit-title");
    const file = await until("the file", "const d = document.querySelector('#item-viewer[open] pre.item-text'); return d ? d.textContent : null;");
    if (!file.includes("pub fn load_wallet")) throw new Error(`the viewer does not show the file: ${file}`);
    await click("#item-viewer header button");
    await until("the viewer to close", "return !document.querySelector('#item-viewer[open]');");
    // A search that finds nothing says so.
    await exec("const k = document.querySelector('#search-kind'); k.value = ''; k.dispatchEvent(new Event('change')); return true;");
    await type("#search-query", "zyzzyva");
    await keys("#search-query", "\uE007");
    await until("the empty result", "const e = document.querySelector('#search-results li.empty'); return e ? e.textContent : null;");
    // Esc empties the box and the page.
    await keys("#search-query", "\uE00C");
    await until("the page to empty", "return document.querySelector('#search-query').value === '' && document.querySelectorAll('#search-results li').length === 0 || null;");
    await tab("run");
  });

  await step("type in a model's settings while the Models screen redraws", async () => {
    // A load's progress redraws the screen many times a second, and so does a model list coming
    // back while someone types. A redraw moved the focused input and the rest of the keys went
    // nowhere: here "4" of "4096" arrived, and on CI a save after typing "256" never came
    // (most likely "2" or "25", which the core refuses). Progress events fed every few
    // milliseconds through the page's dispatch redraw the screen all the while the keys are typed.
    await tab("models");
    const row = `tr[data-path="${MODEL_B}"]`;
    await until("the models list", `return !!document.querySelector('${row}');`);
    await click(`${row} details.model-settings summary`);
    await until("the settings form to open", `return document.querySelector('${row} details.model-settings')?.open || null;`);
    await exec(
      "let n = 0; window.e2eEvents = 0; window.e2ePump = setInterval(() => { window.burrowBench.feed([{ kind: 'load_progress', model: 'e2e redraw', progress: (n++ % 100) / 100 }]); window.e2eEvents++; }, 4); return true;",
    );
    try {
      await type(`${row} input[name=context_size]`, "4096");
      await type(`${row} input[name=threads]`, "2");
    } finally {
      await exec("clearInterval(window.e2ePump); return true;");
    }
    const events = await exec("return window.e2eEvents;");
    const typed = await exec(`return ['context_size', 'threads'].map(n => document.querySelector('${row} input[name=' + n + ']').value);`);
    log(`typed ${JSON.stringify(typed)} over ${events} progress events`);
    if (events < 5) throw new Error(`only ${events} progress events came while typing`);
    if (typed[0] !== "4096" || typed[1] !== "2") throw new Error(`keys were lost while the screen redrew: ${JSON.stringify(typed)}`);
    // The fake load ends; a real load applies what was typed.
    await exec("window.burrowBench.feed([{ kind: 'load_failed', model: 'e2e redraw', message: 'fed by the test' }]); return true;");
    await until("the fed load to end", "return !!document.querySelector('#model-error');");
    await click(`${row} details.model-settings button[type=submit]`);
    await settingsSaved();
    await screenshot("15-model-settings");
    // Opened over the rows below, not widening the table past the window.
    if (await exec("return document.documentElement.scrollWidth > window.innerWidth + 1 || document.querySelector('#screen-models').scrollWidth > document.querySelector('#screen-models').clientWidth + 1;")) throw new Error("the open settings form widens the page");
    await keys(`${row} input[name=threads]`, "\uE00C");
    await until("Esc to close the settings form", `return !document.querySelector('${row} details.model-settings').open;`);
    await loadFromList(MODEL_B);
    const current = await text(".current-model");
    if (!current.includes("4096 tokens") || !/Threads\s*2/.test(current)) throw new Error(`the settings typed were not applied: ${current}`);
  });

  let killedRun = 0;
  let keptSteps = 0;
  await step("close the app in the middle of a run", async () => {
    await tab("run");
    await type("#task", "Find where the wallet file is loaded and explain how.");
    await keys("#task", "\uE007");
    // A step kept in the database, and the next one streaming, when the app goes.
    await until("a second step", "return document.querySelectorAll('.step').length >= 2 ? true : null;", [], 300_000);
    killedRun = Number((await text(".run-meta")).match(/run (\d+)/)?.[1] ?? 0);
    keptSteps = (await exec("return document.querySelectorAll('.step').length;")) - 1;
    if (!killedRun) throw new Error("the run has no id");
    // The window closed as a person closes it, and the app left to exit by itself, before the
    // session ends: started again only once the closed app is gone, as a person would (while it
    // lives it holds the run's lock, and the next start rightly leaves a run whose process lives
    // as running). Ending the session first and stopping the driver at once left the app running
    // with its window open whenever the driver was stopped before it had closed the app (seen on
    // CI and reproduced here, 3 times in 6).
    // Whether the driver answers before the app is gone does not matter: the app's exit does.
    await sess.closeWindow().catch(() => undefined);
    const t0 = Date.now();
    while (appProcesses(home).length > 0) {
      if (Date.now() - t0 > 30_000) throw new Error(`the app did not exit within 30 s of its window closing: pid ${appProcesses(home).join(", ")}`);
      await sleep(100);
    }
    await sess.close().catch(() => undefined);
    sess = null;
    await driver.stop();
    log(`the closed app was gone ${Date.now() - t0} ms after its window closed`);
  });

  let restartMs = 0;
  await step("start as the README's run command does: default workspace and model (dark theme)", async () => {
    // Started in another folder, with no workspace or model arguments, and a dark desktop.
    driver = await startDriver({ cwd: startFolder, env: { GTK_THEME: "Adwaita:dark" } });
    const t0 = Date.now();
    sess = await openSession(driver, APP, ["--home", home]);
    await until("the page to be ready", "return document.body.dataset.ready === '1';");
    restartMs = Date.now() - t0;
    if (!(await exec("return matchMedia('(prefers-color-scheme: dark)').matches;"))) throw new Error("the page is not in the dark theme");
    const bg = await exec("return getComputedStyle(document.body).backgroundColor;");
    const [r, g, b] = bg.match(/\d+/g).map(Number);
    if (r + g + b > 3 * 100) throw new Error(`the dark theme's background is light: ${bg}`);
    await until("the default model to load", "const c = document.querySelector('#current-model'); return c ? c.textContent : null;", [], 120_000);
    await tab("workspace");
    await until(
      "the start folder to be indexed",
      "const r = document.querySelector('#repos tr[data-repo=\"ledger-tool\"]'); return r && r.textContent.includes('ready') ? r.textContent : null;",
    );
    const job = await text(".index-job");
    if (!job || !/3 files indexed/.test(job)) throw new Error(`the start folder's indexing was not shown: ${job}`);
    // What the first session indexed is still there.
    const kept = await text('#repos tr[data-repo="wallet-tool"]');
    if (!kept || !kept.includes("ready")) throw new Error(`the first workspace was lost: ${kept}`);
    await screenshot("16-dark-workspace");
  });

  await step("continue the interrupted run", async () => {
    await tab("history");
    const status = await until("the interrupted run", `const r = document.querySelector('tr[data-run="${killedRun}"]'); return r ? r.querySelector('.badge').textContent : null;`);
    if (status !== "Interrupted") throw new Error(`run ${killedRun} is ${status}, not interrupted`);
    await screenshot("17-dark-history");
    await click(`tr[data-run="${killedRun}"] button.resume-run`);
    await until("the run to go on", "return document.querySelector('.run-meta .badge')?.textContent === 'Running';");
    const meta = await text(".run-meta");
    if (!meta.includes(`run ${killedRun}`)) throw new Error(`continued the wrong run: ${meta}`);
    const shown = await exec("return document.querySelectorAll('.step').length;");
    if (shown < keptSteps) throw new Error(`the continued run shows ${shown} steps, fewer than the ${keptSteps} kept`);
    const end = await until("the run to end", "const b = document.querySelector('.run-meta .badge'); return b && b.textContent !== 'Running' ? b.textContent : null;", [], 400_000);
    if (end === "Interrupted" || end === "Error") throw new Error(`the continued run ended as ${end}`);
    const steps = await exec("return document.querySelectorAll('.step').length;");
    if (steps <= keptSteps) throw new Error(`no new step after continuing (${steps} steps)`);
    log(`run ${killedRun} continued from ${keptSteps} kept steps to ${steps}: ${end}`);
    await screenshot("18-dark-run-continued");
  });

  writeFileSync(join(OUT, "results.json"), JSON.stringify({ coldStartMs, restartMs, results }, null, 2));
  log(`cold start to an interactive window: ${coldStartMs} ms (restart with the default model and workspace: ${restartMs} ms)`);
} catch (e) {
  failed = true;
  writeFileSync(join(OUT, "results.json"), JSON.stringify({ results, error: String(e) }, null, 2));
} finally {
  await sess?.close().catch(() => undefined);
  await driver.stop();
  if (existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
