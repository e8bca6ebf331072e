// The whole UI state and the pure reducer to it: the shell's events (`AppEvent`, mirroring the
// core) and the page's own actions (`UiAction`: the screen shown, the lists read from the core,
// notices, a run started or reopened here). Nothing here touches the DOM: the renderer compares
// objects by identity, so a reducer that replaces only what changed (the one step a token
// belongs to, not the other 499) keeps a long trace cheap to update. A run's own view and its
// reduction are in run-view.ts.

import { newRun, reduceRun, runFromRecord, type RunView } from "./run-view";
import type {
  AppEvent,
  AppInfo,
  CatalogueModel,
  Discovery,
  IndexReport,
  ModelStatus,
  RemoteStatus,
  RepoStatus,
  RunRecord,
  ServeStatus,
  Settings,
} from "./types";

export {
  canResume,
  emptyStep,
  isLive,
  runFromRecord,
  stepFromRecord,
  stepStats,
  type RunView,
  type StepStats,
  type StepView,
} from "./run-view";

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

/// A catalogue model's download, from the Download button to its end.
export interface FetchView {
  id: string;
  model: string;
  /// Bytes downloaded of all parts together; `total` is 0 until known.
  done: number;
  total: number;
  /// The part being downloaded (from 1) of `parts`; 0 before the first.
  part: number;
  parts: number;
  state: "fetching" | "done" | "failed";
  error: string | null;
}

/// The workspace's embedding for search by meaning (null until a pass reported).
export interface EmbedView {
  model: string;
  done: number;
  total: number;
  state: "embedding" | "done" | "failed";
  error: string | null;
  /// Units without a vector when the last pass ended (the model gives their text NaN).
  left: number;
}

export type Screen = "run" | "search" | "models" | "workspace" | "history" | "settings";

/// A message from a command that failed outside any stream, or a confirmation.
export interface Notice {
  id: number;
  text: string;
  error: boolean;
}

export interface State {
  run: RunView | null;
  model: ModelView;
  /// Indexing jobs by source, newest last.
  indexing: IndexView[];
  embedding: EmbedView | null;
  /// The screen shown.
  screen: Screen;
  /// What the shell said of itself at start (null until it answered, or if it failed).
  info: AppInfo | null;
  /// The models found, as last read (null until the Models screen read them).
  discovery: Discovery | null;
  /// The catalogue's models (null until the Models screen read them).
  catalogue: CatalogueModel[] | null;
  /// Downloads of catalogue models by id, this session's.
  fetches: Record<string, FetchView>;
  /// The workspace's sources, as last read.
  repos: RepoStatus[];
  /// The kept runs, as last read (the History screen).
  runs: RunRecord[];
  /// The settings, as last read or saved (null until read).
  settings: Settings | null;
  /// The models served elsewhere, as last probed (null until the Models screen read them).
  remotes: RemoteStatus[] | null;
  /// The model in use over the OpenAI API, when served.
  serving: ServeStatus | null;
  /// Shown until dismissed (errors) or for a few seconds (confirmations), oldest first.
  notices: Notice[];
  /// The id the last notice was given (ids are never reused).
  lastNoticeId: number;
}

export const initialState: State = {
  run: null,
  model: { current: null, loading: null, error: null },
  indexing: [],
  embedding: null,
  screen: "run",
  info: null,
  discovery: null,
  catalogue: null,
  fetches: {},
  repos: [],
  runs: [],
  settings: null,
  remotes: null,
  serving: null,
  notices: [],
  lastNoticeId: 0,
};

/// The page's own actions: what it learnt from a command's answer or the user did. Applied at
/// once (not queued for the next frame as the shell's events are).
export type UiAction =
  | { kind: "ui_screen"; screen: Screen }
  | { kind: "ui_info"; info: AppInfo | null }
  | { kind: "ui_discovery"; discovery: Discovery }
  | { kind: "ui_catalogue"; catalogue: CatalogueModel[] }
  /// Download pressed: shown at once, before the shell's first event (checking a file already
  /// there takes a while).
  | { kind: "ui_fetch"; id: string; model: string }
  | { kind: "ui_repos"; repos: RepoStatus[] }
  | { kind: "ui_runs"; runs: RunRecord[] }
  | { kind: "ui_settings"; settings: Settings | null }
  | { kind: "ui_remotes"; remotes: RemoteStatus[] }
  | { kind: "ui_serving"; serving: ServeStatus | null }
  | { kind: "ui_notice"; text: string; error: boolean }
  | { kind: "ui_dismiss"; id: number }
  /// A run the user just started here, before the shell's first event.
  | { kind: "ui_start_run"; task: string }
  /// A kept run shown (from History), or continued from its last step.
  | { kind: "ui_open_run"; record: RunRecord }
  | { kind: "ui_resume_run"; record: RunRecord }
  /// The run view emptied (the UI benchmark, between cases).
  | { kind: "ui_clear_run" }
  /// The model in use was unloaded at the user's request.
  | { kind: "ui_unloaded" }
  /// The model in use as the core says after a load failed (the old one may be gone: a large
  /// model is loaded after the one in use is unloaded to make room).
  | { kind: "ui_model_now"; model: ModelStatus | null };

/// Everything the reducer applies.
export type Action = AppEvent | UiAction;

/// A run the user just started, before the shell's first event.
export function startRun(state: State, task: string): State {
  return { ...state, run: newRun(task, state.model.current?.name ?? "") };
}

/// A history run continued: its steps stay, the new ones follow live.
export function resumeRun(state: State, run: RunView): State {
  return { ...state, run: { ...run, fromHistory: false, status: "running", error: null } };
}

function reduceFetch(state: State, id: string, model: string, f: (v: FetchView) => FetchView): State {
  const was = state.fetches[id] ?? { id, model, done: 0, total: 0, part: 0, parts: 0, state: "fetching", error: null };
  return { ...state, fetches: { ...state.fetches, [id]: f({ ...was, model }) } };
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
    // A job's first event after the last one ended starts it afresh: the last job's report
    // and notes stayed beside the new one's progress, and beside its failure.
    const last = indexing[at];
    const fresh =
      last.state === "indexing" ? last : { ...last, state: "indexing" as const, notes: [], report: null, error: null };
    indexing[at] = f(fresh);
  }
  return { ...state, indexing };
}

function addNotice(state: State, text: string, error: boolean): State {
  const id = state.lastNoticeId + 1;
  return { ...state, lastNoticeId: id, notices: [...state.notices, { id, text, error }] };
}

/// Applies one of the page's own actions.
function reduceUi(state: State, a: UiAction): State {
  switch (a.kind) {
    case "ui_screen":
      return a.screen === state.screen ? state : { ...state, screen: a.screen };
    case "ui_info":
      // The model the shell already had loaded is the one in use.
      return {
        ...state,
        info: a.info,
        model: a.info?.model ? { ...state.model, current: a.info.model } : state.model,
      };
    case "ui_discovery":
      return { ...state, discovery: a.discovery };
    case "ui_catalogue":
      return { ...state, catalogue: a.catalogue };
    case "ui_fetch":
      return reduceFetch(state, a.id, a.model, () => ({ id: a.id, model: a.model, done: 0, total: 0, part: 0, parts: 0, state: "fetching", error: null }));
    case "ui_repos":
      return { ...state, repos: a.repos };
    case "ui_runs":
      return { ...state, runs: a.runs };
    case "ui_settings":
      return { ...state, settings: a.settings };
    case "ui_remotes":
      return { ...state, remotes: a.remotes };
    case "ui_serving":
      return { ...state, serving: a.serving };
    case "ui_notice":
      return addNotice(state, a.text, a.error);
    case "ui_dismiss":
      return state.notices.some((n) => n.id === a.id)
        ? { ...state, notices: state.notices.filter((n) => n.id !== a.id) }
        : state;
    case "ui_start_run":
      return startRun(state, a.task);
    case "ui_open_run":
      return { ...state, run: runFromRecord(a.record) };
    case "ui_resume_run":
      return resumeRun(state, runFromRecord(a.record));
    case "ui_clear_run":
      return { ...state, run: null };
    case "ui_unloaded":
      return { ...state, model: { ...state.model, current: null } };
    case "ui_model_now":
      return { ...state, model: { ...state.model, current: a.model } };
  }
}

/// Applies one event from the shell, or one of the page's actions.
export function reduce(state: State, ev: Action): State {
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
    case "fetch_progress":
      return reduceFetch(state, ev.id, ev.model, (v) => ({
        ...v,
        done: ev.done,
        total: ev.total,
        part: ev.part,
        parts: ev.parts,
        state: "fetching",
        error: null,
      }));
    case "fetched":
      return reduceFetch(state, ev.id, ev.model, (v) => ({ ...v, done: v.total, state: "done", error: null }));
    case "fetch_failed":
      return reduceFetch(state, ev.id, ev.model, (v) => ({ ...v, state: "failed", error: ev.message }));
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
      return reduceIndex(state, ev.source, (v) => ({ ...v, state: "failed", report: null, error: ev.message }));
    case "embed_progress":
      return { ...state, embedding: { model: ev.model, done: ev.done, total: ev.total, state: "embedding", error: null, left: 0 } };
    case "embedded": {
      const left = ev.report.unembeddable ?? 0;
      return {
        ...state,
        embedding: { model: ev.model, done: ev.report.total - left, total: ev.report.total, state: "done", error: null, left },
      };
    }
    case "embed_failed":
      return {
        ...state,
        embedding: { model: ev.model, done: state.embedding?.done ?? 0, total: state.embedding?.total ?? 0, state: "failed", error: ev.message, left: 0 },
      };
    case "serve_failed":
      return addNotice({ ...state, serving: null }, ev.message, true);
    default:
      return reduceUi(state, ev);
  }
}

/// Applies a batch (one animation frame's worth of events).
export function reduceAll(state: State, events: readonly Action[]): State {
  let s = state;
  for (const ev of events) s = reduce(s, ev);
  return s;
}
