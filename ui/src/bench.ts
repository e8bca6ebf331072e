// The UI benchmark's page side (driven by scripts/bench-ui.sh through ui/e2e/bench.mjs), and the
// end-to-end test's way to show a trace with known contents (`feed`). Loaded only when the page
// is opened with `?bench`: it feeds a synthetic run through the same `dispatch` the shell's
// channels use, and measures what a user would feel:
// - stream: a token stream at a given rate into step 501 of a 500-step trace. Frame intervals
//   (from requestAnimationFrame), how long each token waited to reach the screen, and whether
//   every token arrived, in order (each token is numbered, and the page's text is read back).
// - scroll: the whole 500-step trace scrolled top to bottom, one increment per frame; frame
//   intervals while scrolling.
// Variants run side by side in one page so their ratios mean something on a noisy machine:
// coalesced rendering (the app) vs one render per event, and every step laid out (the app) vs
// off-screen steps skipped (`content-visibility: auto`).

import type { AppEvent, ItemRef, StepRecord, TodoItem } from "./types";

export interface BenchHooks {
  dispatch(ev: AppEvent): void;
  /// Off: every event is reduced and rendered at once, as if nothing were coalesced.
  setCoalesce(on: boolean): void;
  /// Clears the run view.
  reset(): void;
  /// Element builds of the timeline so far.
  builds(): number;
  /// Starts (on) or stops recording how long each flush of events takes; returns the times
  /// recorded so far.
  recordFlushes(on: boolean): number[];
}

export interface StreamOptions {
  steps: number;
  tokensPerSecond: number;
  seconds: number;
  coalesce: boolean;
  /// As in [`ScrollOptions`]; unset: the app's stylesheet decides.
  skipOffscreen?: boolean;
}

export interface ScrollOptions {
  steps: number;
  seconds: number;
  /// On: off-screen steps are skipped (`content-visibility: auto`), laid out only as they
  /// scroll into view; off: every step is laid out (the app's way, see style.css).
  skipOffscreen: boolean;
}

export interface FrameStats {
  frames: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  /// Frames that took longer than two 60 Hz refreshes (33 ms): what a reader sees as a stutter.
  over33: number;
}

export interface StreamResult extends StreamOptions {
  sent: number;
  /// Tokens missing from the page at the end, or out of order.
  dropped: number;
  outOfOrder: number;
  frames: FrameStats;
  /// How long a token waited from its dispatch to the end of the frame that drew it.
  latencyP50Ms: number;
  latencyP95Ms: number;
  /// Time to build and draw the 500-step trace before streaming.
  buildTraceMs: number;
  /// Step elements built while streaming (one per frame when coalesced).
  builds: number;
  /// Script time of one flush (reducing a frame's events and redrawing), p50 and p95; the rest
  /// of a frame is the engine's style, layout and paint.
  flushP50Ms: number;
  flushP95Ms: number;
}

export interface ScrollResult extends ScrollOptions {
  scrollHeight: number;
  frames: FrameStats;
  buildTraceMs: number;
}

export interface IdleOptions {
  steps: number;
  seconds: number;
}

export interface IdleResult extends IdleOptions {
  frames: FrameStats;
}

const nextFrame = () => new Promise<number>((r) => requestAnimationFrame(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function frameStats(intervals: number[]): FrameStats {
  const s = intervals.slice().sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    frames: s.length,
    p50Ms: round(quantile(s, 0.5)),
    p95Ms: round(quantile(s, 0.95)),
    maxMs: round(s[s.length - 1] ?? 0),
    over33: s.filter((x) => x > 33.4).length,
  };
}

/// Records the interval between consecutive frames until stopped.
function frameRecorder(): { stop(): number[] } {
  const intervals: number[] = [];
  let last = 0;
  let on = true;
  const tick = (t: number) => {
    if (!on) return;
    if (last) intervals.push(t - last);
    last = t;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  return {
    stop() {
      on = false;
      return intervals;
    },
  };
}

const agent = (event: unknown): AppEvent => ({ kind: "agent", event }) as AppEvent;

function record(index: number, observation: string, items: ItemRef[]): StepRecord {
  return {
    index,
    prompt_tokens: 1800 + index * 40,
    cached_tokens: 1700 + index * 40,
    output: `{"type": "tool", "thinking": "Step ${index}", "tool_name": "search_code", "tool_args": {"query": "wallet"}}`,
    thought: `Looking for where wallets are loaded, attempt ${index}.`,
    action: { tool: "search_code", args: { query: "wallet", repo: "gui", limit: 10 } },
    final_answer: null,
    observation,
    items,
    error: null,
    todos: [],
    generated_tokens: 48,
    setup_ms: 3,
    ttft_ms: 180,
    decode_ms: 400,
    tool_ms: 12,
  };
}

/// The events of a finished n-step run: each step with a thought, an action, a 9-line
/// observation full of links, and the plan changing every 25 steps.
function traceEvents(steps: number): AppEvent[] {
  const out: AppEvent[] = [
    agent({ type: "run_started", run_id: 1, task: "Where is the wallet loaded? (benchmark)", protocol: "json-typed", model: "bench" }),
  ];
  for (let i = 0; i < steps; i++) {
    const obs = Array.from(
      { length: 9 },
      (_, k) => `src/qt/walletmodel.cpp:${100 + k}: WalletModel::load() see #${i + k} and commit 3f2a9c${(k + i) % 10}e`,
    ).join("\n");
    const items: ItemRef[] = Array.from({ length: 9 }, (_, k) => [
      { kind: "file", path: "src/qt/walletmodel.cpp", line: 100 + k, repo: "gui" } as const,
      { kind: "issue", number: i + k, repo: "bitcoin-core/gui" } as const,
      { kind: "commit", hash: `3f2a9c${(k + i) % 10}e`, repo: "gui" } as const,
    ]).flat();
    const r = record(i, obs, items);
    out.push(
      agent({ type: "step_started", index: i }),
      agent({ type: "token", index: i, text: r.output }),
      agent({ type: "step_finished", step: r }),
    );
    if (i % 25 === 0) {
      const todos: TodoItem[] = Array.from({ length: 6 }, (_, k) => ({
        id: `t${k}`,
        title: `Plan item ${k}`,
        status: k < i / 100 ? "completed" : k === Math.floor(i / 100) ? "in_progress" : "pending",
        priority: "medium",
      }));
      out.push(agent({ type: "todo_changed", items: todos }));
    }
  }
  return out;
}

async function settle(): Promise<void> {
  await nextFrame();
  await nextFrame();
}

export function install(hooks: BenchHooks): void {
  const scroller = () => document.getElementById("run-main") as HTMLElement;

  async function buildTrace(steps: number): Promise<number> {
    hooks.reset();
    await settle();
    const t0 = performance.now();
    for (const ev of traceEvents(steps)) hooks.dispatch(ev);
    await settle();
    return performance.now() - t0;
  }

  /// Runs `f` with off-screen steps skipped or laid out, whatever the app's stylesheet says.
  async function withSkip<T>(skip: boolean | undefined, f: () => Promise<T>): Promise<T> {
    if (skip === undefined) return f();
    // A rule added through the CSSOM, which the page's CSP allows.
    const sheet = document.styleSheets[0];
    const rule = sheet.insertRule(
      skip
        ? ".step { content-visibility: auto !important; contain-intrinsic-size: auto 9rem; }"
        : ".step { content-visibility: visible !important; }",
      sheet.cssRules.length,
    );
    try {
      return await f();
    } finally {
      sheet.deleteRule(rule);
    }
  }

  async function stream(o: StreamOptions): Promise<StreamResult> {
    hooks.setCoalesce(true);
    const buildTraceMs = await buildTrace(o.steps);
    hooks.setCoalesce(o.coalesce);
    const index = o.steps;
    hooks.dispatch(agent({ type: "step_started", index }));
    // A reader watching the live step: the view follows it at the bottom.
    const el = scroller();
    el.scrollTop = el.scrollHeight;
    await settle();
    const buildsBefore = hooks.builds();
    // When each token was sent, and when it was on screen: a frame's callbacks see what the
    // previous frame drew (and painted), so a token's latency is from its dispatch to the start
    // of the frame after the one that drew it.
    const sentAt: number[] = [];
    const latencies: number[] = [];
    let drawnUpTo = 0;
    let watching = true;
    const watch = () => {
      if (!watching) return;
      const now = performance.now();
      const text = document.querySelector(`[data-step="${index}"] pre.stream`)?.textContent ?? "";
      const m = text.match(/(\d+) \D*$/);
      const shown = m ? Number(m[1]) + 1 : 0;
      for (; drawnUpTo < shown && drawnUpTo < sentAt.length; drawnUpTo++) latencies.push(now - sentAt[drawnUpTo]);
      requestAnimationFrame(watch);
    };
    requestAnimationFrame(watch);
    const frames = frameRecorder();
    hooks.recordFlushes(true);
    const total = Math.round(o.tokensPerSecond * o.seconds);
    const start = performance.now();
    // Tokens arrive as the channel delivers them: as separate tasks, each with what is due.
    while (sentAt.length < total) {
      const due = Math.min(total, Math.floor(((performance.now() - start) * o.tokensPerSecond) / 1000));
      while (sentAt.length < due) {
        const n = sentAt.length;
        sentAt.push(performance.now());
        hooks.dispatch(agent({ type: "token", index, text: `${n} ` }));
      }
      await sleep(2);
    }
    await settle();
    await sleep(50);
    watching = false;
    const intervals = frames.stop();
    const flushes = hooks.recordFlushes(false).sort((a, b) => a - b);
    const text = document.querySelector(`[data-step="${index}"] pre.stream`)?.textContent ?? "";
    const numbers = [...text.matchAll(/(\d+) /g)].map((m) => Number(m[1]));
    let outOfOrder = 0;
    for (let i = 0; i < numbers.length; i++) if (numbers[i] !== i) outOfOrder++;
    const lat = latencies.slice().sort((a, b) => a - b);
    return {
      ...o,
      sent: total,
      dropped: total - numbers.length,
      outOfOrder,
      frames: frameStats(intervals),
      latencyP50Ms: Math.round(quantile(lat, 0.5) * 10) / 10,
      latencyP95Ms: Math.round(quantile(lat, 0.95) * 10) / 10,
      buildTraceMs: Math.round(buildTraceMs),
      builds: hooks.builds() - buildsBefore,
      flushP50Ms: Math.round(quantile(flushes, 0.5) * 100) / 100,
      flushP95Ms: Math.round(quantile(flushes, 0.95) * 100) / 100,
    };
  }

  async function scroll(o: ScrollOptions): Promise<ScrollResult> {
    hooks.setCoalesce(true);
    const buildTraceMs = await buildTrace(o.steps);
    const el = scroller();
    el.scrollTop = 0;
    await settle();
    await sleep(100);
    const height = el.scrollHeight - el.clientHeight;
    const frames = frameRecorder();
    const start = performance.now();
    // Time-based, as a reader's fling: where the view should be now, whatever the frame rate.
    for (;;) {
      const f = Math.min(1, (performance.now() - start) / (o.seconds * 1000));
      el.scrollTop = f * height;
      if (f >= 1) break;
      await nextFrame();
    }
    await settle();
    const intervals = frames.stop();
    return { ...o, scrollHeight: el.scrollHeight, frames: frameStats(intervals), buildTraceMs: Math.round(buildTraceMs) };
  }

  /// The floor: frames while the trace is shown and nothing happens.
  async function idle(o: IdleOptions): Promise<IdleResult> {
    hooks.setCoalesce(true);
    await buildTrace(o.steps);
    await sleep(200);
    const frames = frameRecorder();
    await sleep(o.seconds * 1000);
    return { ...o, frames: frameStats(frames.stop()) };
  }

  const api = {
    result: null as unknown,
    error: null as string | null,
    /// Applies `events` as if the shell had sent them (the e2e test shows a trace whose links it
    /// knows, to open them in the real webview).
    feed(events: AppEvent[]) {
      for (const ev of events) hooks.dispatch(ev);
    },
    /// Starts a list of cases; `result` holds their results when all are done.
    start(cases: (({ kind: "stream" } & StreamOptions) | ({ kind: "scroll" } & ScrollOptions) | ({ kind: "idle" } & IdleOptions))[]) {
      api.result = null;
      api.error = null;
      void (async () => {
        const out: unknown[] = [];
        try {
          for (const c of cases) {
            const r =
              c.kind === "stream"
                ? await withSkip(c.skipOffscreen, () => stream(c))
                : c.kind === "scroll"
                  ? await withSkip(c.skipOffscreen, () => scroll(c))
                  : await idle(c);
            out.push({ kind: c.kind, ...r });
          }
          api.result = out;
        } catch (e) {
          api.error = String(e);
        } finally {
          hooks.setCoalesce(true);
          hooks.reset();
        }
      })();
      return true;
    },
  };
  (window as unknown as { burrowBench: typeof api }).burrowBench = api;
}
