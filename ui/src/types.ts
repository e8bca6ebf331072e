// The shapes the shell sends, mirroring the core's serde types (src/app, src/agent,
// src/workspace, src/llm/library/). Kept by hand: they are few, and the reducer's tests pin
// them against events captured from the core.

export type RunStatus =
  | "running"
  | "succeeded"
  | "failed"
  | "blocked"
  | "cancelled"
  | "max_steps"
  | "error"
  | "interrupted";

export type TodoStatus = "pending" | "in_progress" | "completed" | "failed" | "blocked" | "cancelled";
export type Priority = "high" | "medium" | "low";

export interface TodoItem {
  id: string;
  title: string;
  description?: string;
  status: TodoStatus;
  priority?: Priority;
  dependencies?: string[];
}

export interface ActionRecord {
  tool: string;
  args: Record<string, unknown>;
}

export interface StepRecord {
  index: number;
  prompt_tokens: number;
  cached_tokens: number;
  output: string;
  thought: string;
  action: ActionRecord | null;
  final_answer: string | null;
  observation: string | null;
  /// The items the observation shows, as the tool located them (absent in older records).
  items?: ItemRef[];
  /// A final answer's citations: items the run saw (absent in older records).
  citations?: ItemRef[];
  /// What a final answer names that the run never saw (absent in older records).
  unseen?: string[];
  /// Who took the step: the model, or Burrow itself (its search with the task, then the
  /// opening of a leading match), or a check, where the model said whether the item Burrow
  /// just opened answers the task, or a route, the model's choice of the run's first call
  /// with filters held to what the task names. The core reads older records into this form.
  origin?:
    | { by: "model" }
    | { by: "search" }
    | { by: "route" }
    | { by: "open" }
    | { by: "check"; item: ItemRef; answers: boolean };
  error: string | null;
  todos: TodoItem[];
  generated_tokens: number;
  setup_ms: number;
  ttft_ms: number;
  decode_ms: number;
  tool_ms: number;
}

export interface RunRecord {
  id: number;
  task: string;
  model: string | null;
  protocol: string;
  status: RunStatus;
  final_answer: string | null;
  error: string | null;
  started_at: number;
  ended_at: number | null;
  steps: StepRecord[];
}

export type AgentEvent =
  | { type: "run_started"; run_id: number | null; task: string; protocol: string; model: string }
  | { type: "step_started"; index: number }
  | { type: "token"; index: number; text: string }
  | { type: "thought_delta"; index: number; text: string }
  | { type: "todo_changed"; items: TodoItem[] }
  | { type: "step_finished"; step: StepRecord }
  | { type: "context_summarized"; summary: string; messages_folded: number; model_ms: number }
  | { type: "final"; answer: string; status: RunStatus }
  | { type: "error"; message: string };

export interface ModelStatus {
  name: string;
  path: string;
  quantization: string;
  context_size: number;
  threads: number;
  /// Layers offloaded to the GPU, of `layers` (the blocks and the output layer).
  gpu_layers: number;
  layers: number;
  /// The GPUs llama.cpp sees, with their memory now (none in a CPU build).
  gpus: GpuDevice[];
  kv_cache: KvCacheType;
  memory_bytes: number;
  load_ms: number;
  fallback_template: boolean;
  /// A model served elsewhere: `path` is its server's address.
  remote: RemoteUse | null;
}

export interface GpuDevice {
  name: string;
  memory_total: number;
  memory_free: number;
  /// Shares system memory (llama.cpp offloads to it only where there is no other GPU).
  integrated: boolean;
}

/// What an OpenAI-compatible server said of itself when Burrow connected.
export interface RemoteInfo {
  url: string;
  model: string;
  models: string[];
  kind: "llama_server" | "vllm" | "open_ai";
  context_length: number;
  context_reported: boolean;
}

export interface RemoteUse {
  backend: string;
  info: RemoteInfo;
}

/// A model served elsewhere, as the config keeps it, and whether it answers now.
export interface RemoteStatus {
  name: string;
  url: string;
  model?: string;
  api_key_env?: string;
  context_length?: number;
  /// A llama-server built with llguidance: grammars go to it as llguidance's.
  llguidance?: boolean;
  reachable: boolean;
  info?: RemoteInfo;
  problem?: string;
}

/// The model in use, served over the OpenAI API.
export interface ServeStatus {
  url: string;
  model: string | null;
  key_required: boolean;
}

export type IndexPhase = string;

export type IndexEvent =
  | { event: "progress"; repo: string; phase: IndexPhase; done: number; total: number }
  | { event: "note"; repo: string; message: string };

export interface IndexReport {
  repo: string;
  plain_folder: boolean;
  files_indexed: number;
  files_unchanged: number;
  files_removed: number;
  files_skipped: Record<string, number>;
  commits_added: number;
  commits_removed: number;
  refs: number;
  issues: number;
  pull_requests: number;
  comments: number;
  orphan_comments: number;
  comments_deleted: number;
  elapsed_ms: number;
  warnings: string[];
}

export type AppEvent =
  | { kind: "agent"; event: AgentEvent }
  | {
      kind: "run_ended";
      run_id: number | null;
      status: RunStatus;
      final_answer: string | null;
      error: string | null;
    }
  | { kind: "load_progress"; model: string; progress: number }
  | { kind: "loaded"; model: ModelStatus }
  | { kind: "load_failed"; model: string; message: string }
  | { kind: "index"; source: string; event: IndexEvent }
  | { kind: "indexed"; source: string; report: IndexReport }
  | { kind: "index_failed"; source: string; message: string }
  /// A catalogue model's download: `part` of `parts` (0 before the first), bytes of all parts.
  | { kind: "fetch_progress"; id: string; model: string; done: number; total: number; part: number; parts: number }
  | { kind: "fetched"; id: string; model: string; path: string; downloaded: boolean }
  | { kind: "fetch_failed"; id: string; model: string; message: string }
  /// Embedding the workspace for search by meaning: `done` of `total` units have a vector.
  | { kind: "embed_progress"; model: string; done: number; total: number }
  | { kind: "embedded"; model: string; report: EmbedReport }
  | { kind: "embed_failed"; model: string; message: string }
  /// Serving the model when the app opened (as the settings ask) failed.
  | { kind: "serve_failed"; message: string };

export interface EmbedReport {
  embedded: number;
  reused: number;
  total: number;
  replaced_model: string | null;
  /// Units without a vector: the model gives their text one that is not a number (NaN).
  unembeddable: number;
}

/// A model of the catalogue, which Burrow can download.
export interface CatalogueModel {
  id: string;
  purpose: "chat" | "embedding";
  name: string;
  file: string;
  size: number;
  architecture: string;
  quantization: string;
  licence: string;
  homepage: string;
  /// The folder it would be downloaded to.
  dest: string;
}

export interface Fetched {
  path: string;
  downloaded: boolean;
}

export interface ModelInfo {
  name: string;
  path: string;
  architecture: string;
  parameters: number;
  quantization: string;
  file_size: number;
  context_length: number | null;
  has_chat_template: boolean;
  source: string;
  supported: boolean;
  catalogue_id: string | null;
  /// An embedding model (for search by meaning): it cannot chat.
  embedding?: boolean;
  /// Not a chat model (an embedding model, a reranker, another encoder).
  not_for_chat?: boolean;
}

export interface Discovery {
  models: ModelInfo[];
  problems: { path: string; source: string; error: string }[];
}

export interface RepoStatus {
  id: number;
  name: string;
  root: string | null;
  is_git: boolean;
  remote: string | null;
  status: string;
  error: string | null;
  indexed_at: number | null;
  head: string | null;
  files: number;
  skipped_files: number;
  commits: number;
  branches: number;
  tags: number;
  issues: number;
  pull_requests: number;
  comments: number;
  documents: number;
}

export interface ModelSettings {
  context_size: number | null;
  threads: number | null;
  gpu_layers: number | null;
  /// Absent: f16.
  kv_cache?: KvCacheType | null;
  /// Kept as settings.json has them (set by hand there; the form does not show them).
  batch_size?: number | null;
  threads_batch?: number | null;
}

/// What the KV cache stores keys and values as (the quantized ones turn on flash attention).
export type KvCacheType = "f16" | "q8_0" | "q4_0";

export interface Settings {
  protocol: string;
  max_steps: number;
  temperature: number;
  grammar: boolean;
  search_first: boolean;
  route_first: boolean;
  summarize_at: number;
  require_plan_done: boolean;
  persona: string;
  /// The embedding model's path or catalogue id; empty: the catalogue's.
  embedding_model: string;
  /// Put before each query and each document embedded, instead of the model's own; null: its own.
  embedding_prompts: { model: string; query: string; document: string } | null;
  models: Record<string, ModelSettings>;
  /// MCP servers whose tools join the toolbelt for `burrow ask` (edited in settings.json; the
  /// screen keeps them as they are).
  mcp_servers: McpServerConfig[];
  /// The model in use over the OpenAI API on 127.0.0.1 (the Models screen's switch).
  serve: { enabled: boolean; port: number; api_key_env: string };
}

export interface McpServerConfig {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  timeout_secs?: number;
}

export interface AppInfo {
  version: string;
  home: string;
  default_workspace: string | null;
  model: ModelStatus | null;
  running: boolean;
  protocols: string[];
}

export type ItemRef =
  | { kind: "file"; path: string; line: number | null; repo: string | null }
  | { kind: "issue"; number: number; repo: string | null }
  | { kind: "pull_request"; number: number; repo: string | null }
  | { kind: "commit"; hash: string; repo: string | null };

/// A kind of thing the workspace holds, as search names it.
export type SearchKind = "code" | "doc" | "commit" | "issue" | "pr";

export type SearchMode = "words" | "meaning" | "hybrid";

/// What the search box asks for (`src/app/search.rs`); left out, a field filters nothing.
export interface SearchRequest {
  text: string;
  kinds?: SearchKind[];
  repo?: string | null;
  mode?: SearchMode;
  limit?: number;
  offset?: number;
}

/// One result: an item, shown by its best matching part (`src/app/search.rs`'s ShownHit).
/// Its text is the workspace's: untrusted.
export interface SearchHit {
  kind: SearchKind;
  repo: string;
  title: string;
  /// The matching text, with matches between « and ».
  snippet: string;
  /// `src/main.rs:12`, `#42`, `commit 1a2b3c4d5e`.
  location: string;
  /// "fixes #12", "2 more matches in this file".
  notes: string[];
  /// What the viewer opens for it.
  item: ItemRef | null;
  state?: string | null;
  author?: string | null;
  time?: number | null;
}

export interface SearchPage {
  results: SearchHit[];
  next_offset: number | null;
  note?: string;
}

export interface CommandError {
  kind: string;
  message: string;
}
