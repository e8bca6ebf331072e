// The Models screen: the model in use (and Unload), a load's progress or failure, the models
// found with Load or Switch, each model's settings form (kept across redraws so that one being
// typed in stays open with what was typed), the catalogue's models not on disk yet, each
// with Download and its progress, the models served elsewhere (OpenAI-compatible servers: add,
// probe, use, remove), and the switch that serves the model in use over the OpenAI API.

import { api } from "../api";
import { formatBytes, formatMs, h, progressBar, replaceChildren, saveFocus } from "../dom";
import { dispatch, getState, redraw, update } from "../loop";
import { attempt, notify, views } from "../shell";
import { isLive } from "../state";
import type { CatalogueModel, KvCacheType, ModelInfo, RemoteStatus } from "../types";
import { saveSettings } from "./settings";

/// Refreshes under way: the screen is marked busy (aria-busy) until the last one has drawn, so
/// assistive technology (and the end-to-end tests) wait for the lists instead of acting on rows
/// about to be redrawn.
let refreshing = 0;

export async function refreshModels(): Promise<void> {
  refreshing++;
  views.models.setAttribute("aria-busy", "true");
  try {
    await readModels();
  } finally {
    if (--refreshing === 0) views.models.removeAttribute("aria-busy");
  }
}

/// The lists the screen draws, as last read. A refresh that reads the same lists draws nothing:
/// the screen is rebuilt whole, and a rebuild between a press and its release (or WebDriver's
/// hit test and its click) loses the click, so it is left as it is where nothing changed.
function listsKey(): string {
  const s = getState();
  return JSON.stringify([s.discovery, s.catalogue, s.settings, s.serving, s.remotes]);
}

/// Draws the screen now, with what the state holds (a run may have ended while another screen
/// was shown), then reads its lists again.
export function showModels(): void {
  renderModels();
  void refreshModels();
}

async function readModels(): Promise<void> {
  const before = listsKey();
  const d = await attempt("Finding models", () => api.listModels());
  if (d) update({ kind: "ui_discovery", discovery: d });
  if (!getState().catalogue) {
    const c = await attempt("Reading the catalogue", () => api.listCatalogue());
    if (c) update({ kind: "ui_catalogue", catalogue: c });
  }
  if (!getState().settings) {
    update({ kind: "ui_settings", settings: (await attempt("Reading settings", () => api.getSettings())) ?? null });
  }
  update({ kind: "ui_serving", serving: (await attempt("Reading the server's state", () => api.serveStatus())) ?? null });
  if (listsKey() !== before) renderModels();
  // Probing the servers may take their connect timeout: the rest is shown first.
  await refreshRemotes();
}

async function refreshRemotes(): Promise<void> {
  const before = listsKey();
  const r = await attempt("Probing the servers", () => api.listRemotes());
  if (r) update({ kind: "ui_remotes", remotes: r });
  if (listsKey() !== before) renderModels();
}

async function loadRemote(r: RemoteStatus): Promise<void> {
  try {
    await api.loadModel(r.name, dispatch);
  } catch {
    // The failure arrives as a load_failed event and is shown on this screen.
  }
}

/// The models served elsewhere, each with whether it answers, Use and Remove; and the form
/// that adds one.
function remotesSection(): HTMLElement[] {
  const state = getState();
  const current = state.model.current;
  const remotes = state.remotes;
  const rows = (remotes ?? []).map((r) => {
    const inUse = current?.remote?.backend === r.name;
    const what = r.info ? `${r.info.model} (context ${r.info.context_length}${r.info.context_reported ? "" : ", assumed"})` : (r.model ?? "the first it lists");
    return h(
      "tr",
      { "data-remote": r.name },
      h("td", null, r.name),
      h("td", null, what, r.llguidance ? h("span", { class: "badge", title: "grammars go to it as llguidance's" }, "llguidance") : null),
      h("td", { class: "path", title: r.url }, r.url),
      h("td", null, r.reachable ? h("span", { class: "badge status-done" }, "answers") : [h("span", { class: "badge status-error" }, "unreachable"), h("div", { class: "muted remote-problem" }, r.problem ?? "")]),
      h(
        "td",
        { class: "actions" },
        h("button", { class: "load", disabled: inUse || state.model.loading !== null || isLive(state.run), onclick: () => void loadRemote(r) }, inUse ? "In use" : current ? "Switch" : "Use"),
        h("button", { class: "remove", onclick: () => void attempt(`Removing ${r.name}`, () => api.removeRemote(r.name)).then(() => refreshRemotes()) }, "Remove"),
      ),
    );
  });
  const form = h(
    "form",
    { class: "add-remote row", id: "add-remote" },
    h("input", { type: "url", name: "url", required: true, placeholder: "http://127.0.0.1:8080", "aria-label": "Server address" }),
    h("input", { type: "text", name: "name", placeholder: "name (optional)", "aria-label": "Name" }),
    h("input", { type: "text", name: "model", placeholder: "model (optional)", "aria-label": "Model on the server" }),
    h("input", { type: "text", name: "key", placeholder: "API key variable (optional)", "aria-label": "Environment variable holding the API key" }),
    h(
      "label",
      { class: "check", title: "A llama-server built with -DLLAMA_LLGUIDANCE=ON: each step's grammar goes to it whole, as Burrow enforces it here. Leave off for other builds: they stop on such a grammar." },
      h("input", { type: "checkbox", name: "llguidance" }),
      " llguidance",
    ),
    h("button", { type: "submit" }, "Add"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const d = new FormData(form);
    const opt = (k: string) => String(d.get(k) ?? "").trim() || null;
    void attempt("Adding the server", () => api.addRemote(String(d.get("url") ?? "").trim(), opt("name"), opt("model"), opt("key"), d.get("llguidance") !== null)).then((added) => {
      if (!added) return;
      form.reset();
      notify(added.reachable ? `${added.name} added: it answers.` : `${added.name} added, but it does not answer now: ${added.problem ?? ""}`, !added.reachable);
      void refreshRemotes();
    });
  });
  return [
    h("h3", { class: "section" }, "Served elsewhere"),
    h("p", { class: "muted" }, "Models on an OpenAI-compatible server (llama-server, vLLM, Ollama, LM Studio) on this machine or another. An API key is never saved: name the environment variable that holds it."),
    remotes === null
      ? h("p", { class: "muted" }, "Probing the servers…")
      : rows.length === 0
        ? h("p", { class: "muted" }, "None added.")
        : h("table", { class: "list remotes-table" }, h("thead", null, h("tr", null, ["Name", "Model", "Address", "Status", ""].map((c) => h("th", null, c)))), h("tbody", null, rows)),
    form,
  ];
}

/// The switch that serves the model in use over the OpenAI API on 127.0.0.1, with its URL.
function serveSection(): HTMLElement {
  const state = getState();
  const serving = state.serving;
  const port = state.settings?.serve.port ?? 8089;
  const portInput = h("input", { type: "number", id: "serve-port", min: 1, max: 65535, value: port, disabled: serving !== null, "aria-label": "Port" });
  const toggle = h("input", { type: "checkbox", id: "serve-toggle", checked: serving !== null });
  toggle.addEventListener("change", () => {
    const on = toggle.checked;
    void attempt(on ? "Starting the server" : "Stopping the server", async () => {
      if (on) {
        update({ kind: "ui_serving", serving: await api.startServing(Number(portInput.value)) });
      } else {
        await api.stopServing();
        update({ kind: "ui_serving", serving: null });
      }
      update({ kind: "ui_settings", settings: await api.getSettings() });
    }).then(() => renderModels());
  });
  return h(
    "div",
    { class: "card serve" },
    h("h3", null, "Serve over the OpenAI API"),
    h("label", { class: "check" }, toggle, "Let programs on this machine use the model in use, at 127.0.0.1 port ", portInput),
    serving
      ? h(
          "p",
          { id: "serve-info" },
          "Base URL: ",
          h("code", { id: "serve-url" }, serving.url),
          serving.model ? ` · serving ${serving.model}` : " · no model loaded: requests are refused until one is",
          serving.key_required ? " · clients must send the API key" : "",
        )
      : h("p", { class: "muted" }, "Off. When on, it stays on the next time Burrow opens."),
  );
}

async function loadModel(m: ModelInfo): Promise<void> {
  try {
    await api.loadModel(m.path, dispatch);
  } catch {
    // The failure arrives as a load_failed event and is shown on this screen. What is in use
    // now is the core's to say: a switch that unloaded the old model first to make room and
    // then failed left it shown as in use, its button disabled, and a run refused.
    try {
      update({ kind: "ui_model_now", model: await api.modelStatus() });
      renderModels();
    } catch {
      // Unknown: left as it was.
    }
  }
}

async function fetchModel(c: CatalogueModel): Promise<void> {
  update({ kind: "ui_fetch", id: c.id, model: c.name });
  renderModels();
  try {
    await api.fetchModel(c.id, dispatch);
  } catch {
    // The failure arrives as a fetch_failed event and is shown beside the model.
  }
}

/// The catalogue's models that discovery did not find, to download; one being downloaded (or
/// just downloaded, until the list is read again) shows its progress instead of the button.
function catalogueSection(): (HTMLElement | null)[] {
  const state = getState();
  const onDisk = new Set((state.discovery?.models ?? []).map((mi) => mi.catalogue_id).filter((id) => id !== null));
  const missing = (state.catalogue ?? []).filter((c) => !onDisk.has(c.id));
  if (missing.length === 0) return [];
  return [
    h("h3", { class: "section" }, "From the catalogue"),
    h(
      "table",
      { class: "list catalogue-table" },
      h("thead", null, h("tr", null, ["Model", "Quantization", "Size", "Licence", ""].map((c) => h("th", null, c)))),
      h(
        "tbody",
        null,
        missing.map((c) => {
          const f = state.fetches[c.id];
          const busy = f?.state === "fetching" || f?.state === "done";
          const parts = f && f.parts > 1 ? `part ${f.part} of ${f.parts}, ` : "";
          const pct = f && f.total > 0 ? `${((f.done / f.total) * 100).toFixed(0)}%` : "starting";
          return h(
            "tr",
            { "data-catalogue": c.id },
            h(
              "td",
              null,
              c.name,
              busy ? h("div", { class: "fetch-progress" }, `${f.state === "done" ? "Downloaded" : "Downloading"}: ${parts}${formatBytes(f.done)} of ${f.total > 0 ? formatBytes(f.total) : "?"} (${pct})`, progressBar(f.done, f.total, `${c.name} download`)) : null,
              f?.state === "failed" ? h("div", { class: "error-box", role: "alert" }, h("strong", null, `${c.name} could not be downloaded: `), f.error ?? "") : null,
            ),
            h("td", null, c.quantization),
            h("td", null, formatBytes(c.size)),
            h("td", null, c.licence),
            h(
              "td",
              { class: "actions" },
              h("button", { class: "fetch", disabled: busy, title: `To ${c.dest}`, onclick: () => void fetchModel(c) }, f?.state === "failed" ? "Retry" : "Download"),
            ),
          );
        }),
      ),
    ),
  ];
}

export function renderModels(): void {
  const focus = saveFocus(views.models);
  const state = getState();
  const { discovery } = state;
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
    const remote = current.remote;
    parts.push(
      h(
        "div",
        { class: "card current-model" },
        h("h3", null, remote ? `In use: ${current.name} (remote: ${remote.backend})` : `In use: ${current.name}`),
        remote
          ? h(
              "dl",
              { class: "facts" },
              fact("Server", remote.info.url),
              fact("Kind", { llama_server: "llama-server", vllm: "vLLM", open_ai: "OpenAI-compatible" }[remote.info.kind]),
              fact("Context", `${current.context_size} tokens${remote.info.context_reported ? "" : " (assumed)"}`),
              fact("Connected in", formatMs(current.load_ms)),
            )
          : h(
              "dl",
              { class: "facts" },
              fact("Quantization", current.quantization),
              fact("Context", `${current.context_size} tokens`),
              fact("Threads", String(current.threads)),
              fact("GPU layers", current.layers > 0 ? `${current.gpu_layers} of ${current.layers}` : String(current.gpu_layers)),
              ...current.gpus.map((g) =>
                fact("GPU memory", `${formatBytes(g.memory_total - g.memory_free)} of ${formatBytes(g.memory_total)} in use (${g.name})`),
              ),
              fact("KV cache", current.kv_cache),
              fact("Memory", formatBytes(current.memory_bytes)),
              fact("Loaded in", formatMs(current.load_ms)),
              fact("File", current.path),
            ),
        current.fallback_template ? h("p", { class: "muted" }, "This model has no chat template; ChatML is used.") : null,
        h("button", { id: "unload", disabled: isLive(state.run), onclick: () => void attempt("Unloading", async () => { await api.unloadModel(); update({ kind: "ui_unloaded" }); redraw(); }) }, "Unload"),
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
                mi.embedding ? [" ", h("span", { class: "badge" }, "embedding")] : null,
                // Why, up front; Load stays, and its failure gives llama.cpp's own account.
                mi.supported
                  ? null
                  : [" ", h("span", { class: "badge status-error" }, "unsupported"), h("div", { class: "muted unsupported-why" }, `Architecture "${mi.architecture}" is not one this build of llama.cpp runs as a chat model.`)],
              ),
              h("td", null, mi.quantization),
              h("td", null, formatBytes(mi.file_size)),
              h("td", null, mi.context_length ? String(mi.context_length) : "?"),
              h("td", { class: "path", title: mi.path }, `${mi.source}: ${mi.path}`),
              mi.embedding
                ? h("td", { class: "actions" }, searchModelButton(mi))
                : mi.not_for_chat
                  ? h("td", { class: "actions muted" }, "Not a chat model")
                  : h(
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
  if (models.length === 0) parts.push(h("p", { class: "muted" }, "No models found. Put .gguf files in Burrow's models folder, or download one below."));
  for (const p of discovery?.problems ?? []) parts.push(h("p", { class: "warning" }, `Skipped ${p.error}`));
  parts.push(...catalogueSection());
  parts.push(...remotesSection());
  parts.push(serveSection());
  replaceChildren(views.models, parts);
  focus.restore();
}

function fact(k: string, v: string): HTMLElement[] {
  return [h("dt", null, k), h("dd", null, v)];
}

// Each model's settings form, kept across redraws of the Models screen (load progress redraws it
// many times a second): a form someone has opened and is typing in stays open with what they typed.
const settingsForms = new Map<string, { saved: string; el: HTMLElement }>();

/// An embedding model cannot be loaded to chat: it can be the one search by meaning uses
/// (Settings' embedding model), which embeds the workspace again with it.
function searchModelButton(mi: ModelInfo): HTMLElement {
  const { settings, catalogue } = getState();
  const chosen = settings?.embedding_model.trim() ?? "";
  // The file the core loads for a catalogue id (or none: the catalogue's first embedding
  // model) is the one in the catalogue's folder, not another copy of the same name.
  const entry = chosen === "" ? catalogue?.find((c) => c.purpose === "embedding") : catalogue?.find((c) => c.id === chosen);
  const inUse = entry ? mi.path === `${entry.dest}/${entry.file}` : chosen === mi.path;
  return h(
    "button",
    {
      class: "use-for-search",
      disabled: inUse || !settings,
      onclick: () =>
        // Prompts written for the model before stay with it (they name it).
        void saveSettings((s) => ({ ...s, embedding_model: mi.path })).then((saved) => {
          if (saved) void api.embedWorkspace(dispatch).catch(() => undefined);
        }),
    },
    inUse ? "Used for search" : "Use for search",
  );
}

function modelSettingsButton(mi: ModelInfo): HTMLElement {
  const ms = getState().settings?.models[mi.path] ?? { context_size: null, threads: null, gpu_layers: null, kv_cache: null };
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
    h(
      "label",
      null,
      "KV cache",
      h(
        "select",
        { name: "kv_cache" },
        ["f16", "q8_0", "q4_0"].map((t) => {
          const o = h("option", { value: t }, t);
          o.selected = (ms.kv_cache ?? "f16") === t;
          return o;
        }),
      ),
    ),
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
      models: {
        ...s.models,
        // What the form does not show (batch_size, threads_batch, set in settings.json by
        // hand) stays as it was: rebuilt from the form's four fields, it was deleted.
        [mi.path]: {
          ...s.models[mi.path],
          context_size: read("context_size"),
          threads: read("threads"),
          gpu_layers: read("gpu_layers"),
          kv_cache: data.get("kv_cache") === "f16" ? null : (String(data.get("kv_cache")) as KvCacheType),
        },
      },
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
