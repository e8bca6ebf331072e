// The Run screen's Continue and Esc, and the Models screen's per-model settings, driven
// in jsdom with the shell's commands mocked.

import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { ModelInfo, RunRecord, Settings, StepRecord } from "../src/types";

const api = vi.hoisted(() => ({
  getRun: vi.fn(async (): Promise<unknown> => null),
  resumeRun: vi.fn((): Promise<unknown> => new Promise(() => undefined)),
  startRun: vi.fn((): Promise<unknown> => new Promise(() => undefined)),
  stopRun: vi.fn(async () => true),
  listRuns: vi.fn(async (): Promise<unknown[]> => []),
  getSettings: vi.fn(async (): Promise<unknown> => null),
  setSettings: vi.fn(async (s: unknown) => s),
  embedWorkspace: vi.fn(async () => undefined),
  workspaceStatus: vi.fn(async (): Promise<unknown[]> => []),
  listModels: vi.fn(async () => ({ models: [], problems: [] })),
  listRemotes: vi.fn(async (): Promise<unknown[]> => []),
  serveStatus: vi.fn(async () => null),
}));
vi.mock("../src/api", () => ({
  api,
  errorMessage: (e: unknown) => (e && typeof e === "object" && "message" in e ? String((e as { message: unknown }).message) : String(e)),
}));

const SETTINGS: Settings = {
  protocol: "json-typed", max_steps: 12, temperature: 0, grammar: true, search_first: true, route_first: true, summarize_at: 0.7,
  require_plan_done: false, persona: "", embedding_model: "", embedding_prompts: null, models: {}, mcp_servers: [],
  serve: { enabled: false, port: 8089, api_key_env: "" },
};

const MODEL = {
  name: "SmolLM2", path: "/m.gguf", quantization: "Q4_1", context_size: 4096, threads: 2,
  gpu_layers: 0, layers: 31, gpus: [], kv_cache: "f16" as const, memory_bytes: 1, load_ms: 1, fallback_template: false, remote: null,
};

function step(index: number): StepRecord {
  return {
    index, prompt_tokens: 10, cached_tokens: 0, output: "{}", thought: `step ${index}`, action: null,
    final_answer: null, observation: "seen", error: null, todos: [], generated_tokens: 2, setup_ms: 0,
    ttft_ms: 1, decode_ms: 1, tool_ms: 0,
  };
}

const INTERRUPTED: RunRecord = {
  id: 7, task: "who fixed the crash?", model: "SmolLM2", protocol: "json-typed", status: "interrupted",
  final_answer: null, error: null, started_at: 1, ended_at: null, steps: [step(0), step(1)],
};

let loop: typeof import("../src/loop");
let run: typeof import("../src/screens/run");
let state: typeof import("../src/state");

beforeAll(async () => {
  vi.stubGlobal("requestAnimationFrame", (f: FrameRequestCallback) => {
    f(0);
    return 0;
  });
  vi.stubGlobal("cancelAnimationFrame", () => undefined);
  document.body.innerHTML = '<div id="app"></div>';
  loop = await import("../src/loop");
  const { render } = await import("../src/render");
  loop.wire({ redraw: render, reduced: () => undefined });
  run = await import("../src/screens/run");
  state = await import("../src/state");
  loop.update({ kind: "ui_info", info: { version: "0", home: "/h", default_workspace: null, model: MODEL, running: false, protocols: [] } });
});

afterAll(() => vi.unstubAllGlobals());

beforeEach(() => {
  api.getRun.mockReset();
  api.resumeRun.mockReset();
  api.stopRun.mockClear();
  // Each test starts with no run shown.
  loop.update({ kind: "ui_clear_run" });
  loop.redraw();
});

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("Continue", () => {
  // History's Continue (and the Run screen's "Continue this run") await get_run before the
  // view goes live, so a double click sends resume_run twice: the second is refused (a run is
  // in progress: the first), and that refusal ends the view of the run the first is continuing.
  it("double_continue_keeps_the_continued_run_live", async () => {
    api.getRun.mockResolvedValue(structuredClone(INTERRUPTED));
    let finish: () => void = () => undefined;
    api.resumeRun
      .mockImplementationOnce(() => new Promise<unknown>((r) => (finish = () => r(null)))) // the run goes on
      .mockImplementationOnce(async () => {
        throw { kind: "run_in_progress", message: "a run is in progress: stop it or wait for it to end" };
      });
    api.getRun.mockImplementation(async () => structuredClone(INTERRUPTED));
    const first = run.resume(INTERRUPTED);
    const second = run.resume(INTERRUPTED); // the double click's second click
    await second;
    await tick();
    // The second click is taken for the first's: one Continue.
    expect(api.resumeRun).toHaveBeenCalledTimes(1);
    const r = loop.getState().run!;
    // The first Continue's run is going on in the core: the view must say so, with Stop.
    expect({ status: r.status, error: r.error }).toEqual({ status: "running", error: null });
    expect(document.querySelector<HTMLButtonElement>("#stop")!.disabled).toBe(false);
    // The run ends; the next test starts with no Continue under way.
    finish();
    await first;
  });

  // A Continue the core refuses before the run goes on (a model loading, the run still going
  // in another process) leaves the run as it was kept: interrupted. The view says "Error" and
  // drops its "Continue this run", while History (refreshed by the same run_ended) says
  // Interrupted and offers Continue.
  it("refused_continue_leaves_the_run_interrupted", async () => {
    api.getRun.mockResolvedValue(structuredClone(INTERRUPTED));
    api.resumeRun.mockImplementationOnce(async () => {
      throw { kind: "load_in_progress", message: "a model is being loaded: run once it is in use" };
    });
    await run.resume(INTERRUPTED);
    await tick();
    const r = loop.getState().run!;
    expect(r.status).toBe("interrupted");
    expect(
      [...document.querySelectorAll("#screen-run button")].some((b) => b.textContent === "Continue this run"),
    ).toBe(true);
  });
});

describe("Esc", () => {
  // Esc stops a live run from anywhere but the viewer: typed in a text box of another screen
  // (a folder path on Workspace, the persona in Settings: "taken by what had focus (a settings
  // form)" says run.ts, but that form takes no Esc), it stops the run.
  it("esc_in_another_screens_text_box_does_not_stop_the_run", async () => {
    await import("../src/screens/workspace");
    const settings = await import("../src/screens/settings");
    api.getSettings.mockResolvedValue(structuredClone(SETTINGS));
    await settings.refreshSettings();
    loop.update({ kind: "ui_start_run", task: "who fixed the crash?" });
    loop.redraw();
    expect(state.isLive(loop.getState().run)).toBe(true);
    for (const sel of ["#add-path", "#settings-form input[name=persona]"]) {
      const input = document.querySelector<HTMLInputElement>(sel)!;
      expect(input, sel).not.toBeNull();
      input.focus();
      input.value = "half typed";
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true, cancelable: true }));
    }
    await tick();
    expect(api.stopRun).not.toHaveBeenCalled();
  });
});

describe("a model's settings form", () => {
  // settings.json keeps per-model LoadOptions with threads_batch and batch_size too (the core's
  // LoadOptions); the form rebuilds the entry from its four fields and drops the others.
  it("model_settings_form_keeps_fields_it_does_not_show", async () => {
    const models = await import("../src/screens/models");
    const { views } = await import("../src/shell");
    const path = "/models/q.gguf";
    const info: ModelInfo = {
      name: "Q", path, architecture: "qwen2", parameters: 1, quantization: "Q4_K_M", file_size: 1,
      context_length: 8192, has_chat_template: true, source: "project", supported: true, catalogue_id: null,
    };
    const kept = { context_size: 8192, threads: 4, gpu_layers: null, kv_cache: null, batch_size: 256, threads_batch: 8 };
    loop.update({ kind: "ui_settings", settings: { ...structuredClone(SETTINGS), models: { [path]: kept } } });
    loop.update({ kind: "ui_discovery", discovery: { models: [info], problems: [] } });
    loop.update({ kind: "ui_clear_run" });
    loop.update({ kind: "ui_screen", screen: "models" });
    models.renderModels();
    const form = views.models.querySelector<HTMLFormElement>(`tr[data-path="${path}"] details.model-settings form`)!;
    form.querySelector<HTMLInputElement>("input[name=threads]")!.value = "6";
    api.setSettings.mockClear();
    form.dispatchEvent(new Event("submit", { cancelable: true }));
    await vi.waitFor(() => expect(api.setSettings).toHaveBeenCalled());
    const saved = (api.setSettings.mock.calls[0] as unknown[])[0] as { models: Record<string, Record<string, unknown>> };
    expect(saved.models[path]).toMatchObject({ threads: 6, batch_size: 256, threads_batch: 8 });
  });
});
