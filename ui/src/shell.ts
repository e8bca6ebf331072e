// The page's frame around the screens: the layout (top bar, tabs, status, notices, one element
// per screen), switching screens (`show`), the status pills and the notices (`notify`,
// `attempt`). The screens fill their elements; what each does when shown, main.ts wires in
// (`onShow`): this module imports no screen.

import { errorMessage } from "./api";
import { h, progressBar, replaceChildren } from "./dom";
import { getState, update } from "./loop";
import { isLive, type Screen } from "./state";

const SCREENS: [Screen, string][] = [
  ["run", "Run"],
  ["search", "Search"],
  ["models", "Models"],
  ["workspace", "Workspace"],
  ["history", "History"],
  ["settings", "Settings"],
];

// ---- layout ----

const app = document.getElementById("app") as HTMLElement;
const nav = h("nav", { class: "tabs", role: "tablist", "aria-label": "Screens" });
const statusArea = h("div", { class: "status-area", "aria-live": "polite" });
const noticeArea = h("div", { class: "notices", role: "alert" });
const main = h("main", { id: "main" });
app.append(h("header", { class: "topbar" }, h("h1", null, "Burrow"), nav, statusArea), noticeArea, main);

/// Each screen's element, filled by its module.
export const views: Record<Screen, HTMLElement> = {
  run: h("div", { class: "screen screen-run", id: "screen-run" }),
  search: h("div", { class: "screen", id: "screen-search" }),
  models: h("div", { class: "screen", id: "screen-models" }),
  workspace: h("div", { class: "screen", id: "screen-workspace" }),
  history: h("div", { class: "screen", id: "screen-history" }),
  settings: h("div", { class: "screen", id: "screen-settings" }),
};
for (const v of Object.values(views)) main.append(v);

// ---- screens ----

const shown: Partial<Record<Screen, () => void>> = {};

/// Sets what a screen does each time it is shown (read its list again, take the focus).
export function onShow(screen: Screen, f: () => void): void {
  shown[screen] = f;
}

export function renderNav(): void {
  const screen = getState().screen;
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

export function show(s: Screen): void {
  update({ kind: "ui_screen", screen: s });
  // Focus must not stay inside a screen being hidden: keyboard users would type into nothing.
  const focused = document.activeElement;
  if (focused instanceof HTMLElement && focused.closest(".screen") && !views[s].contains(focused)) {
    focused.blur();
  }
  for (const [id, v] of Object.entries(views)) v.hidden = id !== s;
  renderNav();
  shown[s]?.();
}

// ---- notices ----

/// Shows a message: an error (the default) stays until dismissed, a confirmation goes by itself.
export function notify(text: string, error = true): void {
  const id = update({ kind: "ui_notice", text, error }).lastNoticeId;
  renderNotices();
  // Confirmations go by themselves; errors stay until dismissed.
  if (!error) {
    setTimeout(() => {
      update({ kind: "ui_dismiss", id });
      renderNotices();
    }, 4000);
  }
}

/// Runs a command; its failure becomes a notice and the answer undefined.
export async function attempt<T>(what: string, f: () => Promise<T>): Promise<T | undefined> {
  try {
    return await f();
  } catch (e) {
    notify(`${what}: ${errorMessage(e)}`);
    return undefined;
  }
}

function renderNotices(): void {
  replaceChildren(
    noticeArea,
    getState().notices.map((n) =>
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
              update({ kind: "ui_dismiss", id: n.id });
              renderNotices();
            },
          },
          "✕",
        ),
      ),
    ),
  );
}

// ---- status ----

/// The top bar's pills: the model (or its load), the indexing jobs, a live run.
export function renderStatus(): void {
  const state = getState();
  const m = state.model;
  const parts: (HTMLElement | string)[] = [];
  if (m.loading) {
    parts.push(
      h("span", { class: "pill" }, `Loading ${m.loading.model} `, progressBar(m.loading.progress, 1, "Model loading")),
    );
  } else if (m.current) {
    parts.push(h("span", { class: "pill", id: "current-model" }, `${m.current.name} · ${m.current.remote ? `remote (${m.current.remote.backend})` : m.current.quantization}`));
  } else {
    parts.push(h("span", { class: "pill muted" }, "No model loaded"));
  }
  const active = state.indexing.filter((v) => v.state === "indexing");
  if (active.length) parts.push(h("span", { class: "pill" }, `Indexing ${active.map((v) => v.repo || v.source).join(", ")}`));
  if (isLive(state.run)) parts.push(h("span", { class: "pill live" }, "Running"));
  replaceChildren(statusArea, parts);
}
