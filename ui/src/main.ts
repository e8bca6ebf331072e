// The app's page: five screens over the shell's commands. Events from the shell are queued and
// applied once per animation frame (however fast tokens arrive, each frame reduces all of them
// and redraws once, and none is dropped).

import "./style.css";
import { open as openDialog } from "@tauri-apps/plugin-dialog";
import { api, errorMessage } from "./api";
import { formatBytes, formatMs, formatTime, h, progressBar, replaceChildren, reportSummary, saveFocus } from "./dom";
import { describe } from "./links";
import {
  canResume,
  initialState,
  isLive,
  reduceAll,
  resumeRun,
  runFromRecord,
  startRun,
  type State,
} from "./state";
import { Timeline, renderTodos, statusBadge } from "./timeline";
import type {
  AppEvent,
  AppInfo,
  Discovery,
  ItemRef,
  ModelInfo,
  RepoStatus,
  RunRecord,
  Settings,
} from "./types";

type Screen = "run" | "models" | "workspace" | "history" | "settings";
const SCREENS: [Screen, string][] = [
  ["run", "Run"],
  ["models", "Models"],
  ["workspace", "Workspace"],
  ["history", "History"],
  ["settings", "Settings"],
];

// ---- state and the frame loop ----

let state: State = initialState;
const queue: AppEvent[] = [];
let frame = 0;
let info: AppInfo | null = null;
let screen: Screen = "run";
let discovery: Discovery | null = null;
let repos: RepoStatus[] = [];
let runs: RunRecord[] = [];
let settings: Settings | null = null;
/// Messages from commands that failed outside any stream (shown until dismissed).
let notices: { id: number; text: string; error: boolean }[] = [];
let noticeId = 0;
/// Off only in the UI benchmark, to compare with rendering every event as it comes.
let coalesce = true;
/// The benchmark's record of how long each flush took (reduce and redraw), when it asks.
let flushTimes: number[] | null = null;

function dispatch(ev: AppEvent): void {
  queue.push(ev);
  if (!coalesce) flush();
  else if (!frame) frame = requestAnimationFrame(flush);
}

function flush(): void {
  if (frame) cancelAnimationFrame(frame);
  frame = 0;
  const t0 = flushTimes ? performance.now() : 0;
  const events = queue.splice(0);
  const before = state;
  state = reduceAll(state, events);
  // Lists the events changed are read again from the core.
  if (events.some((e) => e.kind === "indexed" || e.kind === "index_failed")) void refreshRepos();
  if (events.some((e) => e.kind === "run_ended")) void refreshRuns();
  if (state !== before) render();
  flushTimes?.push(performance.now() - t0);
}

function notify(text: string, error = true): void {
  const id = ++noticeId;
  notices = [...notices, { id, text, error }];
  renderNotices();
  // Confirmations go by themselves; errors stay until dismissed.
  if (!error) {
    setTimeout(() => {
      notices = notices.filter((n) => n.id !== id);
      renderNotices();
    }, 4000);
  }
}

async function attempt<T>(what: string, f: () => Promise<T>): Promise<T | undefined> {
  try {
    return await f();
  } catch (e) {
    notify(`${what}: ${errorMessage(e)}`);
    return undefined;
  }
}

// ---- layout ----

const app = document.getElementById("app") as HTMLElement;
const nav = h("nav", { class: "tabs", role: "tablist", "aria-label": "Screens" });
const statusArea = h("div", { class: "status-area", "aria-live": "polite" });
const noticeArea = h("div", { class: "notices", role: "alert" });
const main = h("main", { id: "main" });
app.append(h("header", { class: "topbar" }, h("h1", null, "Burrow"), nav, statusArea), noticeArea, main);

const views: Record<Screen, HTMLElement> = {
  run: h("div", { class: "screen screen-run", id: "screen-run" }),
  models: h("div", { class: "screen", id: "screen-models" }),
  workspace: h("div", { class: "screen", id: "screen-workspace" }),
  history: h("div", { class: "screen", id: "screen-history" }),
  settings: h("div", { class: "screen", id: "screen-settings" }),
};
for (const v of Object.values(views)) main.append(v);

function renderNav(): void {
  replaceChildren(
    nav,
    SCREENS.map(([id, label]) =>
      h(
        "button",
        {
          role: "tab",
          id: `tab-${id}`,
          "aria-selected": screen === id ? "true" : "false",
          class: screen === id ? "active" : "",
          onclick: () => show(id),
        },
        label,
      ),
    ),
  );
}

function show(s: Screen): void {
  screen = s;
  // Focus must not stay inside a screen being hidden: keyboard users would type into nothing.
  const focused = document.activeElement;
  if (focused instanceof HTMLElement && focused.closest(".screen") && !views[s].contains(focused)) {
    focused.blur();
  }
  for (const [id, v] of Object.entries(views)) v.hidden = id !== s;
  renderNav();
  if (s === "models") void refreshModels();
  if (s === "workspace") void refreshRepos();
  if (s === "history") void refreshRuns();
  if (s === "settings") void refreshSettings();
  if (s === "run") taskInput.focus();
}

function renderNotices(): void {
  replaceChildren(
    noticeArea,
    notices.map((n) =>
      h(
        "div",
        { class: `notice${n.error ? " error" : ""}` },
        h("span", null, n.text),
        h(
          "button",
          {
            class: "link",
            "aria-label": "Dismiss",
            onclick: () => {
              notices = notices.filter((x) => x.id !== n.id);
              renderNotices();
            },
          },
          "✕",
        ),
      ),
    ),
  );
}

function renderStatus(): void {
  const m = state.model;
  const parts: (HTMLElement | string)[] = [];
  if (m.loading) {
    parts.push(
      h("span", { class: "pill" }, `Loading ${m.loading.model} `, progressBar(m.loading.progress, 1, "Model loading")),
    );
  } else if (m.current) {
    parts.push(h("span", { class: "pill", id: "current-model" }, `${m.current.name} · ${m.current.quantization}`));
  } else {
    parts.push(h("span", { class: "pill muted" }, "No model loaded"));
  }
  const active = state.indexing.filter((v) => v.state === "indexing");
  if (active.length) parts.push(h("span", { class: "pill" }, `Indexing ${active.map((v) => v.repo || v.source).join(", ")}`));
  if (isLive(state.run)) parts.push(h("span", { class: "pill live" }, "Running"));
  replaceChildren(statusArea, parts);
}

// ---- run screen ----

const taskInput = h("textarea", {
  id: "task",
  rows: 2,
  placeholder: "Ask about your repositories and issues. Enter runs, Shift+Enter adds a line, Esc stops.",
  "aria-label": "Task",
});
const runButton = h("button", { id: "run", class: "primary", onclick: () => void run() }, "Run");
const stopButton = h("button", { id: "stop", onclick: () => void stop() }, "Stop");
const runHeader = h("div", { class: "run-header" });
const timeline = new Timeline((item) => void openItem(item));
const todoPanel = h("div", { class: "todo-panel", id: "todos" });
const itemViewer = h("dialog", { class: "item-viewer", id: "item-viewer" });

views.run.append(
  h("form", { class: "task-form", onsubmit: (e: Event) => { e.preventDefault(); void run(); } }, taskInput, runButton, stopButton),
  h(
    "div",
    { class: "run-body" },
    h("div", { class: "run-main", id: "run-main" }, runHeader, timeline.root),
    h("aside", { class: "plan", "aria-label": "Plan" }, h("h2", null, "Plan"), todoPanel),
  ),
  itemViewer,
);

taskInput.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    void run();
  }
});

document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || e.defaultPrevented) return; // taken by what had focus (a settings form)
  if (itemViewer.open) return; // the dialog closes itself
  if (isLive(state.run)) {
    e.preventDefault();
    void stop();
  }
});

async function run(): Promise<void> {
  const task = taskInput.value.trim();
  if (!task || isLive(state.run)) return;
  if (!state.model.current) {
    notify("No model is loaded: load one under Models first.");
    return;
  }
  state = startRun(state, task);
  render();
  await drive(() => api.startRun(task, dispatch));
}

async function resume(record: RunRecord): Promise<void> {
  const full = await attempt("Opening the run", () => api.getRun(record.id));
  if (!full) return;
  state = resumeRun(state, runFromRecord(full));
  show("run");
  render();
  await drive(() => api.resumeRun(record.id, dispatch));
}

/// Runs a command that streams a run; its failure (no model, a run already going) ends the
/// view's run with the message.
async function drive(f: () => Promise<unknown>): Promise<void> {
  try {
    await f();
  } catch (e) {
    const message = errorMessage(e);
    dispatch({ kind: "run_ended", run_id: state.run?.runId ?? null, status: "error", final_answer: null, error: message });
  }
}

async function stop(): Promise<void> {
  await attempt("Stopping the run", () => api.stopRun());
}

async function openItem(item: ItemRef): Promise<void> {
  replaceChildren(
    itemViewer,
    h("header", null, h("h2", null, describe(item)), h("button", { onclick: () => itemViewer.close(), "aria-label": "Close" }, "Close")),
    h("p", { class: "muted" }, "Loading…"),
  );
  if (!itemViewer.open) itemViewer.showModal();
  let body: HTMLElement;
  try {
    body = h("pre", { class: "item-text" }, await api.openItem(item));
  } catch (e) {
    body = h("p", { class: "error-box" }, errorMessage(e));
  }
  itemViewer.querySelector("p, pre")?.replaceWith(body);
}

let renderedRun: State["run"] | undefined;
function renderRun(): void {
  const r = state.run;
  const live = isLive(r);
  runButton.disabled = live;
  stopButton.disabled = !live;
  taskInput.disabled = live;
  if (r === renderedRun) return;
  const scroller = document.getElementById("run-main");
  const atBottom = scroller ? scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80 : true;
  if (!renderedRun || !r || renderedRun.task !== r.task || renderedRun.status !== r.status || renderedRun.runId !== r.runId) {
    replaceChildren(
      runHeader,
      r
        ? [
            h("h2", { class: "run-task" }, r.task || "(a run in progress)"),
            h("div", { class: "run-meta" }, statusBadge(r.status), r.runId !== null ? ` run ${r.runId}` : "", r.model ? ` · ${r.model}` : "", r.protocol ? ` · ${r.protocol}` : "", r.fromHistory ? " · from history" : ""),
            r.fromHistory && canResume(r.status) && r.runId !== null
              ? h("button", { onclick: () => void resume({ id: r.runId } as RunRecord) }, "Continue this run")
              : null,
          ]
        : h("p", { class: "muted empty" }, "Ask a question to start. The plan and every step show here as the agent works."),
    );
  }
  if (!renderedRun || !r || renderedRun.todos !== r.todos) renderTodos(todoPanel, r?.todos ?? [], r?.todoChanged ?? []);
  timeline.update(r);
  renderedRun = r;
  if (live && atBottom && scroller) scroller.scrollTop = scroller.scrollHeight;
}

// ---- models screen ----

async function refreshModels(): Promise<void> {
  const d = await attempt("Finding models", () => api.listModels());
  if (d) discovery = d;
  if (!settings) settings = (await attempt("Reading settings", () => api.getSettings())) ?? null;
  renderModels();
}

async function loadModel(m: ModelInfo): Promise<void> {
  try {
    await api.loadModel(m.path, dispatch);
  } catch {
    // The failure arrives as a load_failed event and is shown on this screen.
  }
}

function renderModels(): void {
  const focus = saveFocus(views.models);
  const m = state.model;
  const current = m.current;
  const parts: (HTMLElement | null)[] = [h("h2", null, "Models")];
  if (m.loading) {
    parts.push(h("div", { class: "card", id: "model-loading" }, `Loading ${m.loading.model}: ${(m.loading.progress * 100).toFixed(0)}%`, progressBar(m.loading.progress, 1, "Model loading")));
  }
  if (m.error) {
    // The core's message names the file where one is involved; the label is the listed name.
    parts.push(h("div", { class: "error-box", role: "alert", id: "model-error" }, h("strong", null, `${m.error.model} could not be loaded: `), m.error.message));
  }
  if (current) {
    parts.push(
      h(
        "div",
        { class: "card current-model" },
        h("h3", null, `In use: ${current.name}`),
        h(
          "dl",
          { class: "facts" },
          fact("Quantization", current.quantization),
          fact("Context", `${current.context_size} tokens`),
          fact("Threads", String(current.threads)),
          fact("GPU layers", String(current.gpu_layers)),
          fact("Memory", formatBytes(current.memory_bytes)),
          fact("Loaded in", formatMs(current.load_ms)),
          fact("File", current.path),
        ),
        current.fallback_template ? h("p", { class: "muted" }, "This model has no chat template; ChatML is used.") : null,
        h("button", { id: "unload", disabled: isLive(state.run), onclick: () => void attempt("Unloading", async () => { await api.unloadModel(); state = { ...state, model: { ...state.model, current: null } }; render(); }) }, "Unload"),
      ),
    );
  }
  const models = discovery?.models ?? [];
  parts.push(
    h(
      "table",
      { class: "list models-table" },
      h("thead", null, h("tr", null, ["Model", "Quantization", "Size", "Context", "Where", ""].map((c) => h("th", null, c)))),
      h(
        "tbody",
        null,
        models.map((mi) => {
          const inUse = current?.path === mi.path;
          return h(
              "tr",
              { "data-model": mi.name, "data-path": mi.path },
              h(
                "td",
                null,
                mi.name,
                // Why, up front; Load stays, and its failure gives llama.cpp's own account.
                mi.supported
                  ? null
                  : [" ", h("span", { class: "badge status-error" }, "unsupported"), h("div", { class: "muted unsupported-why" }, `Architecture "${mi.architecture}" is not one this build of llama.cpp runs as a chat model.`)],
              ),
              h("td", null, mi.quantization),
              h("td", null, formatBytes(mi.file_size)),
              h("td", null, mi.context_length ? String(mi.context_length) : "?"),
              h("td", { class: "path", title: mi.path }, `${mi.source}: ${mi.path}`),
              h(
                "td",
                { class: "actions" },
                h("button", { class: "load", disabled: inUse || m.loading !== null || isLive(state.run), onclick: () => void loadModel(mi) }, inUse ? "In use" : current ? "Switch" : "Load"),
                modelSettingsButton(mi),
              ),
            );
        }),
      ),
    ),
  );
  if (models.length === 0) parts.push(h("p", { class: "muted" }, "No models found. Put .gguf files in Burrow's models folder, or fetch the default one with python3 models/fetch.py."));
  for (const p of discovery?.problems ?? []) parts.push(h("p", { class: "warning" }, `Skipped ${p.error}`));
  replaceChildren(views.models, parts);
  focus.restore();
}

function fact(k: string, v: string): HTMLElement[] {
  return [h("dt", null, k), h("dd", null, v)];
}

// Each model's settings form, kept across redraws of the Models screen (load progress redraws it
// many times a second): a form someone has opened and is typing in stays open with what they typed.
const settingsForms = new Map<string, { saved: string; el: HTMLElement }>();

function modelSettingsButton(mi: ModelInfo): HTMLElement {
  const ms = settings?.models[mi.path] ?? { context_size: null, threads: null, gpu_layers: null };
  const saved = JSON.stringify(ms);
  const kept = settingsForms.get(mi.path);
  if (kept && kept.saved === saved) return kept.el;
  const details = h("details", { class: "model-settings" }, h("summary", null, "Settings"));
  settingsForms.set(mi.path, { saved, el: details });
  const num = (name: string, label: string, value: number | null, hint: string) =>
    h("label", null, label, h("input", { type: "number", min: 0, name, value: value ?? "", placeholder: hint }));
  const form = h(
    "form",
    null,
    num("context_size", "Context size", ms.context_size, "default"),
    num("threads", "Threads", ms.threads, "auto"),
    num("gpu_layers", "GPU layers", ms.gpu_layers, "0"),
    h("button", { type: "submit" }, "Save"),
    h("span", { class: "muted" }, " Applies at the next load."),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const read = (k: string) => {
      const v = String(data.get(k) ?? "").trim();
      return v === "" ? null : Number(v);
    };
    void saveSettings((s) => ({
      ...s,
      models: { ...s.models, [mi.path]: { context_size: read("context_size"), threads: read("threads"), gpu_layers: read("gpu_layers") } },
    }));
  });
  // Esc closes it as it would a menu, back on its summary for the keyboard.
  details.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || !details.open) return;
    e.preventDefault();
    details.open = false;
    details.querySelector("summary")?.focus();
  });
  details.append(form);
  return details;
}

// ---- workspace screen ----

async function refreshRepos(): Promise<void> {
  const r = await attempt("Reading the workspace", () => api.workspaceStatus());
  if (r) repos = r;
  renderWorkspace();
}

function indexCommand(f: () => Promise<unknown>): void {
  // Failures arrive as index_failed events and show beside their source.
  f().catch(() => undefined);
}

const addPath = h("input", { id: "add-path", type: "text", placeholder: "/path/to/a/repository", "aria-label": "Folder to add" });
const importPath = h("input", { id: "import-path", type: "text", placeholder: "/path/to/issues.json or a folder", "aria-label": "Issues file or folder" });
const importSlug = h("input", { id: "import-slug", type: "text", placeholder: "owner/name", "aria-label": "Repository the issues belong to" });

const workspaceForms = h(
  "div",
  { class: "workspace-forms" },
  h(
    "form",
    { class: "card", id: "add-form", onsubmit: (e: Event) => { e.preventDefault(); const p = addPath.value.trim(); if (p) indexCommand(() => api.addRepository(p, dispatch)); } },
    h("h3", null, "Add a repository"),
    h("div", { class: "row" }, addPath, h("button", { type: "button", onclick: () => void pick(addPath, true) }, "Choose folder…"), h("button", { type: "submit", class: "primary", id: "add" }, "Add and index")),
  ),
  h(
    "form",
    { class: "card", id: "import-form", onsubmit: (e: Event) => { e.preventDefault(); const p = importPath.value.trim(); const s = importSlug.value.trim(); if (!p || !s) { notify("Importing needs a file or folder and the repository it belongs to (owner/name)."); return; } indexCommand(() => api.importIssues(p, s, dispatch)); } },
    h("h3", null, "Import issues and pull requests"),
    h("div", { class: "row" }, importPath, h("button", { type: "button", onclick: () => void pick(importPath, false) }, "Choose file…"), h("button", { type: "button", onclick: () => void pick(importPath, true) }, "Choose folder…")),
    h("div", { class: "row" }, importSlug, h("button", { type: "submit", class: "primary", id: "import" }, "Import")),
  ),
);
const indexingArea = h("div", { class: "indexing", id: "indexing" });
const reposArea = h("div", { id: "repos" });
views.workspace.append(h("h2", null, "Workspace"), workspaceForms, indexingArea, reposArea);

async function pick(input: HTMLInputElement, directory: boolean): Promise<void> {
  const chosen = await attempt("Opening the file dialog", () =>
    openDialog({ directory, multiple: false, filters: directory ? undefined : [{ name: "Issues export", extensions: ["json", "jsonl"] }] }),
  );
  if (typeof chosen === "string") input.value = chosen;
}

function renderIndexing(): void {
  replaceChildren(
    indexingArea,
    state.indexing
      .slice()
      .reverse()
      .map((v) =>
        h(
          "div",
          { class: `index-job index-${v.state}`, "data-source": v.source },
          h("div", { class: "row" }, h("strong", null, v.repo || v.source), h("span", { class: "muted" }, v.state === "indexing" ? ` ${v.phase} ${v.done}/${v.total || "?"}` : v.state === "done" ? " indexed" : " failed")),
          v.state === "indexing" ? progressBar(v.done, v.total, `Indexing ${v.source}`) : null,
          v.report
            ? h("div", { class: "muted" }, reportSummary(v.report))
            : null,
          v.error ? h("p", { class: "error-box", role: "alert" }, v.error) : null,
          v.notes.length ? h("ul", { class: "muted" }, v.notes.slice(-5).map((n) => h("li", null, n))) : null,
        ),
      ),
  );
}

function renderWorkspace(): void {
  renderIndexing();
  replaceChildren(
    reposArea,
    repos.length === 0
      ? h("p", { class: "muted" }, "Nothing indexed yet.")
      : h(
          "table",
          { class: "list repos-table" },
          h("thead", null, h("tr", null, ["Source", "Status", "Files", "Commits", "Issues", "PRs", "Indexed", ""].map((c) => h("th", null, c)))),
          h(
            "tbody",
            null,
            repos.map((r) =>
              h(
                "tr",
                { "data-repo": r.name },
                h("td", null, h("strong", null, r.name), h("div", { class: "muted path" }, r.root ?? r.remote ?? "")),
                h("td", null, h("span", { class: `badge repo-${r.status}` }, r.status), r.error ? h("div", { class: "error-text" }, r.error) : null),
                h("td", null, String(r.files)),
                h("td", null, String(r.commits)),
                h("td", null, String(r.issues)),
                h("td", null, String(r.pull_requests)),
                h("td", null, formatTime(r.indexed_at)),
                h("td", null, r.root ? h("button", { onclick: () => indexCommand(() => api.reindex(r.name, dispatch)) }, "Re-index") : null),
              ),
            ),
          ),
        ),
  );
}

// ---- history screen ----

async function refreshRuns(): Promise<void> {
  const r = await attempt("Reading history", () => api.listRuns());
  if (r) runs = r;
  renderHistory();
}

async function reopen(id: number): Promise<void> {
  const record = await attempt("Opening the run", () => api.getRun(id));
  if (!record) return;
  if (isLive(state.run)) {
    notify("A run is in progress: it keeps going; stop it to look at another run.", false);
    return;
  }
  state = { ...state, run: runFromRecord(record) };
  show("run");
  render();
}

function renderHistory(): void {
  replaceChildren(
    views.history,
    h("h2", null, "History"),
    runs.length === 0
      ? h("p", { class: "muted" }, "No runs yet.")
      : h(
          "table",
          { class: "list runs-table" },
          h("thead", null, h("tr", null, ["Run", "Task", "Status", "Model", "Started", ""].map((c) => h("th", null, c)))),
          h(
            "tbody",
            null,
            runs.map((r) =>
              h(
                "tr",
                { "data-run": r.id },
                h("td", null, String(r.id)),
                h("td", { class: "task-cell" }, r.task),
                h("td", null, statusBadge(r.status)),
                h("td", null, r.model ?? ""),
                h("td", null, formatTime(r.started_at)),
                h(
                  "td",
                  { class: "actions" },
                  h("button", { class: "open-run", onclick: () => void reopen(r.id) }, "Open"),
                  canResume(r.status) ? h("button", { class: "resume-run", disabled: isLive(state.run), onclick: () => void resume(r) }, "Continue") : null,
                ),
              ),
            ),
          ),
        ),
  );
}

// ---- settings screen ----

async function refreshSettings(): Promise<void> {
  const s = await attempt("Reading settings", () => api.getSettings());
  if (s) settings = s;
  renderSettings();
}

async function saveSettings(change: (s: Settings) => Settings): Promise<boolean> {
  if (!settings) return false;
  const saved = await attempt("Saving settings", () => api.setSettings(change(settings as Settings)));
  if (saved) {
    settings = saved;
    notify("Settings saved.", false);
  }
  return saved !== undefined;
}

function renderSettings(): void {
  const s = settings;
  if (!s) {
    replaceChildren(views.settings, h("h2", null, "Settings"), h("p", { class: "muted" }, "Loading…"));
    return;
  }
  const protocols = info?.protocols ?? [s.protocol];
  const form = h(
    "form",
    { class: "settings-form card", id: "settings-form" },
    h("label", null, "Protocol", h("select", { name: "protocol" }, protocols.map((p) => { const o = h("option", { value: p }, p); o.selected = p === s.protocol; return o; }))),
    h("label", null, "Max steps", h("input", { type: "number", name: "max_steps", min: 1, max: 200, value: s.max_steps })),
    h("label", null, "Temperature", h("input", { type: "number", name: "temperature", min: 0, max: 2, step: 0.05, value: s.temperature })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "grammar", checked: s.grammar }), "Constrain each step with the protocol's grammar"),
    h("label", null, "Summarize older steps past this share of the context", h("input", { type: "number", name: "summarize_at", min: 0.3, max: 0.95, step: 0.05, value: s.summarize_at })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "require_plan_done", checked: s.require_plan_done }), "Refuse a final answer while the plan has open items"),
    h("label", null, "Persona (empty: the built-in one)", h("input", { type: "text", name: "persona", value: s.persona })),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary", id: "save-settings" }, "Save"), h("span", { class: "muted" }, " Applies from the next run.")),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const d = new FormData(form);
    void saveSettings((old) => ({
      ...old,
      protocol: String(d.get("protocol")),
      max_steps: Number(d.get("max_steps")),
      temperature: Number(d.get("temperature")),
      grammar: d.get("grammar") !== null,
      summarize_at: Number(d.get("summarize_at")),
      require_plan_done: d.get("require_plan_done") !== null,
      persona: String(d.get("persona") ?? ""),
    }));
  });
  replaceChildren(views.settings, h("h2", null, "Settings"), form, info ? h("p", { class: "muted" }, `Burrow ${info.version} · data in ${info.home}`) : null);
}

// ---- render ----

let renderedModel: State["model"] | undefined;
let renderedIndexing: State["indexing"] | undefined;
function render(): void {
  renderStatus();
  renderRun();
  if (state.model !== renderedModel) {
    renderedModel = state.model;
    if (screen === "models") renderModels();
  }
  if (state.indexing !== renderedIndexing) {
    renderedIndexing = state.indexing;
    renderIndexing();
  }
}

// ---- start ----

async function start(): Promise<void> {
  renderNav();
  show("run");
  render();
  info = (await attempt("Starting", () => api.appInfo())) ?? null;
  if (info?.model) state = { ...state, model: { ...state.model, current: info.model } };
  render();
  document.body.dataset.ready = "1";
  // The default workspace and model: started once per process, streamed here.
  await attempt("Starting", () => api.startup(dispatch));
}

void start();

// The UI benchmark (scripts/bench-ui.sh) opens the page with ?bench; nothing of it is loaded
// otherwise.
if (new URLSearchParams(location.search).has("bench")) {
  void import("./bench").then((b) =>
    b.install({
      dispatch,
      setCoalesce: (on) => {
        coalesce = on;
      },
      reset: () => {
        state = { ...state, run: null };
        render();
      },
      builds: () => timeline.builds,
      recordFlushes: (on) => {
        const times = flushTimes ?? [];
        flushTimes = on ? [] : null;
        return times;
      },
    }),
  );
}
