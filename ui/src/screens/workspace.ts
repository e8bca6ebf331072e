// The Workspace screen: adding a repository, importing issues and pull requests (from a path
// typed or chosen in the file dialog), each indexing job's progress and outcome, and the
// sources indexed with Re-index.

import { open as openDialog } from "@tauri-apps/plugin-dialog";
import { api } from "../api";
import { formatTime, h, progressBar, replaceChildren, reportSummary } from "../dom";
import { dispatch, getState, update } from "../loop";
import { attempt, notify, views } from "../shell";

export async function refreshRepos(): Promise<void> {
  const r = await attempt("Reading the workspace", () => api.workspaceStatus());
  if (r) update({ kind: "ui_repos", repos: r });
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
const embeddingArea = h("div", { class: "embedding", id: "embedding" });
const reposArea = h("div", { id: "repos" });
views.workspace.append(h("h2", null, "Workspace"), workspaceForms, indexingArea, embeddingArea, reposArea);

/// Search by meaning: the embedding pass's progress, or why search ranks by words only.
export function renderEmbedding(): void {
  const e = getState().embedding;
  replaceChildren(
    embeddingArea,
    e === null
      ? null
      : h(
          "div",
          { class: `index-job embed-${e.state}` },
          h(
            "div",
            { class: "row" },
            h("strong", null, "Search by meaning"),
            h(
              "span",
              { class: "muted" },
              e.state === "embedding"
                ? ` ${e.model}: ${e.done}/${e.total} units embedded`
                : e.state === "done" && e.left > 0
                  ? ` ${e.model}: ${e.done}/${e.total} units embedded; ${e.left} without a vector (the model gives their text none that is a number: NaN)`
                  : e.state === "done"
                    ? ` ${e.model}: all ${e.total} units embedded`
                  : " off: searches rank by words",
            ),
          ),
          e.state === "embedding" ? progressBar(e.done, e.total, "Embedding the workspace") : null,
          e.error ? h("p", { class: "muted", role: "status" }, e.error) : null,
        ),
  );
}

async function pick(input: HTMLInputElement, directory: boolean): Promise<void> {
  const chosen = await attempt("Opening the file dialog", () =>
    openDialog({ directory, multiple: false, filters: directory ? undefined : [{ name: "Issues export", extensions: ["json", "jsonl"] }] }),
  );
  if (typeof chosen === "string") input.value = chosen;
}

export function renderIndexing(): void {
  replaceChildren(
    indexingArea,
    getState().indexing
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
  renderEmbedding();
  const { repos } = getState();
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
