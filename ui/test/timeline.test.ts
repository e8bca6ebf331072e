import { describe, expect, it } from "vitest";
import { initialState, reduce, reduceAll, startRun, type State } from "../src/state";
import { Timeline, renderTodos } from "../src/timeline";
import type { AppEvent, ItemRef } from "../src/types";

const agent = (event: any): AppEvent => ({ kind: "agent", event });

function runWith(n: number): State {
  let s = startRun(initialState, "t");
  for (let i = 1; i <= n; i++) {
    s = reduceAll(s, [
      agent({ type: "step_started", index: i }),
      agent({ type: "action", index: i, tool: "read_file", args: { path: "src/lib.rs" } }),
      agent({ type: "observation", index: i, text: `src/lib.rs:${i}: fn f() {}`, error: false }),
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

  it("shows observations' file:line as links that open the item, and never parses HTML", () => {
    const opened: ItemRef[] = [];
    const t = new Timeline((i) => opened.push(i));
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 1 }),
      agent({ type: "action", index: 1, tool: "search_code", args: { query: "x", repo: "gui" } }),
      agent({ type: "observation", index: 1, text: '<img src=x onerror="boom()"> src/a.rs:7 and #12', error: false }),
    ]);
    t.update(s.run);
    const links = t.root.querySelectorAll<HTMLAnchorElement>("a.item-link");
    expect([...links].map((a) => a.textContent)).toEqual(["src/a.rs:7", "#12"]);
    expect(t.root.querySelector("img")).toBeNull();
    links[0].click();
    expect(opened).toEqual([{ kind: "file", path: "src/a.rs", line: 7, repo: "gui" }]);
    expect(t.root.querySelector(".args")?.textContent).toBe(JSON.stringify({ query: "x", repo: "gui" }, null, 2));
  });

  it("highlights an error observation and shows the final answer with its status", () => {
    const t = new Timeline(() => undefined);
    const s = reduceAll(startRun(initialState, "t"), [
      agent({ type: "step_started", index: 1 }),
      agent({ type: "observation", index: 1, text: "no tool named \"nope\"", error: true }),
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
