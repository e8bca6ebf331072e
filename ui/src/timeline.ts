// The run's timeline and TODO panel. Both are keyed: a step's element is rebuilt only when its
// view object changed (the reducer replaces only the step an event touched), so streaming
// tokens into step 500 redraws one element, not 500.

import { h, formatMs, replaceChildren } from "./dom";
import { describe } from "./links";
import { stepStats, type RunView, type StepView } from "./state";
import type { ItemRef, RunStatus, TodoItem } from "./types";

export type OpenItem = (item: ItemRef) => void;

const STATUS_TEXT: Record<RunStatus, string> = {
  running: "Running",
  succeeded: "Succeeded",
  failed: "Failed",
  blocked: "Blocked",
  cancelled: "Stopped",
  max_steps: "Stopped at the step limit",
  error: "Error",
  interrupted: "Interrupted",
};

export function statusBadge(status: RunStatus): HTMLElement {
  return h("span", { class: `badge status-${status}` }, STATUS_TEXT[status] ?? status);
}

/// The items a step's observation shows, as links that open them. They come from the tools'
/// own locators, never from reading the text, which is untrusted and shown only as text.
function itemLinks(items: ItemRef[], open: OpenItem, label = "Items this step found", cls = "items"): HTMLElement | null {
  if (items.length === 0) return null;
  return h(
    "nav",
    { class: cls, "aria-label": label },
    ...items.map((item) =>
      h(
        "a",
        {
          href: "#",
          class: `item-link link-${item.kind}`,
          title: `Open ${describe(item)}`,
          onclick: (e: Event) => {
            e.preventDefault();
            open(item);
          },
        },
        describe(item),
      ),
    ),
  );
}

function statsLine(step: StepView): HTMLElement | null {
  if (!step.record) return null;
  const s = stepStats(step.record);
  const parts = [
    `${s.promptTokens} prompt tokens`,
    s.reusePct === null ? null : `${s.reusePct.toFixed(0)}% reused`,
    `first token ${formatMs(s.ttftMs)}`,
    `${s.generated} generated`,
    s.tokPerSec === null ? null : `${s.tokPerSec.toFixed(1)} tok/s`,
    s.toolMs > 0 ? `tool ${formatMs(s.toolMs)}` : null,
  ].filter((p): p is string => p !== null);
  return h("div", { class: "step-stats" }, parts.join(" · "));
}

export function renderStep(step: StepView, open: OpenItem): HTMLElement {
  const failed = step.observation?.error ?? false;
  const el = h(
    "article",
    {
      class: `step${step.done ? "" : " live"}${failed ? " has-error" : ""}`,
      "data-step": step.index,
    },
    h(
      "header",
      null,
      h("h3", null, `Step ${step.index + 1}`),
      step.automatic
        ? h("span", { class: "badge automatic", title: "Burrow took this step itself: a search with the task, then the leading matches opened one by one for the model to check" }, "step by Burrow")
        : null,
      step.routed
        ? h("span", { class: "badge routed", title: "The model chose this call apart from the run; its arguments could take only values the task and the workspace name" }, "chosen by the model")
        : null,
      statsLine(step),
    ),
  );
  if (step.thought) el.append(h("p", { class: "thought" }, step.thought));
  // While the step is being written, its raw tokens stream in; once parsed, the parts show.
  if (!step.done && !step.action && !step.finalAnswer) {
    el.append(
      h("pre", { class: "stream", "aria-live": "off" }, step.output, h("span", { class: "caret" }, "▍")),
    );
  }
  if (step.action) {
    el.append(
      h(
        "div",
        { class: "action" },
        h("span", { class: "tool" }, step.action.tool),
        h("pre", { class: "args" }, JSON.stringify(step.action.args, null, 2)),
      ),
    );
  }
  if (step.check) {
    el.append(
      h(
        "p",
        { class: `check ${step.check.answers ? "answers" : "rejected"}` },
        "Checked ",
        itemLinks([step.check.item], open, "Item checked", "items inline"),
        step.check.answers ? ": it answers the task" : ": it does not answer the task",
      ),
    );
  }
  if (step.observation) {
    const lines = step.observation.text.split("\n").length;
    const details = h(
      "details",
      { class: `observation${step.observation.error ? " error" : ""}` },
      h(
        "summary",
        null,
        step.observation.error ? "Error" : "Observation",
        h("span", { class: "muted" }, ` (${lines} line${lines === 1 ? "" : "s"})`),
      ),
      h("pre", null, step.observation.text),
      itemLinks(step.items, open),
    );
    // Errors and short observations are shown open; long ones are a click away.
    details.open = step.observation.error || lines <= 12;
    el.append(details);
  }
  if (step.finalAnswer !== null) {
    const cites = itemLinks(step.citations, open, "Items the answer cites", "items citations");
    if (cites) el.append(h("div", { class: "cited" }, h("span", { class: "muted" }, "Cites "), cites));
    if (step.unseen.length > 0) {
      el.append(
        h(
          "p",
          { class: "unseen", role: "note" },
          `Named in the answer but never seen in this run: ${step.unseen.join(", ")}`,
        ),
      );
    }
  }
  if (step.done && !step.action && !step.finalAnswer && !step.observation && !step.check && step.output) {
    el.append(h("pre", { class: "stream" }, step.output));
  }
  return el;
}

interface Keyed {
  step: StepView;
  el: HTMLElement;
}

/// The steps list; call `update` with each new run view.
export class Timeline {
  readonly root: HTMLElement;
  private readonly list: HTMLElement;
  private readonly tail: HTMLElement;
  private keyed = new Map<number, Keyed>();
  private run: RunView | null = null;
  /// How many step elements were built (for tests and the bench).
  builds = 0;

  constructor(private readonly open: OpenItem) {
    this.list = h("div", { class: "steps" });
    this.tail = h("div", { class: "run-tail" });
    this.root = h("section", { class: "timeline", "aria-label": "Steps" }, this.list, this.tail);
  }

  update(run: RunView | null): void {
    if (run === this.run) return;
    const previous = this.run;
    this.run = run;
    if (!run) {
      this.keyed.clear();
      replaceChildren(this.list);
      replaceChildren(this.tail);
      return;
    }
    const seen = new Set<number>();
    let anchor: ChildNode | null = this.list.firstChild;
    for (const step of run.steps) {
      seen.add(step.index);
      const k = this.keyed.get(step.index);
      let el: HTMLElement;
      if (k && k.step === step) {
        el = k.el;
      } else {
        el = renderStep(step, this.open);
        this.builds++;
        // Keep a reader's open/closed choice on an observation across redraws.
        const oldDetails = k?.el.querySelector("details");
        const newDetails = el.querySelector("details");
        if (oldDetails && newDetails && k?.step.observation?.text === step.observation?.text) {
          newDetails.open = oldDetails.open;
        }
        if (k) {
          k.el.replaceWith(el);
          if (anchor === k.el) anchor = el;
        }
        this.keyed.set(step.index, { step, el });
      }
      if (el !== anchor) this.list.insertBefore(el, anchor);
      anchor = el.nextSibling;
    }
    for (const [index, k] of this.keyed) {
      if (!seen.has(index)) {
        k.el.remove();
        this.keyed.delete(index);
      }
    }
    if (
      !previous ||
      previous.finalAnswer !== run.finalAnswer ||
      previous.status !== run.status ||
      previous.error !== run.error ||
      previous.summaries !== run.summaries ||
      answerStep(previous) !== answerStep(run)
    ) {
      this.renderTail(run);
    }
  }

  private renderTail(run: RunView): void {
    const parts: HTMLElement[] = [];
    // The agent folded older steps into a summary to stay within the context: said, since the
    // model answers from the summary and no longer from those steps (it was kept and never shown).
    for (const s of run.summaries) {
      parts.push(
        h(
          "details",
          { class: "context-summary muted" },
          h(
            "summary",
            null,
            `Context summarized after step ${s.afterStep}: ${s.folded} older messages folded`,
          ),
          h("div", { class: "summary-text" }, s.text),
        ),
      );
    }
    if (run.finalAnswer !== null) {
      // The answer's sources beside its text: a small model's text can be a word copied from
      // what it read ("Words"), and the item it cites is what the run found.
      const cited = answerStep(run)?.citations ?? [];
      const sources = itemLinks(cited, this.open, "Sources of the answer", "items citations");
      parts.push(
        h(
          "section",
          { class: `final status-${run.status}`, "aria-label": "Final answer" },
          h("header", null, h("h3", null, "Answer"), statusBadge(run.status)),
          h("div", { class: "final-text" }, run.finalAnswer),
          sources
            ? h("div", { class: "cited sources" }, h("span", { class: "muted" }, "Sources "), sources)
            : null,
        ),
      );
    } else if (run.status !== "running") {
      parts.push(
        h(
          "section",
          { class: `final status-${run.status}` },
          h("header", null, h("h3", null, "Ended without an answer"), statusBadge(run.status)),
        ),
      );
    }
    if (run.error) parts.push(h("p", { class: "error-box", role: "alert" }, run.error));
    replaceChildren(this.tail, parts);
  }
}

const TODO_ICON: Record<string, string> = {
  pending: "○",
  in_progress: "◐",
  completed: "●",
  failed: "✕",
  blocked: "⊘",
  cancelled: "–",
};

export function renderTodos(el: HTMLElement, todos: TodoItem[], changed: string[]): void {
  if (todos.length === 0) {
    replaceChildren(el, h("p", { class: "muted" }, "No plan yet."));
    return;
  }
  const changedSet = new Set(changed);
  replaceChildren(
    el,
    h(
      "ol",
      { class: "todos" },
      todos.map((t) =>
        h(
          "li",
          {
            class: `todo todo-${t.status}${changedSet.has(t.id) ? " changed" : ""}`,
            "data-todo": t.id,
          },
          h("span", { class: "todo-icon", "aria-hidden": "true" }, TODO_ICON[t.status] ?? "?"),
          h(
            "div",
            { class: "todo-body" },
            h("div", { class: "todo-title" }, t.title),
            t.description ? h("div", { class: "muted" }, t.description) : null,
            h(
              "div",
              { class: "todo-meta" },
              h("span", { class: "todo-status" }, t.status.replace("_", " ")),
              t.priority ? h("span", { class: `priority priority-${t.priority}` }, t.priority) : null,
              t.dependencies && t.dependencies.length
                ? h("span", { class: "deps" }, `after ${t.dependencies.join(", ")}`)
                : null,
              h("span", { class: "muted" }, `#${t.id}`),
            ),
          ),
        ),
      ),
    ),
  );
}

/// The step that gave the run's answer: its last with one.
function answerStep(run: RunView): StepView | undefined {
  for (let i = run.steps.length - 1; i >= 0; i--) {
    if (run.steps[i].finalAnswer !== null) return run.steps[i];
  }
  return undefined;
}
