// The frame loop: the shell's events are queued and reduced once per animation frame, with one
// redraw; the benchmark's switch reduces each at once; the page's actions apply at once.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AppEvent } from "../src/types";

const progress = (p: number): AppEvent => ({ kind: "load_progress", model: "m", progress: p });

let frames: FrameRequestCallback[] = [];
function runFrame(): void {
  const due = frames;
  frames = [];
  for (const f of due) f(performance.now());
}

beforeEach(() => {
  frames = [];
  vi.stubGlobal("requestAnimationFrame", (f: FrameRequestCallback) => frames.push(f));
  vi.stubGlobal("cancelAnimationFrame", () => undefined);
  vi.resetModules();
});
afterEach(() => vi.unstubAllGlobals());

async function loop() {
  const l = await import("../src/loop");
  const redraws: number[] = [];
  const batches: AppEvent[][] = [];
  l.wire({ redraw: () => redraws.push(1), reduced: (evs) => batches.push([...evs]) });
  return { l, redraws, batches };
}

describe("the frame loop", () => {
  it("reduces a frame's events together and redraws once", async () => {
    const { l, redraws, batches } = await loop();
    for (const p of [0.1, 0.2, 0.3]) l.dispatch(progress(p));
    expect(frames.length).toBe(1); // one frame asked for, however many events
    expect(l.getState().model.loading).toBeNull();
    runFrame();
    expect(l.getState().model.loading).toEqual({ model: "m", progress: 0.3 });
    expect(redraws.length).toBe(1);
    expect(batches).toEqual([[progress(0.1), progress(0.2), progress(0.3)]]);
  });

  it("reduces and redraws every event at once with coalescing off, and records flush times", async () => {
    const { l, redraws } = await loop();
    l.setCoalesce(false);
    l.recordFlushes(true);
    l.dispatch(progress(0.5));
    l.dispatch(progress(0.6));
    expect(frames.length).toBe(0);
    expect(l.getState().model.loading?.progress).toBe(0.6);
    expect(redraws.length).toBe(2);
    expect(l.recordFlushes(false).length).toBe(2);
    expect(l.recordFlushes(false)).toEqual([]);
  });

  it("applies the page's actions at once, without a redraw of its own", async () => {
    const { l, redraws } = await loop();
    const s = l.update({ kind: "ui_screen", screen: "settings" });
    expect(s).toBe(l.getState());
    expect(s.screen).toBe("settings");
    expect(redraws.length).toBe(0);
    l.redraw();
    expect(redraws.length).toBe(1);
  });
});
