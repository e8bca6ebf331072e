// The Settings screen in jsdom: what its form saves for the embedding model's prompts.

import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { Settings } from "../src/types";

const base: Settings = {
  protocol: "json-typed", max_steps: 12, temperature: 0, grammar: true, search_first: true, route_first: true, summarize_at: 0.7,
  require_plan_done: false, persona: "", embedding_model: "", embedding_prompts: null, models: {}, mcp_servers: [],
  serve: { enabled: false, port: 8089, api_key_env: "" },
};

const api = vi.hoisted(() => ({
  getSettings: vi.fn(async (): Promise<unknown> => null),
  setSettings: vi.fn(async (s: unknown) => s),
  embedWorkspace: vi.fn(async () => undefined),
}));
vi.mock("../src/api", () => ({ api, errorMessage: (e: unknown) => String(e) }));

let screen: typeof import("../src/screens/settings");

beforeAll(async () => {
  vi.stubGlobal("requestAnimationFrame", (f: FrameRequestCallback) => {
    f(0);
    return 0;
  });
  document.body.innerHTML = '<div id="app"></div>';
  screen = await import("../src/screens/settings");
});

beforeEach(() => {
  api.setSettings.mockClear();
});

async function show(settings: Settings): Promise<HTMLFormElement> {
  api.getSettings.mockResolvedValueOnce(settings);
  await screen.refreshSettings();
  return document.querySelector<HTMLFormElement>("#settings-form")!;
}

async function save(form: HTMLFormElement): Promise<Settings> {
  form.requestSubmit();
  await vi.waitFor(() => expect(api.setSettings).toHaveBeenCalled());
  return api.setSettings.mock.calls[0][0] as Settings;
}

describe("the embedding model's prompts", () => {
  const field = (form: HTMLFormElement, name: string) => form.querySelector<HTMLTextAreaElement>(`textarea[name=${name}]`)!;

  it("are the model's own until the box is ticked, then saved as typed for the model named", async () => {
    let form = await show(base);
    const box = form.querySelector<HTMLInputElement>("input[name=own_prompts]")!;
    expect(box.checked).toBe(false);
    expect(field(form, "query_prompt").disabled).toBe(true);
    expect((await save(form)).embedding_prompts).toBeNull();

    api.setSettings.mockClear();
    form = await show({ ...base, embedding_model: "/m/qwen3-embedding.gguf" });
    const tick = form.querySelector<HTMLInputElement>("input[name=own_prompts]")!;
    tick.click();
    expect(field(form, "query_prompt").disabled).toBe(false);
    // Trailing spaces and line breaks are part of a prompt (the instruct models' have one).
    field(form, "query_prompt").value = "Instruct: find the passage\nQuery:";
    field(form, "document_prompt").value = "search_document: ";
    expect((await save(form)).embedding_prompts).toEqual({
      model: "/m/qwen3-embedding.gguf",
      query: "Instruct: find the passage\nQuery:",
      document: "search_document: ",
    });
    // Saving embeds the workspace again (it finds nothing to do where nothing changed).
    await vi.waitFor(() => expect(api.embedWorkspace).toHaveBeenCalled());
  });

  it("show what was saved for this model, and untick back to the model's own", async () => {
    const prompts = { model: "", query: "Instruct: x\nQuery: ", document: "" };
    let form = await show({ ...base, embedding_prompts: prompts });
    expect(form.querySelector<HTMLInputElement>("input[name=own_prompts]")!.checked).toBe(true);
    expect(field(form, "query_prompt").value).toBe("Instruct: x\nQuery: ");
    // Saved again for another reason, the line break is kept.
    expect((await save(form)).embedding_prompts).toEqual(prompts);
    api.setSettings.mockClear();
    form = await show({ ...base, embedding_prompts: prompts });
    form.querySelector<HTMLInputElement>("input[name=own_prompts]")!.click();
    expect((await save(form)).embedding_prompts).toBeNull();
  });

  it("for another model are not shown, and kept for it", async () => {
    const prompts = { model: "/m/nomic.gguf", query: "search_query: ", document: "search_document: " };
    const form = await show({ ...base, embedding_model: "/m/bge.gguf", embedding_prompts: prompts });
    expect(form.querySelector<HTMLInputElement>("input[name=own_prompts]")!.checked).toBe(false);
    expect(field(form, "query_prompt").value).toBe("");
    expect((await save(form)).embedding_prompts).toEqual(prompts);
  });
});
