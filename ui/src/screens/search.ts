// The Search screen: the workspace searched directly, as `burrow search` does, without a model
// or a run. It searches as the user types (once typing pauses) and on Enter; the repository,
// kind and ranking choices search again; a result opens in the item viewer; More reads the
// next page. A search answered after a newer one was asked is dropped, so typing fast never
// shows the older results last; an emptied box empties the page.

import { api, errorMessage } from "../api";
import { h, replaceChildren } from "../dom";
import { openItem } from "../item-viewer";
import { highlight, KIND_LABELS } from "../search-view";
import { getState, update } from "../loop";
import { attempt, views } from "../shell";
import type { ItemRef, SearchHit, SearchKind, SearchMode, SearchRequest } from "../types";

const PAGE = 10;

const queryInput = h("input", {
  type: "search",
  id: "search-query",
  placeholder: "Search code, documents, commits, issues and pull requests",
  "aria-label": "Search",
  autocomplete: "off",
});
const kindSelect = h(
  "select",
  { id: "search-kind", "aria-label": "Kind" },
  h("option", { value: "" }, "All kinds"),
  (Object.keys(KIND_LABELS) as SearchKind[]).map((k) => h("option", { value: k }, KIND_LABELS[k])),
);
const modeSelect = h(
  "select",
  { id: "search-mode", "aria-label": "Ranking" },
  h("option", { value: "hybrid" }, "Words and meaning"),
  h("option", { value: "words" }, "Words"),
  h("option", { value: "meaning" }, "Meaning"),
);
/// Shown when the workspace holds more than one repository.
const repoSelect = h("select", { id: "search-repo", "aria-label": "Repository", hidden: true });
const note = h("p", { class: "muted search-note", id: "search-note", "aria-live": "polite" });
const results = h("ol", { class: "search-results", id: "search-results" });
const more = h("button", { id: "search-more", hidden: true, onclick: () => void search(true) }, "More results");

views.search.append(
  h("h2", null, "Search"),
  h(
    "form",
    { class: "search-form", id: "search-form", onsubmit: (e: Event) => { e.preventDefault(); void search(false); } },
    queryInput,
    repoSelect,
    kindSelect,
    modeSelect,
    h("button", { class: "primary", type: "submit" }, "Search"),
  ),
  note,
  results,
  more,
);

kindSelect.addEventListener("change", () => void search(false));
repoSelect.addEventListener("change", () => void search(false));
modeSelect.addEventListener("change", () => void search(false));
/// Typing pauses this long before the search runs by itself: a search takes 10-30 ms, and a
/// search per key would take the cores from a run decoding meanwhile.
const TYPING_PAUSE_MS = 300;
let typing: ReturnType<typeof setTimeout> | undefined;
queryInput.addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(() => void search(false), TYPING_PAUSE_MS);
});
queryInput.addEventListener("keydown", (e) => {
  // Esc clears what was typed first; only an empty box lets it through (it stops a live run).
  if (e.key === "Escape" && queryInput.value) {
    e.preventDefault();
    queryInput.value = "";
    void search(false);
  }
});

/// The newest search asked for; an answer to an older one is dropped.
let asked = 0;
/// The request of the results shown, and where its next page starts.
let shown: { request: SearchRequest; next: number | null } | null = null;

/// The screen was shown: the box takes the focus, and the repositories are read again.
export function showSearch(): void {
  queryInput.focus();
  void (async () => {
    const repos = await attempt("Reading the workspace", () => api.workspaceStatus());
    if (repos) update({ kind: "ui_repos", repos });
    renderRepos();
  })();
}

function renderRepos(): void {
  const names = getState().repos.map((r) => r.name);
  const chosen = repoSelect.value;
  replaceChildren(repoSelect, h("option", { value: "" }, "All repositories"), names.map((n) => h("option", { value: n }, n)));
  // The choice stays while its repository does.
  repoSelect.value = names.includes(chosen) ? chosen : "";
  repoSelect.hidden = names.length < 2;
}

async function search(nextPage: boolean): Promise<void> {
  let request: SearchRequest;
  if (nextPage) {
    if (!shown || shown.next === null) return;
    request = { ...shown.request, offset: shown.next };
  } else {
    clearTimeout(typing);
    const text = queryInput.value.trim();
    if (!text) {
      asked++;
      shown = null;
      note.textContent = "";
      replaceChildren(results);
      more.hidden = true;
      return;
    }
    const kind = kindSelect.value as SearchKind | "";
    const repo = repoSelect.hidden ? null : repoSelect.value || null;
    request = { text, kinds: kind ? [kind] : [], repo, mode: modeSelect.value as SearchMode, limit: PAGE, offset: 0 };
  }
  const id = ++asked;
  const started = performance.now();
  if (!nextPage) note.textContent = "Searching…";
  more.disabled = true;
  let page;
  try {
    page = await api.search(request);
  } catch (e) {
    if (id !== asked) return;
    if (nextPage) {
      // The results shown stay; More can be tried again.
      note.textContent = `More results: ${errorMessage(e)}`;
      more.disabled = false;
      return;
    }
    note.textContent = "";
    replaceChildren(results, h("li", { class: "error-box" }, errorMessage(e)));
    more.hidden = true;
    shown = null;
    return;
  }
  if (id !== asked) return;
  shown = { request, next: page.next_offset };
  const items = page.results.map(hitView);
  if (nextPage) results.append(...items);
  else replaceChildren(results, items);
  if (!nextPage && page.results.length === 0) replaceChildren(results, h("li", { class: "muted empty" }, `Nothing found for "${request.text}".`));
  // How long the user waited, from asking to the results drawn (the search benchmark reads it
  // too: scripts/bench-search-ui.sh).
  const ms = Math.round(performance.now() - started);
  results.dataset.search = String(id);
  results.dataset.ms = String(ms);
  const shownCount = results.querySelectorAll("li.search-hit").length;
  const found = `${shownCount}${page.next_offset === null ? "" : "+"} ${shownCount === 1 ? "result" : "results"} in ${ms} ms`;
  note.textContent = [found, page.note].filter(Boolean).join(" · ");
  more.hidden = page.next_offset === null;
  more.disabled = false;
}

/// The item a result opens, as the question sets name accepted answers (`scripts/eval/`):
/// `repo:path`, `repo#number`, `repo@hash`.
function itemRef(item: ItemRef | null): string | null {
  if (!item) return null;
  const repo = item.repo ?? "";
  switch (item.kind) {
    case "file":
      return `${repo}:${item.path}`;
    case "issue":
    case "pull_request":
      return `${repo}#${item.number}`;
    case "commit":
      return `${repo}@${item.hash}`;
  }
}

function hitView(hit: SearchHit): HTMLElement {
  const item = hit.item;
  return h(
    "li",
    { class: "search-hit", "data-kind": hit.kind, "data-ref": itemRef(item) },
    h(
      "div",
      { class: "hit-head" },
      h("span", { class: `badge kind-${hit.kind}` }, KIND_LABELS[hit.kind] ?? hit.kind),
      item
        ? h("a", { href: "#", class: "hit-title", onclick: (e: Event) => { e.preventDefault(); void openItem(item); } }, hit.title)
        : h("span", { class: "hit-title" }, hit.title),
    ),
    h("div", { class: "path" }, [hit.repo, hit.location, ...hit.notes].filter(Boolean).join(" · ")),
    h("pre", { class: "snippet" }, highlight(hit.snippet)),
  );
}
