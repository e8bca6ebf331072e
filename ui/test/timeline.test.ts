import { describe, expect, it } from "vitest";
import { initialState, reduce, reduceAll, startRun, type State } from "../src/state";
import { Timeline, renderTodos } from "../src/timeline";
import type { AppEvent, ItemRef, StepRecord } from "../src/types";

const agent = (event: any): AppEvent => ({ kind: "agent", event });

function record(index: number, over: Partial<StepRecord> = {}): StepRecord {
  return {
    index,
    prompt_tokens: 100,
    cached_tokens: 0,
    output: "",
    thought: "",
    action: null,
    final_answer: null,
    observation: null,
    error: null,
    todos: [],
    generated_tokens: 1,
    setup_ms: 0,
    ttft_ms: 1,
    decode_ms: 1,
    tool_ms: 0,
    ...over,
  };
}

function runWith(n: number): State {
  let s = startRun(initialState, "t");
  for (let i = 1; i <= n; i++) {
    s = reduceAll(s, [
      agent({ type: "step_started", index: i }),
      agent({
        type: "step_finished",
        step: record(i, {
          action: { tool: "read_file", args: { path: "src/lib.rs" } },
          observation: `src/lib.rs:${i}: fn f() {}`,
          items: [{ kind: "file", path: "src/lib.rs", line: i, repo: "app" }],
        }),
      }),
    ]);
  }
  return s;
}

describe("Timeline", () => {
  it("redraws only the step an event changed, even in a 500-step trace", () => {
    const opened: ItemRef[] = [];
    const t = new Timeline((i) => opened.push(i));
    let s = runWith(500);
    t.update(s.run);
    expect(t.builds).toBe(500);
    const first = t.root.querySelector('[data-step="1"]');
    s = reduce(s, agent({ type: "step_started", index: 501 }));
    for (const piece of ['{"type"', ': "tool"', "}"]) {
      s = reduce(s, agent({ type: "token", index: 501, text: piece }));
      t.update(s.run);
    }
    // One build for the new step, then one per token for that step alone.
    expect(t.builds).toBe(500 + 3);
    expect(t.root.querySelector('[data-step="1"]')).toBe(first);
    expect(t.root.querySelectorAll(".step").length).toBe(501);
    expect(t.root.querySelector('[data-step="501"] .stream')?.textContent).toContain('{"type": "tool"}');
  });

  it("links the items a step's tool located, not what its text looks like, and never parses HTML", () => {
    const opened: ItemRef[] = [];
    const t = new Timeline((i) => opened.push(i));
    const file: ItemRef = { kind: "file", path: "src/a.rs", line: 7, repo: "gui" };
    const issue: ItemRef = { kind: "issue", number: 12, repo: "acme/gui" };
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 1 }),
      agent({
        type: "step_finished",
        step: record(1, {
          action: { tool: "search_code", args: { query: "x", repo: "gui" } },
          // "#99" and "lib.rs:3" look like items, but the tool located only these two.
          observation: '<img src=x onerror="boom()"> src/a.rs:7 and #12, not #99 or lib.rs:3',
          items: [file, issue],
        }),
      }),
    ]);
    t.update(s.run);
    const links = t.root.querySelectorAll<HTMLAnchorElement>("a.item-link");
    expect([...links].map((a) => a.textContent)).toEqual(["src/a.rs:7", "#12"]);
    expect(t.root.querySelector("img")).toBeNull();
    expect(t.root.querySelector(".observation pre")?.textContent).toContain('<img src=x onerror="boom()">');
    links[0].click();
    links[1].click();
    expect(opened).toEqual([file, issue]);
    expect(t.root.querySelector(".args")?.textContent).toBe(JSON.stringify({ query: "x", repo: "gui" }, null, 2));
  });

  it("marks Burrow's own search, links a final answer's citations and flags what it never saw (issue 22)", () => {
    const opened: ItemRef[] = [];
    const t = new Timeline((i) => opened.push(i));
    const issue: ItemRef = { kind: "issue", number: 907, repo: "bitcoin-core/gui" };
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 0 }),
      agent({
        type: "step_finished",
        step: record(0, {
          origin: { by: "search" },
          action: { tool: "search", args: { query: "t" } },
          observation: "1. [issue] #907 ...",
          items: [issue],
        }),
      }),
      agent({ type: "step_started", index: 1 }),
      agent({
        type: "step_finished",
        step: record(1, { final_answer: "It is #907, fixed in #5131.", citations: [issue], unseen: ["#5131"] }),
      }),
    ]);
    t.update(s.run);
    expect(t.root.querySelector('[data-step="0"] .badge.automatic')).not.toBeNull();
    expect(t.root.querySelector('[data-step="1"] .badge.automatic')).toBeNull();
    const cited = t.root.querySelectorAll<HTMLAnchorElement>('[data-step="1"] .citations a.item-link');
    expect([...cited].map((a) => a.textContent)).toEqual(["#907"]);
    cited[0].click();
    expect(opened).toEqual([issue]);
    expect(t.root.querySelector('[data-step="1"] .unseen')?.textContent).toContain("#5131");
  });

  it("marks the model's route as its own first call, not a step by Burrow", () => {
    const t = new Timeline(() => {});
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 0 }),
      agent({
        type: "step_finished",
        step: record(0, {
          origin: { by: "route" },
          action: { tool: "search_issues", args: { label: "Bug" } },
          observation: "2 issues labelled Bug.",
        }),
      }),
    ]);
    t.update(s.run);
    expect(t.root.querySelector('[data-step="0"] .badge.routed')).not.toBeNull();
    expect(t.root.querySelector('[data-step="0"] .badge.automatic')).toBeNull();
  });

  it("shows the answer with its sources, as links that open them", () => {
    const opened: ItemRef[] = [];
    const t = new Timeline((i) => opened.push(i));
    const file: ItemRef = { kind: "file", path: "src/workspace/search/mod.rs", line: 107, repo: "main" };
    let s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 2 }),
      agent({ type: "step_finished", step: record(2, { final_answer: "Words", citations: [file] }) }),
    ]);
    t.update(s.run);
    // The step is recorded before the run's final event: no answer box yet.
    expect(t.root.querySelector(".final")).toBeNull();
    s = reduce(s, agent({ type: "final", answer: "Words", status: "succeeded" }));
    t.update(s.run);
    const sources = t.root.querySelectorAll<HTMLAnchorElement>(".final .sources a.item-link");
    expect([...sources].map((a) => a.textContent)).toEqual(["src/workspace/search/mod.rs:107"]);
    sources[0].click();
    expect(opened).toEqual([file]);
  });

  it("shows the model's check of an opened item, with the item as a link (issue 22)", () => {
    const opened: ItemRef[] = [];
    const t = new Timeline((i) => opened.push(i));
    const wrong: ItemRef = { kind: "issue", number: 897, repo: "bitcoin-core/gui" };
    const right: ItemRef = { kind: "issue", number: 887, repo: "bitcoin-core/gui" };
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 2 }),
      agent({ type: "token", index: 2, text: "no" }),
      agent({
        type: "step_finished",
        step: record(2, { output: "no", thought: "Does bitcoin-core/gui#897 answer the task?", observation: "Then the next match.", origin: { by: "check", item: wrong, answers: false } }),
      }),
      agent({ type: "step_started", index: 4 }),
      agent({
        type: "step_finished",
        step: record(4, { output: "yes", observation: "Then give the final answer.", origin: { by: "check", item: right, answers: true } }),
      }),
    ]);
    t.update(s.run);
    const no = t.root.querySelector('[data-step="2"] .check');
    expect(no?.classList.contains("rejected")).toBe(true);
    expect(no?.textContent).toContain("does not answer the task");
    expect(t.root.querySelector('[data-step="4"] .check.answers')?.textContent).toContain("#887");
    t.root.querySelector<HTMLAnchorElement>('[data-step="4"] .check a.item-link')?.click();
    expect(opened).toEqual([right]);
  });

  it("highlights an error observation and shows the final answer with its status", () => {
    const t = new Timeline(() => undefined);
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 1 }),
      agent({
        type: "step_finished",
        step: record(1, { observation: 'no tool named "nope"', error: 'no tool named "nope"' }),
      }),
      agent({ type: "final", answer: "Done: see #3.", status: "succeeded" }),
      { kind: "run_ended", run_id: 1, status: "succeeded", final_answer: "Done: see #3.", error: null },
    ]);
    t.update(s.run);
    const obs = t.root.querySelector("details.observation.error") as HTMLDetailsElement;
    expect(obs.open).toBe(true);
    expect(t.root.querySelector(".step.has-error")).not.toBeNull();
    expect(t.root.querySelector(".final")?.textContent).toContain("Done: see #3.");
    expect(t.root.querySelector(".final .badge")?.textContent).toBe("Succeeded");
  });
});

describe("renderTodos", () => {
  it("shows status, priority and dependencies, and marks only changed items", () => {
    const el = document.createElement("div");
    renderTodos(
      el,
      [
        { id: "1", title: "Find it", status: "completed", priority: "high" },
        { id: "2", title: "Answer", status: "in_progress", dependencies: ["1"] },
      ],
      ["2"],
    );
    const items = el.querySelectorAll("li.todo");
    expect([...items].map((li) => li.className)).toEqual(["todo todo-completed", "todo todo-in_progress changed"]);
    expect(items[0].textContent).toContain("high");
    expect(items[1].textContent).toContain("after 1");
    expect(items[1].querySelector(".todo-status")?.textContent).toBe("in progress");
  });
});

describe("context summaries", () => {
  // The agent's summaries of older steps were kept in the run's view and never shown (found in
  // review): the model answers from the summary, so the reader sees that it was made.
  it("a summarized context is said in the timeline, with its text", () => {
    let s = runWith(2);
    s = reduce(
      s,
      agent({ type: "context_summarized", summary: "Searched twice; #12 looked right.", messages_folded: 4, summary_tokens: 9 }),
    );
    const t = new Timeline(() => undefined);
    t.update(s.run);
    const note = t.root.querySelector(".context-summary");
    expect(note?.textContent).toContain("Context summarized after step 2: 4 older messages folded");
    expect(note?.textContent).toContain("Searched twice; #12 looked right.");
  });
});
