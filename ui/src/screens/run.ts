// The Run screen: the task box, Run and Stop (Enter runs, Esc stops a live run), the run's
// header, its timeline and plan (a step's links open in the item viewer). Also starting,
// continuing and stopping runs, which History uses too (`resume`).

import { api, errorMessage } from "../api";
import { h, replaceChildren } from "../dom";
import { openItem, viewerOpen } from "../item-viewer";
import { dispatch, getState, redraw, update } from "../loop";
import { attempt, notify, show, views } from "../shell";
import { canResume, isLive, type State } from "../state";
import { Timeline, renderTodos, statusBadge } from "../timeline";
import type { RunRecord } from "../types";

const taskInput = h("textarea", {
  id: "task",
  rows: 2,
  placeholder: "Ask about your repositories and issues. Enter runs, Shift+Enter adds a line, Esc stops.",
  "aria-label": "Task",
});
const runButton = h("button", { id: "run", class: "primary", onclick: () => void run() }, "Run");
const stopButton = h("button", { id: "stop", onclick: () => void stop() }, "Stop");
const runHeader = h("div", { class: "run-header" });
/// The run's steps (the UI benchmark counts its element builds).
export const timeline = new Timeline((item) => void openItem(item));
const todoPanel = h("div", { class: "todo-panel", id: "todos" });

views.run.append(
  h("form", { class: "task-form", onsubmit: (e: Event) => { e.preventDefault(); void run(); } }, taskInput, runButton, stopButton),
  h(
    "div",
    { class: "run-body" },
    h("div", { class: "run-main", id: "run-main" }, runHeader, timeline.root),
    h("aside", { class: "plan", "aria-label": "Plan" }, h("h2", null, "Plan"), todoPanel),
  ),
);

taskInput.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    void run();
  }
});

document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || e.defaultPrevented) return; // taken by what had focus (a settings form)
  if (viewerOpen()) return; // the dialog closes itself
  // Esc in a text box of another screen (a folder path, the persona) is that box's: it
  // stopped the run. On the Run screen the task box is still Stop's.
  const target = e.target;
  if (
    target instanceof HTMLElement &&
    target !== taskInput &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))
  ) {
    return;
  }
  if (isLive(getState().run)) {
    e.preventDefault();
    void stop();
  }
});

/// The task box takes the focus (the screen was shown).
export function focusTask(): void {
  taskInput.focus();
}

async function run(): Promise<void> {
  const task = taskInput.value.trim();
  const state = getState();
  if (!task || isLive(state.run)) return;
  if (!state.model.current) {
    notify("No model is loaded: load one under Models first.");
    return;
  }
  // A run started during a switch ran on the old model, which the load might unload under it.
  if (state.model.loading) {
    notify(`${state.model.loading.model} is loading: run once it is in use.`);
    return;
  }
  update({ kind: "ui_start_run", task });
  redraw();
  await drive(() => api.startRun(task, dispatch));
}

/// A Continue under way, from the click to the run going live: a second click (a double
/// click, a stale History button) was refused by the core and that refusal ended the view of
/// the run the first was continuing.
let continuing = false;

/// Continues a kept run from its last step, on this screen.
export async function resume(record: RunRecord): Promise<void> {
  if (continuing || isLive(getState().run)) return;
  continuing = true;
  try {
    const full = await attempt("Opening the run", () => api.getRun(record.id));
    if (!full) return;
    update({ kind: "ui_resume_run", record: full });
    show("run");
    redraw();
    let live = false;
    try {
      await api.resumeRun(record.id, (event) => {
        live = true;
        continuing = false;
        dispatch(event);
      });
    } catch (e) {
      if (live) {
        const message = errorMessage(e);
        dispatch({ kind: "run_ended", run_id: getState().run?.runId ?? null, status: "error", final_answer: null, error: message });
      } else {
        // Refused before it went on (a model loading, the run going on elsewhere): the run
        // is as it was kept, interrupted, with its Continue.
        update({ kind: "ui_open_run", record: full });
        redraw();
        notify(`The run was not continued: ${errorMessage(e)}`);
      }
    }
  } finally {
    continuing = false;
  }
}

/// Runs a command that streams a run; its failure (no model, a run already going) ends the
/// view's run with the message.
async function drive(f: () => Promise<unknown>): Promise<void> {
  try {
    await f();
  } catch (e) {
    const message = errorMessage(e);
    dispatch({ kind: "run_ended", run_id: getState().run?.runId ?? null, status: "error", final_answer: null, error: message });
  }
}

async function stop(): Promise<void> {
  await attempt("Stopping the run", () => api.stopRun());
}

/// The run last drawn (a render cache: only what changed since is drawn again).
let renderedRun: State["run"] | undefined;

export function renderRun(): void {
  const r = getState().run;
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
