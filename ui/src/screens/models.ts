// The Models screen: the model in use (and Unload), a load's progress or failure, the models
// found with Load or Switch, each model's settings form (kept across redraws so that one being
// typed in stays open with what was typed), and the catalogue's models not on disk yet, each
// with Download and its progress.

import { api } from "../api";
import { formatBytes, formatMs, h, progressBar, replaceChildren, saveFocus } from "../dom";
import { dispatch, getState, redraw, update } from "../loop";
import { attempt, views } from "../shell";
import { isLive } from "../state";
import type { CatalogueModel, ModelInfo } from "../types";
import { saveSettings } from "./settings";

export async function refreshModels(): Promise<void> {
  const d = await attempt("Finding models", () => api.listModels());
  if (d) update({ kind: "ui_discovery", discovery: d });
  if (!getState().catalogue) {
    const c = await attempt("Reading the catalogue", () => api.listCatalogue());
    if (c) update({ kind: "ui_catalogue", catalogue: c });
  }
  if (!getState().settings) {
    update({ kind: "ui_settings", settings: (await attempt("Reading settings", () => api.getSettings())) ?? null });
  }
  renderModels();
}

async function loadModel(m: ModelInfo): Promise<void> {
  try {
    await api.loadModel(m.path, dispatch);
  } catch {
    // The failure arrives as a load_failed event and is shown on this screen.
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
  if (models.length === 0) parts.push(h("p", { class: "muted" }, "No models found. Put .gguf files in Burrow's models folder, or download one below."));
  for (const p of discovery?.problems ?? []) parts.push(h("p", { class: "warning" }, `Skipped ${p.error}`));
  parts.push(...catalogueSection());
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
  const ms = getState().settings?.models[mi.path] ?? { context_size: null, threads: null, gpu_layers: null };
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
