// The Settings screen: the agent's settings form (protocol, steps, temperature, grammar,
// summarizing, the plan rule, the persona) and the app's version and data folder. Also reading
// and saving the settings, which a model's settings on the Models screen use too.

import { api } from "../api";
import { h, replaceChildren } from "../dom";
import { dispatch, getState, update } from "../loop";
import { attempt, notify, views } from "../shell";
import type { Settings } from "../types";

export async function refreshSettings(): Promise<void> {
  const s = await attempt("Reading settings", () => api.getSettings());
  if (s) update({ kind: "ui_settings", settings: s });
  renderSettings();
}

/// Saves the settings as `change` makes them from those last read; says whether they were.
export async function saveSettings(change: (s: Settings) => Settings): Promise<boolean> {
  const settings = getState().settings;
  if (!settings) return false;
  const saved = await attempt("Saving settings", () => api.setSettings(change(settings)));
  if (saved) {
    update({ kind: "ui_settings", settings: saved });
    notify("Settings saved.", false);
  }
  return saved !== undefined;
}

function renderSettings(): void {
  const { settings: s, info } = getState();
  if (!s) {
    replaceChildren(views.settings, h("h2", null, "Settings"), h("p", { class: "muted" }, "Loading…"));
    return;
  }
  const protocols = info?.protocols ?? [s.protocol];
  // The prompts Settings gives the embedding model, where they are for the one it names.
  const own = s.embedding_prompts && s.embedding_prompts.model === s.embedding_model ? s.embedding_prompts : null;
  const form = h(
    "form",
    { class: "settings-form card", id: "settings-form" },
    h("label", null, "Protocol", h("select", { name: "protocol" }, protocols.map((p) => { const o = h("option", { value: p }, p); o.selected = p === s.protocol; return o; }))),
    h("label", null, "Max steps", h("input", { type: "number", name: "max_steps", min: 1, max: 200, value: s.max_steps })),
    h("label", null, "Temperature", h("input", { type: "number", name: "temperature", min: 0, max: 2, step: 0.05, value: s.temperature })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "grammar", checked: s.grammar }), "Constrain each step with the protocol's grammar"),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "search_first", checked: s.search_first }), "Before the model's first step, search the workspace with the task, then open the leading matches one by one and ask the model whether each answers it"),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "route_first", checked: s.route_first }), "Let the model choose its first call (a list, a count, a file's history, a definition), with filters held to what the task names"),
    h("label", null, "Summarize older steps past this share of the context", h("input", { type: "number", name: "summarize_at", min: 0.3, max: 0.95, step: 0.05, value: s.summarize_at })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "require_plan_done", checked: s.require_plan_done }), "Refuse a final answer while the plan has open items"),
    h("label", null, "Persona (empty: the built-in one)", h("input", { type: "text", name: "persona", value: s.persona })),
    h("label", null, "Embedding model for search by meaning: a .gguf path or catalogue id (empty: all-MiniLM-L6-v2)", h("input", { type: "text", name: "embedding_model", value: s.embedding_model })),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "own_prompts", checked: own !== null }), "Give this embedding model these prompts instead of its own (Burrow knows those of nomic-embed, bge, e5, arctic-embed, mxbai, EmbeddingGemma, gte-Qwen and Qwen3-Embedding)"),
    // Text areas: the instruct models' prompts hold a line break, which a text input drops.
    h("label", null, "Before each query", h("textarea", { name: "query_prompt", rows: 2, placeholder: "e.g. search_query: ", disabled: own === null }, own?.query ?? "")),
    h("label", null, "Before each document", h("textarea", { name: "document_prompt", rows: 2, placeholder: "e.g. search_document: ", disabled: own === null }, own?.document ?? "")),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary", id: "save-settings" }, "Save"), h("span", { class: "muted" }, " Applies from the next run.")),
  );
  const ownBox = form.querySelector<HTMLInputElement>("input[name=own_prompts]")!;
  ownBox.addEventListener("change", () => {
    for (const t of form.querySelectorAll<HTMLTextAreaElement>("textarea")) t.disabled = !ownBox.checked;
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const d = new FormData(form);
    void saveSettings((old) => ({
      ...old,
      protocol: String(d.get("protocol")),
      max_steps: Number(d.get("max_steps")),
      temperature: Number(d.get("temperature")),
      grammar: d.get("grammar") !== null,
      search_first: d.get("search_first") !== null,
      route_first: d.get("route_first") !== null,
      summarize_at: Number(d.get("summarize_at")),
      require_plan_done: d.get("require_plan_done") !== null,
      persona: String(d.get("persona") ?? ""),
      embedding_model: String(d.get("embedding_model") ?? "").trim(),
      // Kept as typed: a prompt's trailing space is part of it. Prompts for another model stay
      // with it until these replace them.
      embedding_prompts:
        d.get("own_prompts") !== null
          ? { model: String(d.get("embedding_model") ?? "").trim(), query: String(d.get("query_prompt") ?? ""), document: String(d.get("document_prompt") ?? "") }
          : own === null ? old.embedding_prompts : null,
    })).then((saved) => {
      // Another embedding model, or other prompts, embed the workspace again; the same ones
      // find nothing to do.
      if (saved) void api.embedWorkspace(dispatch).catch(() => undefined);
    });
  });
  replaceChildren(views.settings, h("h2", null, "Settings"), form, info ? h("p", { class: "muted" }, `Burrow ${info.version} · data in ${info.home}`) : null);
}
