// A run's view and the pure reduction of the agent's events to it: the steps as they stream, the
// plan, the outcome, and the figures derived from a step's record. Nothing here touches the DOM:
// the renderer compares objects by identity, so a reducer that replaces only what changed (the
// one step a token belongs to, not the other 499) keeps a long trace cheap to update.

import type { AppEvent, ItemRef, RunRecord, RunStatus, StepRecord, TodoItem } from "./types";

export interface StepView {
  index: number;
  /// The raw output as it streams in (shown until the step is parsed).
  output: string;
  thought: string;
  action: { tool: string; args: Record<string, unknown> } | null;
  observation: { text: string; error: boolean } | null;
  /// What the observation shows that can be opened, from the tool's own locators.
  items: ItemRef[];
  /// A final answer's citations (items the run saw), and what it names that it never saw.
  citations: ItemRef[];
  unseen: string[];
  /// Burrow's own step (the search with the task), not the model's.
  automatic: boolean;
  /// The model's choice of the run's first call, made apart from the run's steps.
  routed: boolean;
  /// The model's yes or no to an item Burrow opened: does it answer the task?
  check: { item: ItemRef; answers: boolean } | null;
  finalAnswer: string | null;
  /// The step's kept record: tokens, cache reuse and timings (set when the step is done).
  record: StepRecord | null;
  done: boolean;
}

export interface RunView {
  runId: number | null;
  task: string;
  protocol: string;
  model: string;
  status: RunStatus;
  steps: StepView[];
  todos: TodoItem[];
  /// Ids of the plan items the last change added or altered (animated once).
  todoChanged: string[];
  finalAnswer: string | null;
  error: string | null;
  /// Context summaries, with the step count when each happened.
  summaries: { afterStep: number; text: string; folded: number }[];
  /// Reopened from history rather than live.
  fromHistory: boolean;
}

export function emptyStep(index: number): StepView {
  return {
    index,
    output: "",
    thought: "",
    action: null,
    observation: null,
    items: [],
    citations: [],
    unseen: [],
    automatic: false,
    routed: false,
    check: null,
    finalAnswer: null,
    record: null,
    done: false,
  };
}

/// A run the user just started, before the shell's first event.
export function newRun(task: string, model: string): RunView {
  return {
    runId: null,
    task,
    protocol: "",
    model,
    status: "running",
    steps: [],
    todos: [],
    todoChanged: [],
    finalAnswer: null,
    error: null,
    summaries: [],
    fromHistory: false,
  };
}

/// A run from the database, as the same view a live run has.
export function runFromRecord(record: RunRecord): RunView {
  const steps = record.steps.map(stepFromRecord);
  const last = record.steps[record.steps.length - 1];
  return {
    runId: record.id,
    task: record.task,
    protocol: record.protocol,
    model: record.model ?? "",
    status: record.status,
    steps,
    todos: last ? last.todos : [],
    todoChanged: [],
    finalAnswer: record.final_answer,
    error: record.error,
    summaries: [],
    fromHistory: true,
  };
}

export function stepFromRecord(r: StepRecord): StepView {
  return {
    index: r.index,
    output: r.output,
    thought: r.thought,
    action: r.action,
    observation: r.observation === null ? null : { text: r.observation, error: r.error !== null },
    items: r.items ?? [],
    citations: r.citations ?? [],
    unseen: r.unseen ?? [],
    automatic: r.origin?.by === "search" || r.origin?.by === "open",
    routed: r.origin?.by === "route",
    check: r.origin?.by === "check" ? { item: r.origin.item, answers: r.origin.answers } : null,
    finalAnswer: r.final_answer,
    record: r,
    done: true,
  };
}

function withStep(run: RunView, index: number, f: (s: StepView) => StepView): RunView {
  const steps = run.steps.slice();
  let at = steps.length - 1;
  // Events almost always belong to the last step; search back only when they do not.
  while (at >= 0 && steps[at].index !== index) at--;
  if (at < 0) {
    steps.push(f(emptyStep(index)));
  } else {
    steps[at] = f(steps[at]);
  }
  return { ...run, steps };
}

function changedTodos(before: TodoItem[], after: TodoItem[]): string[] {
  const old = new Map(before.map((t) => [t.id, JSON.stringify(t)]));
  return after.filter((t) => old.get(t.id) !== JSON.stringify(t)).map((t) => t.id);
}

export function reduceRun(run: RunView, ev: Extract<AppEvent, { kind: "agent" }>["event"]): RunView {
  switch (ev.type) {
    case "run_started":
      return {
        ...run,
        runId: ev.run_id,
        task: ev.task,
        protocol: ev.protocol,
        model: ev.model,
        status: "running",
      };
    case "step_started":
      // Started again (a retry after a malformed output): what streamed of it is void.
      return withStep(run, ev.index, () => emptyStep(ev.index));
    case "token":
      return withStep(run, ev.index, (s) => ({ ...s, output: s.output + ev.text }));
    case "thought_delta":
      return withStep(run, ev.index, (s) => ({ ...s, thought: s.thought + ev.text }));
    case "todo_changed":
      return { ...run, todos: ev.items, todoChanged: changedTodos(run.todos, ev.items) };
    case "step_finished":
      // The step's record is the one account of it: what streamed before was a preview.
      return withStep(run, ev.step.index, () => stepFromRecord(ev.step));
    case "context_summarized":
      return {
        ...run,
        summaries: [
          ...run.summaries,
          { afterStep: run.steps.length, text: ev.summary, folded: ev.messages_folded },
        ],
      };
    case "final":
      return { ...run, finalAnswer: ev.answer, status: ev.status };
    case "error":
      return { ...run, error: ev.message };
  }
}

// ---- derived figures ----

export interface StepStats {
  promptTokens: number;
  reusePct: number | null;
  ttftMs: number;
  tokPerSec: number | null;
  generated: number;
  toolMs: number;
}

export function stepStats(r: StepRecord): StepStats {
  return {
    promptTokens: r.prompt_tokens,
    reusePct: r.prompt_tokens > 0 ? (100 * r.cached_tokens) / r.prompt_tokens : null,
    ttftMs: r.ttft_ms,
    // The first token's time is prefill; the rate is over the tokens after it.
    tokPerSec:
      r.decode_ms > 0 && r.generated_tokens > 1
        ? ((r.generated_tokens - 1) * 1000) / r.decode_ms
        : null,
    generated: r.generated_tokens,
    toolMs: r.tool_ms,
  };
}

/// Whether a run can be continued from its last step: one whose process ended mid-run (the
/// core refuses the others; a stopped run was the user's decision).
export function canResume(status: RunStatus): boolean {
  return status === "interrupted";
}

export function isLive(run: RunView | null): boolean {
  return run !== null && !run.fromHistory && run.status === "running";
}
