// The Settings screen in jsdom: what its form saves for the embedding model's prompts.

import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { Settings } from "../src/types";

const base: Settings = {
  protocol: "json-typed", max_steps: 12, temperature: 0, grammar: true, search_first: true, summarize_at: 0.7,
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
  it("are the model's own until the box is ticked, then saved as typed, trailing space and all", async () => {
    let form = await show(base);
    const box = form.querySelector<HTMLInputElement>("input[name=own_prompts]")!;
    expect(box.checked).toBe(false);
    form.querySelector<HTMLInputElement>("input[name=query_prompt]")!.value = "search_query: ";
    expect((await save(form)).embedding_prompts).toBeNull();

    api.setSettings.mockClear();
    form = await show(base);
    form.querySelector<HTMLInputElement>("input[name=own_prompts]")!.checked = true;
    form.querySelector<HTMLInputElement>("input[name=query_prompt]")!.value = "search_query: ";
    form.querySelector<HTMLInputElement>("input[name=document_prompt]")!.value = "search_document: ";
    expect((await save(form)).embedding_prompts).toEqual({ query: "search_query: ", document: "search_document: " });
  });

  it("show what was saved, and untick back to the model's own", async () => {
    const form = await show({ ...base, embedding_prompts: { query: "query: ", document: "" } });
    expect(form.querySelector<HTMLInputElement>("input[name=own_prompts]")!.checked).toBe(true);
    expect(form.querySelector<HTMLInputElement>("input[name=query_prompt]")!.value).toBe("query: ");
    form.querySelector<HTMLInputElement>("input[name=own_prompts]")!.checked = false;
    expect((await save(form)).embedding_prompts).toBeNull();
  });
});
