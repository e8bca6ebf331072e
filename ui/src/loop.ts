// The state and the frame loop. Owns the one `State` (read with `getState`), the queue of the
// shell's events and the frame that flushes it: events are queued and applied once per
// animation frame (however fast tokens arrive, each frame reduces all of them and redraws once,
// and none is dropped). The page's own actions (`update`) are applied at once. What a redraw
// draws, and what a frame's events make the page read again, main.ts wires in (`wire`): this
// module knows no screen.

import { initialState, reduce, reduceAll, type State, type UiAction } from "./state";
import type { AppEvent } from "./types";

let state: State = initialState;
const queue: AppEvent[] = [];
let frame = 0;
/// Off only in the UI benchmark, to compare with rendering every event as it comes.
let coalesce = true;
/// The benchmark's record of how long each flush took (reduce and redraw), when it asks.
let flushTimes: number[] | null = null;

let redrawer: () => void = () => undefined;
let onEvents: (events: readonly AppEvent[]) => void = () => undefined;

/// Sets what a redraw draws, and what is done (before the redraw) with each frame's events.
export function wire(hooks: { redraw(): void; reduced(events: readonly AppEvent[]): void }): void {
  redrawer = hooks.redraw;
  onEvents = hooks.reduced;
}

export function getState(): State {
  return state;
}

/// Applies one of the page's own actions now; the caller redraws what it changed.
export function update(action: UiAction): State {
  state = reduce(state, action);
  return state;
}

/// Redraws the state's shared parts (the status, the run, the model, the indexing jobs).
export function redraw(): void {
  redrawer();
}

/// Queues an event from the shell for the next frame.
export function dispatch(ev: AppEvent): void {
  queue.push(ev);
  if (!coalesce) flush();
  else if (!frame) frame = requestAnimationFrame(flush);
}

function flush(): void {
  if (frame) cancelAnimationFrame(frame);
  frame = 0;
  const t0 = flushTimes ? performance.now() : 0;
  const events = queue.splice(0);
  const before = state;
  state = reduceAll(state, events);
  // Lists the events changed are read again from the core.
  onEvents(events);
  if (state !== before) redraw();
  flushTimes?.push(performance.now() - t0);
}

/// The UI benchmark's switch: off, every event is reduced and rendered as it comes.
export function setCoalesce(on: boolean): void {
  coalesce = on;
}

/// Starts (on) or stops recording how long each flush takes; returns the times recorded so far.
export function recordFlushes(on: boolean): number[] {
  const times = flushTimes ?? [];
  flushTimes = on ? [] : null;
  return times;
}
