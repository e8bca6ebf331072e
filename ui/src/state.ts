// The view state and the pure reducer from the shell's events to it. Nothing here touches the
// DOM: the renderer compares objects by identity, so a reducer that replaces only what changed
// (the one step a token belongs to, not the other 499) keeps a long trace cheap to update.

import type {
  AppEvent,
  IndexReport,
  ModelStatus,
  RunRecord,
  RunStatus,
  StepRecord,
  TodoItem,
} from "./types";

export interface StepView {
  index: number;
  /// The raw output as it streams in (shown until the step is parsed).
  output: string;
  thought: string;
  action: { tool: string; args: Record<string, unknown> } | null;
  observation: { text: string; error: boolean } | null;
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

export interface IndexView {
  source: string;
  repo: string;
  phase: string;
  done: number;
  total: number;
  state: "indexing" | "done" | "failed";
  notes: string[];
  report: IndexReport | null;
  error: string | null;
}

export interface ModelView {
  current: ModelStatus | null;
  loading: { model: string; progress: number } | null;
  error: { model: string; message: string } | null;
}

export interface State {
  run: RunView | null;
  model: ModelView;
  /// Indexing jobs by source, newest last.
  indexing: IndexView[];
}

export const initialState: State = {
  run: null,
  model: { current: null, loading: null, error: null },
  indexing: [],
};

export function emptyStep(index: number): StepView {
  return {
    index,
    output: "",
    thought: "",
    action: null,
    observation: null,
    finalAnswer: null,
    record: null,
    done: false,
  };
}

/// A run the user just started, before the shell's first event.
export function startRun(state: State, task: string): State {
  return {
    ...state,
    run: {
      runId: null,
      task,
      protocol: "",
      model: state.model.current?.name ?? "",
      status: "running",
      steps: [],
      todos: [],
      todoChanged: [],
      finalAnswer: null,
      error: null,
      summaries: [],
      fromHistory: false,
    },
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

function reduceRun(run: RunView, ev: Extract<AppEvent, { kind: "agent" }>["event"]): RunView {
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
    case "thought":
      return withStep(run, ev.index, (s) => ({ ...s, thought: ev.text }));
    case "action":
      return withStep(run, ev.index, (s) => ({ ...s, action: { tool: ev.tool, args: ev.args } }));
    case "observation":
      return withStep(run, ev.index, (s) => ({
        ...s,
        observation: { text: ev.text, error: ev.error },
      }));
    case "todo_changed":
      return { ...run, todos: ev.items, todoChanged: changedTodos(run.todos, ev.items) };
    case "step_finished":
      return withStep(run, ev.step.index, (s) => ({
        ...s,
        thought: ev.step.thought || s.thought,
        action: ev.step.action ?? s.action,
        finalAnswer: ev.step.final_answer,
        // A step that did not parse has no observation event; its error is the observation.
        observation:
          s.observation ??
          (ev.step.error !== null ? { text: ev.step.error, error: true } : null),
        record: ev.step,
        done: true,
      }));
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

function reduceIndex(state: State, source: string, f: (v: IndexView) => IndexView): State {
  const at = state.indexing.findIndex((v) => v.source === source);
  const indexing = state.indexing.slice();
  if (at < 0) {
    indexing.push(
      f({
        source,
        repo: "",
        phase: "",
        done: 0,
        total: 0,
        state: "indexing",
        notes: [],
        report: null,
        error: null,
      }),
    );
  } else {
    indexing[at] = f(indexing[at]);
  }
  return { ...state, indexing };
}

/// Applies one event from the shell.
export function reduce(state: State, ev: AppEvent): State {
  switch (ev.kind) {
    case "agent": {
      // A run's events before the page knew of it (a run started elsewhere, a reload).
      const base = state.run && !state.run.fromHistory ? state : startRun(state, "");
      return { ...base, run: reduceRun(base.run as RunView, ev.event) };
    }
    case "run_ended": {
      if (!state.run) return state;
      return {
        ...state,
        run: {
          ...state.run,
          runId: ev.run_id ?? state.run.runId,
          status: ev.status,
          finalAnswer: ev.final_answer ?? state.run.finalAnswer,
          error: ev.error ?? state.run.error,
          steps: state.run.steps.map((s) => (s.done ? s : { ...s, done: true })),
        },
      };
    }
    case "load_progress":
      return {
        ...state,
        model: {
          ...state.model,
          loading: { model: ev.model, progress: ev.progress },
          error: null,
        },
      };
    case "loaded":
      return { ...state, model: { current: ev.model, loading: null, error: null } };
    case "load_failed":
      return {
        ...state,
        model: {
          ...state.model,
          loading: null,
          error: { model: ev.model, message: ev.message },
        },
      };
    case "index":
      return reduceIndex(state, ev.source, (v) =>
        ev.event.event === "progress"
          ? {
              ...v,
              repo: ev.event.repo,
              phase: ev.event.phase,
              done: ev.event.done,
              total: ev.event.total,
              state: "indexing",
              error: null,
            }
          : { ...v, repo: ev.event.repo, notes: [...v.notes, ev.event.message] },
      );
    case "indexed":
      return reduceIndex(state, ev.source, (v) => ({
        ...v,
        repo: ev.report.repo,
        state: "done",
        report: ev.report,
        error: null,
      }));
    case "index_failed":
      return reduceIndex(state, ev.source, (v) => ({ ...v, state: "failed", error: ev.message }));
  }
}

/// Applies a batch (one animation frame's worth of events).
export function reduceAll(state: State, events: readonly AppEvent[]): State {
  let s = state;
  for (const ev of events) s = reduce(s, ev);
  return s;
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

/// A history run continued: its steps stay, the new ones follow live.
export function resumeRun(state: State, run: RunView): State {
  return { ...state, run: { ...run, fromHistory: false, status: "running", error: null } };
}

export function isLive(run: RunView | null): boolean {
  return run !== null && !run.fromHistory && run.status === "running";
}
