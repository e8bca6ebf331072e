// The reducer's cases for the page's own actions (UiAction): the screen, the lists read from the
// core, notices, runs started or reopened here, and their mixing with the shell's events.

import { describe, expect, it } from "vitest";
import { initialState, isLive, reduce, reduceAll, type Action, type State } from "../src/state";
import type { AppInfo, ModelStatus, RepoStatus, RunRecord, Settings, StepRecord } from "../src/types";

const MODEL: ModelStatus = {
  name: "SmolLM2", path: "/m.gguf", quantization: "Q4_1", context_size: 4096, threads: 2,
  gpu_layers: 0, layers: 31, gpus: [], kv_cache: "f16", memory_bytes: 1, load_ms: 1, fallback_template: false, remote: null,
};

function repo(name: string, files = 1): RepoStatus {
  return {
    id: 1, name, root: `/src/${name}`, is_git: true, remote: null, status: "ready", error: null,
    indexed_at: 1, head: null, files, skipped_files: 0, commits: 0, branches: 0, tags: 0,
    issues: 0, pull_requests: 0, comments: 0, documents: 0,
  };
}

function step(index: number): StepRecord {
  return {
    index, prompt_tokens: 10, cached_tokens: 0, output: "{}", thought: `step ${index}`, action: null,
    final_answer: null, observation: "seen", error: null, todos: [{ id: "a", title: "A", status: "in_progress" }],
    generated_tokens: 2, setup_ms: 0, ttft_ms: 1, decode_ms: 1, tool_ms: 0,
  };
}

function runRecord(id: number, status: RunRecord["status"] = "interrupted"): RunRecord {
  return {
    id, task: `task ${id}`, model: "SmolLM2", protocol: "json-typed", status, final_answer: null,
    error: "the process ended", started_at: 1, ended_at: null, steps: [step(1), step(2)],
  };
}

const SETTINGS: Settings = {
  protocol: "json-typed", max_steps: 20, temperature: 0.2, grammar: true, search_first: true, route_first: true, summarize_at: 0.7,
  require_plan_done: false, persona: "", embedding_model: "", embedding_prompts: null, models: {}, mcp_servers: [],
  serve: { enabled: false, port: 8089, api_key_env: "" },
};

describe("reduce: the page's own state", () => {
  it("starts on the Run screen with nothing read yet", () => {
    expect(initialState.screen).toBe("run");
    expect([initialState.info, initialState.discovery, initialState.settings]).toEqual([null, null, null]);
    expect([initialState.repos, initialState.runs, initialState.notices]).toEqual([[], [], []]);
  });

  it("selects a screen, and selecting the one shown changes nothing", () => {
    const s = reduce(initialState, { kind: "ui_screen", screen: "history" });
    expect(s.screen).toBe("history");
    expect(reduce(s, { kind: "ui_screen", screen: "history" })).toBe(s);
    expect(reduce(s, { kind: "ui_screen", screen: "run" }).screen).toBe("run");
  });

  it("replaces the repos list with the one read, without touching the rest", () => {
    let s = reduce(initialState, { kind: "ui_repos", repos: [repo("a"), repo("b")] });
    const run = s.run;
    s = reduce(s, { kind: "ui_repos", repos: [repo("b", 7)] });
    expect(s.repos.map((r) => [r.name, r.files])).toEqual([["b", 7]]);
    expect(s.run).toBe(run);
    expect(s.model).toBe(initialState.model);
    expect(reduce(s, { kind: "ui_repos", repos: [] }).repos).toEqual([]);
  });

  it("replaces the runs list, the models found and the settings with those read", () => {
    let s = reduceAll(initialState, [
      { kind: "ui_runs", runs: [runRecord(1), runRecord(2)] },
      { kind: "ui_runs", runs: [runRecord(3)] },
      { kind: "ui_discovery", discovery: { models: [], problems: [{ path: "/x.gguf", source: "models", error: "not GGUF" }] } },
      { kind: "ui_settings", settings: SETTINGS },
    ]);
    expect(s.runs.map((r) => r.id)).toEqual([3]);
    expect(s.discovery?.problems[0].error).toBe("not GGUF");
    expect(s.settings).toEqual(SETTINGS);
    s = reduce(s, { kind: "ui_settings", settings: { ...SETTINGS, max_steps: 5 } });
    expect(s.settings?.max_steps).toBe(5);
  });

  it("takes the app's info, and the model it already had loaded as the one in use", () => {
    const info: AppInfo = { version: "0.1.0", home: "/h", default_workspace: null, model: MODEL, running: false, protocols: ["json-typed", "text"] };
    const s = reduce(initialState, { kind: "ui_info", info });
    expect(s.info).toEqual(info);
    expect(s.model.current).toEqual(MODEL);
    // None loaded: the model view stays as it was (a load under way is not forgotten).
    const loading = reduce(initialState, { kind: "load_progress", model: "big", progress: 0.3 });
    const after = reduce(loading, { kind: "ui_info", info: { ...info, model: null } });
    expect(after.model).toBe(loading.model);
    // A failed app_info: no info, nothing else changed.
    expect(reduce(s, { kind: "ui_info", info: null })).toMatchObject({ info: null, model: { current: MODEL } });
  });

  it("adds notices with ids never reused, and dismisses only the one asked", () => {
    let s = reduceAll(initialState, [
      { kind: "ui_notice", text: "Reading history: gone", error: true },
      { kind: "ui_notice", text: "Settings saved.", error: false },
    ]);
    expect(s.notices).toEqual([
      { id: 1, text: "Reading history: gone", error: true },
      { id: 2, text: "Settings saved.", error: false },
    ]);
    s = reduce(s, { kind: "ui_dismiss", id: 1 });
    expect(s.notices.map((n) => n.id)).toEqual([2]);
    // Dismissed already (a click after the timer): nothing changes.
    expect(reduce(s, { kind: "ui_dismiss", id: 1 })).toBe(s);
    s = reduce(s, { kind: "ui_notice", text: "again", error: true });
    expect(s.notices.map((n) => n.id)).toEqual([2, 3]);
  });

  it("keeps the server's state, and a failure to serve at start is an error notice that clears it", () => {
    const serving = { url: "http://127.0.0.1:8089/v1", model: "SmolLM2", key_required: false };
    let s = reduce(initialState, { kind: "ui_serving", serving });
    expect(s.serving).toEqual(serving);
    s = reduce(s, { kind: "serve_failed", message: "The model could not be served on 127.0.0.1:8089: address in use" });
    expect(s.serving).toBeNull();
    expect(s.notices).toEqual([{ id: 1, text: "The model could not be served on 127.0.0.1:8089: address in use", error: true }]);
    const remotes = [{ name: "gpu", url: "http://10.0.0.2:8080", reachable: false, problem: "connection refused" }];
    expect(reduce(s, { kind: "ui_remotes", remotes }).remotes).toEqual(remotes);
  });

  it("starts a run with the model in use, live before the shell's first event", () => {
    const loaded = reduce(initialState, { kind: "loaded", model: MODEL });
    const s = reduce(loaded, { kind: "ui_start_run", task: "Who wrote it?" });
    expect(s.run).toMatchObject({ task: "Who wrote it?", model: "SmolLM2", status: "running", runId: null, steps: [], fromHistory: false });
    expect(isLive(s.run)).toBe(true);
  });

  it("opens a kept run as history, and continues one live with its steps kept", () => {
    const opened = reduce(initialState, { kind: "ui_open_run", record: runRecord(9) });
    expect(opened.run).toMatchObject({ runId: 9, task: "task 9", status: "interrupted", fromHistory: true, error: "the process ended" });
    expect(opened.run?.steps.map((x) => x.index)).toEqual([1, 2]);
    expect(opened.run?.todos.map((t) => t.id)).toEqual(["a"]);
    expect(isLive(opened.run)).toBe(false);
    const resumed = reduce(opened, { kind: "ui_resume_run", record: runRecord(9) });
    expect(resumed.run).toMatchObject({ runId: 9, status: "running", fromHistory: false, error: null });
    expect(resumed.run?.steps.map((x) => x.index)).toEqual([1, 2]);
    expect(isLive(resumed.run)).toBe(true);
    // The continued run's next step follows its kept ones.
    const next = reduce(resumed, { kind: "agent", event: { type: "step_started", index: 3 } });
    expect(next.run?.steps.map((x) => x.index)).toEqual([1, 2, 3]);
  });

  it("clears the run view, and forgets the model in use once unloaded", () => {
    let s: State = reduceAll(initialState, [
      { kind: "loaded", model: MODEL },
      { kind: "ui_start_run", task: "t" },
      { kind: "load_failed", model: "other", message: "no" },
    ]);
    s = reduce(s, { kind: "ui_clear_run" });
    expect(s.run).toBeNull();
    s = reduce(s, { kind: "ui_unloaded" });
    expect(s.model).toEqual({ current: null, loading: null, error: { model: "other", message: "no" } });
  });

  it("mixes the page's actions with the shell's events in one batch, in order", () => {
    const batch: Action[] = [
      { kind: "loaded", model: MODEL },
      { kind: "ui_start_run", task: "t" },
      { kind: "agent", event: { type: "run_started", run_id: 4, task: "t", protocol: "text", model: "SmolLM2" } },
      { kind: "ui_screen", screen: "models" },
      { kind: "run_ended", run_id: 4, status: "succeeded", final_answer: "done", error: null },
      { kind: "ui_runs", runs: [runRecord(4, "succeeded")] },
    ];
    const s = reduceAll(initialState, batch);
    expect(s.run).toMatchObject({ runId: 4, status: "succeeded", finalAnswer: "done" });
    expect(s.screen).toBe("models");
    expect(s.runs.map((r) => r.status)).toEqual(["succeeded"]);
  });
});

describe("reduce: embedding for search by meaning (issue 18)", () => {
  it("follows a pass's progress to its end, and keeps the count when it fails", () => {
    let s = reduce(initialState, { kind: "embed_progress", model: "all-MiniLM-L6-v2.F16.gguf", done: 64, total: 200 });
    expect(s.embedding).toEqual({ model: "all-MiniLM-L6-v2.F16.gguf", done: 64, total: 200, state: "embedding", error: null, left: 0 });
    s = reduce(s, { kind: "embed_failed", model: "all-MiniLM-L6-v2.F16.gguf", message: "the model stopped" });
    expect(s.embedding).toMatchObject({ done: 64, total: 200, state: "failed", error: "the model stopped" });
    s = reduce(s, {
      kind: "embedded",
      model: "all-MiniLM-L6-v2.F16.gguf",
      report: { embedded: 136, reused: 0, total: 200, replaced_model: null, unembeddable: 0 },
    });
    expect(s.embedding).toMatchObject({ done: 200, total: 200, state: "done", error: null });
  });

  it("counts the units a pass left without a vector as not embedded", () => {
    const s = reduce(initialState, {
      kind: "embedded",
      model: "m.gguf",
      report: { embedded: 197, reused: 0, total: 200, replaced_model: null, unembeddable: 3 },
    });
    expect(s.embedding).toMatchObject({ done: 197, total: 200, state: "done", left: 3 });
  });

  it("says why search is by words when the model is missing, before any pass ran", () => {
    const s = reduce(initialState, { kind: "embed_failed", model: "the embedding model", message: "not downloaded" });
    expect(s.embedding).toMatchObject({ done: 0, total: 0, state: "failed", error: "not downloaded" });
  });
});
