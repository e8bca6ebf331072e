// The History screen: the kept runs, each with Open (shown on the Run screen as it was) and,
// for a run its process left unfinished, Continue.

import { api } from "../api";
import { formatTime, h, replaceChildren } from "../dom";
import { getState, redraw, update } from "../loop";
import { attempt, notify, show, views } from "../shell";
import { canResume, isLive } from "../state";
import { statusBadge } from "../timeline";
import { resume } from "./run";

export async function refreshRuns(): Promise<void> {
  const r = await attempt("Reading history", () => api.listRuns());
  if (r) update({ kind: "ui_runs", runs: r });
  renderHistory();
}

async function reopen(id: number): Promise<void> {
  const record = await attempt("Opening the run", () => api.getRun(id));
  if (!record) return;
  if (isLive(getState().run)) {
    notify("A run is in progress: it keeps going; stop it to look at another run.", false);
    return;
  }
  update({ kind: "ui_open_run", record });
  show("run");
  redraw();
}

function renderHistory(): void {
  const { runs, run } = getState();
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
                  canResume(r.status) ? h("button", { class: "resume-run", disabled: isLive(run), onclick: () => void resume(r) }, "Continue") : null,
                ),
              ),
            ),
          ),
        ),
  );
}
