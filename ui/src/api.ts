// The shell's commands, typed. Streams arrive on a Channel per call.

import { Channel, invoke } from "@tauri-apps/api/core";
import type {
  AppEvent,
  AppInfo,
  CatalogueModel,
  Discovery,
  Fetched,
  IndexReport,
  ItemRef,
  ModelStatus,
  RemoteStatus,
  RepoStatus,
  RunRecord,
  SearchPage,
  SearchRequest,
  ServeStatus,
  Settings,
} from "./types";

type OnEvent = (ev: AppEvent) => void;

function channel(onEvent: OnEvent): Channel<AppEvent> {
  const ch = new Channel<AppEvent>();
  ch.onmessage = onEvent;
  return ch;
}

export const api = {
  appInfo: () => invoke<AppInfo>("app_info"),
  startup: (on: OnEvent) => invoke<boolean>("startup", { onEvent: channel(on) }),
  listModels: () => invoke<Discovery>("list_models"),
  listCatalogue: () => invoke<CatalogueModel[]>("list_catalogue"),
  fetchModel: (id: string, on: OnEvent) => invoke<Fetched>("fetch_model", { id, onEvent: channel(on) }),
  modelStatus: () => invoke<ModelStatus | null>("model_status"),
  loadModel: (query: string | null, on: OnEvent) =>
    invoke<ModelStatus>("load_model", { query, onEvent: channel(on) }),
  unloadModel: () => invoke<boolean>("unload_model"),
  workspaceStatus: () => invoke<RepoStatus[]>("workspace_status"),
  addRepository: (path: string, on: OnEvent) =>
    invoke<IndexReport>("add_repository", { path, onEvent: channel(on) }),
  importIssues: (path: string, slug: string, on: OnEvent) =>
    invoke<IndexReport>("import_issues", { path, slug, onEvent: channel(on) }),
  reindex: (name: string, on: OnEvent) =>
    invoke<IndexReport>("reindex", { name, onEvent: channel(on) }),
  embedWorkspace: (on: OnEvent) => invoke<void>("embed_workspace", { onEvent: channel(on) }),
  startRun: (task: string, on: OnEvent) => invoke<unknown>("start_run", { task, onEvent: channel(on) }),
  resumeRun: (id: number, on: OnEvent) => invoke<unknown>("resume_run", { id, onEvent: channel(on) }),
  stopRun: () => invoke<boolean>("stop_run"),
  listRuns: (limit = 200) => invoke<RunRecord[]>("list_runs", { limit }),
  getRun: (id: number) => invoke<RunRecord>("get_run", { id }),
  openItem: (item: ItemRef) => invoke<string>("open_item", { item }),
  search: (request: SearchRequest) => invoke<SearchPage>("search", { request }),
  getSettings: () => invoke<Settings>("get_settings"),
  setSettings: (settings: Settings) => invoke<Settings>("set_settings", { settings }),
  listRemotes: () => invoke<RemoteStatus[]>("list_remotes"),
  addRemote: (url: string, name: string | null, model: string | null, apiKeyEnv: string | null, llguidance: boolean) =>
    invoke<RemoteStatus>("add_remote", { url, name, model, apiKeyEnv, llguidance }),
  removeRemote: (name: string) => invoke<boolean>("remove_remote", { name }),
  serveStatus: () => invoke<ServeStatus | null>("serve_status"),
  startServing: (port: number) => invoke<ServeStatus>("start_serving", { port }),
  stopServing: () => invoke<boolean>("stop_serving"),
};

/// A command's error as a sentence (the shell sends `{kind, message}`).
export function errorMessage(e: unknown): string {
  if (typeof e === "string") return e;
  if (e && typeof e === "object" && "message" in e) return String((e as { message: unknown }).message);
  return String(e);
}
