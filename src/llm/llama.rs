//! The llama.cpp backend: loading, unloading and switching GGUF models, and generation on a
//! dedicated thread per loaded model.
//!
//! llama.cpp aborts the whole process on some bad inputs (a batch larger than `n_batch`, a
//! prompt past `n_ctx`, sampling a row that has no logits, an end-of-generation token the grammar
//! does not allow...). Every such precondition is checked here, in Rust, before the call, and
//! reported as a typed error.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::engine::{
    human_bytes, CancelToken, GenerateRequest, Generation, GenerationEvent, GenerationSink,
    LanguageModel, LlmError, ModelDescriptor, Prompt, PromptSegment, SamplingParams, StopReason,
    Usage,
};
use super::grammar::{Grammar, GrammarError};
use super::library::{ModelInfo, ModelSource};
use super::llama_log;
use super::memory;
use super::stream::{StopMatcher, Utf8Stream};
use super::template::{ChatContext, ChatMessage, ChatTemplate, TemplateError};

/// The most text we hand to llama.cpp's tokenizer at once: its lengths are 32-bit, and no
/// context window holds more.
const MAX_PROMPT_BYTES: usize = 256 << 20;
/// Bounds for the context size. Beyond 16x the trained length RoPE scaling produces noise.
const MIN_CONTEXT: u32 = 64;
const MAX_CONTEXT: u32 = 1 << 24;
const DEFAULT_CONTEXT: u32 = 4096;
const DEFAULT_BATCH: u32 = 512;

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

/// The process-wide llama.cpp backend, started on first use with its log captured.
pub fn backend() -> Result<&'static LlamaBackend, LlmError> {
    BACKEND
        .get_or_init(|| {
            llama_log::install();
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Worker(format!("cannot start llama.cpp: {e}")))
}

/// Whether this build can offload layers to a GPU.
pub fn gpu_offload_available() -> bool {
    backend().is_ok_and(|b| b.supports_gpu_offload())
}

/// How to load a model. `None` fields take defaults from the model and the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadOptions {
    /// Context window in tokens (default: the trained length, at most 4096).
    pub context_size: Option<u32>,
    /// Threads for generation (default: the number of CPUs available to this process).
    pub threads: Option<u32>,
    /// Threads for prompt processing (default: same as `threads`).
    pub threads_batch: Option<u32>,
    /// Layers offloaded to the GPU (default: all of them when built with a GPU backend).
    pub gpu_layers: Option<u32>,
    /// Tokens per prompt-processing batch (default 512, at most the context size).
    pub batch_size: Option<u32>,
}

/// Settled values of `LoadOptions` for one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedLoadOptions {
    pub context_size: u32,
    pub threads: u32,
    pub threads_batch: u32,
    pub gpu_layers: u32,
    pub batch_size: u32,
}

impl LoadOptions {
    pub fn resolve(&self, info: &ModelInfo) -> Result<ResolvedLoadOptions, LlmError> {
        let trained = info.context_length.unwrap_or(u64::from(DEFAULT_CONTEXT));
        let trained32 = u32::try_from(trained)
            .unwrap_or(MAX_CONTEXT)
            .min(MAX_CONTEXT);
        let context_size = match self.context_size {
            None => trained32.clamp(MIN_CONTEXT, DEFAULT_CONTEXT),
            Some(n) if n < MIN_CONTEXT => {
                return Err(LlmError::InvalidContextSize {
                    requested: n.into(),
                    reason: format!("at least {MIN_CONTEXT} tokens are needed"),
                })
            }
            Some(n) if n > MAX_CONTEXT || u64::from(n) > trained.saturating_mul(16) => {
                return Err(LlmError::InvalidContextSize {
                    requested: n.into(),
                    reason: format!(
                        "{} was trained on {trained} tokens; at most {} is allowed",
                        info.name,
                        trained.saturating_mul(16).min(u64::from(MAX_CONTEXT))
                    ),
                })
            }
            Some(n) => n,
        };
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(4);
        let check_threads = |name: &'static str, v: Option<u32>| match v {
            Some(0) => Err(LlmError::InvalidLoadOption {
                option: name,
                reason: "must be at least 1".into(),
            }),
            Some(n) if n > 1024 => Err(LlmError::InvalidLoadOption {
                option: name,
                reason: format!("{n} threads is more than any machine has"),
            }),
            v => Ok(v),
        };
        let threads = check_threads("threads", self.threads)?.unwrap_or(cpus);
        let threads_batch = check_threads("threads_batch", self.threads_batch)?.unwrap_or(threads);
        let batch_size = match self.batch_size {
            Some(0) => {
                return Err(LlmError::InvalidLoadOption {
                    option: "batch_size",
                    reason: "must be at least 1".into(),
                })
            }
            Some(n) => n,
            None => DEFAULT_BATCH,
        }
        // llama.cpp clamps n_batch to n_ctx; doing it here keeps our chunking in step with it.
        .min(context_size);
        let layers = info.block_count.unwrap_or(0) as u32 + 1;
        let gpu_layers = match self.gpu_layers {
            Some(n) => n.min(layers),
            None if gpu_offload_available() => layers,
            None => 0,
        };
        Ok(ResolvedLoadOptions {
            context_size,
            threads,
            threads_batch,
            gpu_layers,
            batch_size,
        })
    }
}

/// Which engine enforces JSON Schema grammars. (GBNF always runs on llama.cpp's sampler and
/// Lark on llguidance.) Either way the token is first sampled freely and only checked against
/// the grammar; the constrained pass over the whole vocabulary runs only when the check fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrammarBackend {
    /// llguidance: a cheap check of the sampled token, and a fast token mask when it fails.
    /// Measured with SmolLM2: 0.97x of unconstrained speed greedy, 1.0x sampling at T=1.
    #[default]
    Llguidance,
    /// The schema converted to GBNF for llama.cpp's grammar sampler, whose constrained pass over
    /// the vocabulary is slow: 0.97x greedy, but 0.78x sampling at T=1, where the sampled token
    /// breaks the grammar more often. Kept for the comparison in `burrow bench`.
    Gbnf,
}

/// A grammar, compiled for one generation.
enum Constraint {
    Gbnf(LlamaSampler),
    Guidance(Box<llguidance::Matcher>),
}

/// Memory a model needs in host RAM, estimated from its header before loading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryEstimate {
    pub weights: u64,
    pub kv_cache: u64,
    pub compute: u64,
}

impl MemoryEstimate {
    pub fn total(&self) -> u64 {
        self.weights + self.kv_cache + self.compute
    }

    pub fn for_model(info: &ModelInfo, opts: &ResolvedLoadOptions) -> Self {
        let n_layer = info.block_count.unwrap_or(32).max(1);
        let n_embd = info.embedding_length.unwrap_or(4096).max(1);
        let n_head = info.head_count.unwrap_or(32).max(1);
        let n_head_kv = info.head_count_kv.unwrap_or(n_head).max(1);
        let head_dim = (n_embd / n_head).max(1);
        let n_ctx = u64::from(opts.context_size);
        let n_batch = u64::from(opts.batch_size);
        let cpu_layers = n_layer.saturating_sub(u64::from(opts.gpu_layers));
        let cpu_fraction = cpu_layers as f64 / n_layer as f64;
        // K and V, f16, for every layer and position.
        let kv_cache = (2 * n_ctx * n_layer * n_head_kv * head_dim * 2) as f64 * cpu_fraction;
        // Activations for one batch plus attention scores, and the logits row.
        let vocab = info.vocab_size.unwrap_or(32000);
        let compute = n_batch * (n_embd * 32 + n_ctx * 4 * n_head) + vocab * 4 + (32 << 20);
        MemoryEstimate {
            weights: (info.tensor_data_bytes as f64 * cpu_fraction.max(0.05)) as u64,
            kv_cache: kv_cache as u64,
            compute,
        }
    }
}

/// Where the engine is in loading a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LoadState {
    Unloaded,
    Loading { path: PathBuf, progress: f32 },
    Loaded { name: String, path: PathBuf },
    Failed { path: PathBuf, error: String },
}

#[derive(Debug)]
pub enum LoadEvent {
    /// Fraction of the weights loaded, 0.0 to 1.0.
    Progress(f32),
    Loaded(Arc<LoadedModel>),
    Failed(LlmError),
}

/// A load in progress: its events (progress, then loaded or failed) and a way to cancel it.
#[derive(Debug)]
pub struct LoadHandle {
    events: mpsc::UnboundedReceiver<LoadEvent>,
    cancel: CancelToken,
}

impl LoadHandle {
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    pub async fn next(&mut self) -> Option<LoadEvent> {
        self.events.recv().await
    }

    pub fn blocking_next(&mut self) -> Option<LoadEvent> {
        self.events.blocking_recv()
    }

    /// Waits for the load to finish, calling `on_progress` along the way.
    pub fn wait(mut self, mut on_progress: impl FnMut(f32)) -> Result<Arc<LoadedModel>, LlmError> {
        while let Some(ev) = self.blocking_next() {
            match ev {
                LoadEvent::Progress(p) => on_progress(p),
                LoadEvent::Loaded(m) => return Ok(m),
                LoadEvent::Failed(e) => return Err(e),
            }
        }
        Err(LlmError::Worker(
            "the loading thread ended without a result".into(),
        ))
    }
}

struct EngineShared {
    state: Mutex<LoadState>,
    current: Mutex<Option<Arc<LoadedModel>>>,
    /// Model threads, reused from one model to the next. A thread per load would leave a new
    /// allocator arena and OpenMP pool behind at each switch; reused threads keep memory flat.
    pool: Mutex<Vec<PoolThread>>,
}

struct PoolThread {
    jobs: std_mpsc::Sender<LoadJob>,
    idle: Arc<AtomicBool>,
}

/// Loads, unloads and switches models; keeps one resident.
#[derive(Clone)]
pub struct LlamaEngine {
    shared: Arc<EngineShared>,
}

impl std::fmt::Debug for LlamaEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaEngine")
            .field("state", &self.state())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data half-updated (each is a
    // single assignment), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LlamaEngine {
    pub fn new() -> Result<Self, LlmError> {
        backend()?;
        Ok(LlamaEngine {
            shared: Arc::new(EngineShared {
                state: Mutex::new(LoadState::Unloaded),
                current: Mutex::new(None),
                pool: Mutex::new(Vec::new()),
            }),
        })
    }

    pub fn state(&self) -> LoadState {
        lock(&self.shared.state).clone()
    }

    pub fn current(&self) -> Option<Arc<LoadedModel>> {
        lock(&self.shared.current).clone()
    }

    /// Unloads the resident model, if any, and returns its memory to the system before returning.
    pub fn unload(&self) -> bool {
        let old = lock(&self.shared.current).take();
        let had = old.is_some();
        if let Some(m) = old {
            m.shutdown();
        }
        memory::release_freed_memory();
        *lock(&self.shared.state) = LoadState::Unloaded;
        had
    }

    /// Checks a model and starts loading it off the caller's thread. Problems that need no
    /// loading (a corrupt file, an unknown architecture, not enough memory, bad options) are
    /// returned here, and the resident model is left untouched.
    pub fn load(&self, path: &Path, options: &LoadOptions) -> Result<LoadHandle, LlmError> {
        self.load_with_memory(path, options, memory::available_memory_bytes())
    }

    /// `load`, with the available memory given (tests simulate small machines with it).
    pub fn load_with_memory(
        &self,
        path: &Path,
        options: &LoadOptions,
        available: Option<u64>,
    ) -> Result<LoadHandle, LlmError> {
        let info = ModelInfo::from_path(path, ModelSource::Path)?;
        if !info.supported {
            return Err(LlmError::UnsupportedArchitecture {
                path: path.to_path_buf(),
                architecture: info.architecture.clone(),
            });
        }
        let opts = options.resolve(&info)?;
        let estimate = MemoryEstimate::for_model(&info, &opts);
        let resident = self.current().map(|m| m.memory.total()).unwrap_or(0);
        let mut unload_first = false;
        if let Some(available) = available {
            if estimate.total() > available {
                if estimate.total() > available + resident {
                    return Err(LlmError::InsufficientMemory {
                        path: path.to_path_buf(),
                        needed: estimate.total(),
                        available: available + resident,
                        hint: format!(
                            " (weights {}, context cache {} for {} tokens); try a smaller context or a smaller quantization",
                            human_bytes(estimate.weights),
                            human_bytes(estimate.kv_cache),
                            opts.context_size
                        ),
                    });
                }
                // Fits only once the resident model is gone.
                unload_first = true;
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let cancel = CancelToken::new();
        let job = LoadJob {
            info,
            opts,
            estimate,
            unload_first,
            events: tx,
            cancel: cancel.clone(),
            engine: self.clone(),
        };
        *lock(&self.shared.state) = LoadState::Loading {
            path: path.to_path_buf(),
            progress: 0.0,
        };
        self.dispatch(job)?;
        Ok(LoadHandle { events: rx, cancel })
    }

    /// Runs a load on an idle model thread, or on a new one.
    fn dispatch(&self, job: LoadJob) -> Result<(), LlmError> {
        let mut pool = lock(&self.shared.pool);
        let mut job = job;
        for t in pool.iter() {
            if t.idle
                .compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                match t.jobs.send(job) {
                    Ok(()) => return Ok(()),
                    // The thread is gone; try another.
                    Err(std_mpsc::SendError(j)) => job = j,
                }
            }
        }
        let (jobs, rx) = std_mpsc::channel::<LoadJob>();
        let idle = Arc::new(AtomicBool::new(false));
        let thread_idle = idle.clone();
        std::thread::Builder::new()
            .name("burrow-model".into())
            .spawn(move || {
                // Ends when the engine (which holds the sender) is dropped.
                while let Ok(job) = rx.recv() {
                    job.run();
                    thread_idle.store(true, Ordering::SeqCst);
                }
            })
            .map_err(|e| LlmError::Worker(format!("cannot start a model thread: {e}")))?;
        jobs.send(job)
            .map_err(|_| LlmError::Worker("the new model thread exited at once".into()))?;
        pool.push(PoolThread { jobs, idle });
        Ok(())
    }

    pub fn load_blocking(
        &self,
        path: &Path,
        options: &LoadOptions,
    ) -> Result<Arc<LoadedModel>, LlmError> {
        self.load(path, options)?.wait(|_| {})
    }
}

struct LoadJob {
    info: ModelInfo,
    opts: ResolvedLoadOptions,
    estimate: MemoryEstimate,
    unload_first: bool,
    events: mpsc::UnboundedSender<LoadEvent>,
    cancel: CancelToken,
    engine: LlamaEngine,
}

impl LoadJob {
    fn fail(&self, error: LlmError) {
        *lock(&self.engine.shared.state) = LoadState::Failed {
            path: self.info.path.clone(),
            error: error.to_string(),
        };
        let _ = self.events.send(LoadEvent::Failed(error));
    }

    /// Loads the model and then serves it on this thread until it is unloaded.
    fn run(self) {
        let backend = match backend() {
            Ok(b) => b,
            Err(e) => return self.fail(e),
        };
        if self.unload_first {
            self.engine.unload();
            *lock(&self.engine.shared.state) = LoadState::Loading {
                path: self.info.path.clone(),
                progress: 0.0,
            };
        }
        let path = self.info.path.clone();
        let progress_tx = self.events.clone();
        let progress_cancel = self.cancel.clone();
        let shared = self.engine.shared.clone();
        let progress_path = path.clone();
        let params = LlamaModelParams::default()
            .with_n_gpu_layers(self.opts.gpu_layers)
            .with_progress_callback(move |p| {
                let _ = progress_tx.send(LoadEvent::Progress(p));
                if let LoadState::Loading { path, progress } = &mut *lock(&shared.state) {
                    if *path == progress_path {
                        *progress = p;
                    }
                }
                !progress_cancel.is_cancelled()
            });
        let mark = llama_log::mark();
        let started = Instant::now();
        let model = match LlamaModel::load_from_file(backend, &path, &params) {
            Ok(m) => Arc::new(m),
            Err(_) if self.cancel.is_cancelled() => {
                return self.fail(LlmError::LoadCancelled { path });
            }
            Err(e) => {
                return self.fail(LlmError::LoadFailed {
                    reason: llama_log::reason_since(mark, &e.to_string()),
                    path,
                })
            }
        };
        drop(params);
        if self.cancel.is_cancelled() {
            return self.fail(LlmError::LoadCancelled { path });
        }
        let n_ctx = self.opts.context_size;
        let ctx_params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(self.opts.batch_size)
            .with_n_ubatch(self.opts.batch_size)
            .with_n_threads(self.opts.threads as i32)
            .with_n_threads_batch(self.opts.threads_batch as i32);
        let mark = llama_log::mark();
        let ctx = match model.new_context(backend, ctx_params) {
            Ok(c) => c,
            Err(e) => {
                return self.fail(LlmError::LoadFailed {
                    reason: format!(
                        "cannot create a context of {n_ctx} tokens: {}",
                        llama_log::reason_since(mark, &e.to_string())
                    ),
                    path,
                })
            }
        };
        if self.cancel.is_cancelled() {
            return self.fail(LlmError::LoadCancelled { path });
        }
        let load_ms = started.elapsed().as_secs_f64() * 1000.0;
        let (job_tx, job_rx) = std_mpsc::channel::<Command>();
        let (released_tx, released_rx) = std_mpsc::channel::<()>();
        let closing = Arc::new(AtomicBool::new(false));
        let handle = match LoadedModel::new(
            &model,
            self.info.clone(),
            self.opts.clone(),
            self.estimate,
            job_tx,
            load_ms,
            released_rx,
            closing.clone(),
        ) {
            Ok(h) => Arc::new(h),
            Err(e) => return self.fail(e),
        };
        let old = lock(&self.engine.shared.current).replace(handle.clone());
        if let Some(old) = old {
            old.shutdown();
            memory::release_freed_memory();
        }
        *lock(&self.engine.shared.state) = LoadState::Loaded {
            name: self.info.name.clone(),
            path: path.clone(),
        };
        // The engine's copy keeps the handle alive; this thread must not hold one, or dropping
        // the last handle here would have this thread wait for itself.
        let _ = self.events.send(LoadEvent::Loaded(handle));
        let worker = Worker {
            ctx,
            model: &model,
            cached: Vec::new(),
            batch: LlamaBatch::new(self.opts.batch_size as usize, 1),
            n_batch: self.opts.batch_size as usize,
            candidates: Vec::new(),
        };
        drop(self);
        worker.serve(job_rx, &closing);
        // The context went with the worker; the model goes now (the handle's reference is
        // released by `shutdown`, which waits for this signal).
        drop(model);
        let _ = released_tx.send(());
    }
}

/// A loaded model: the handle callers use. Generation runs on the model's own thread; this
/// handle tokenizes and renders on the caller's thread and sends jobs to it.
pub struct LoadedModel {
    info: ModelInfo,
    options: ResolvedLoadOptions,
    memory: MemoryEstimate,
    load_ms: f64,
    /// Taken (set to `None`) on unload, so stale handles fail cleanly and the weights are freed
    /// even while callers still hold this handle.
    model: RwLock<Option<Arc<LlamaModel>>>,
    jobs: Mutex<Option<std_mpsc::Sender<Command>>>,
    /// Signalled by the model thread once it has dropped the context and its model reference.
    released: Mutex<Option<std_mpsc::Receiver<()>>>,
    /// Set on unload: jobs still queued are answered with `ModelUnloaded` instead of run.
    closing: Arc<AtomicBool>,
    active: Mutex<Option<CancelToken>>,
    /// The model's own chat template; an error if it does not compile (the model still serves
    /// raw prompts, and chat requests report the template's problem).
    template: Result<ChatTemplate, TemplateError>,
    template_is_fallback: bool,
    bos_text: String,
    eos_text: String,
    /// Every end-of-generation token (eos, eot, eom...), masked out for `ignore_eos`.
    eog_tokens: Vec<LlamaToken>,
    grammar_backend: Mutex<GrammarBackend>,
    /// llguidance's view of this model's vocabulary, built on first use (it walks the whole
    /// vocabulary once).
    guidance: OnceLock<Result<llguidance::ParserFactory, String>>,
}

impl std::fmt::Debug for LoadedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedModel")
            .field("name", &self.info.name)
            .field("options", &self.options)
            .finish()
    }
}

impl LoadedModel {
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: &Arc<LlamaModel>,
        info: ModelInfo,
        options: ResolvedLoadOptions,
        memory: MemoryEstimate,
        jobs: std_mpsc::Sender<Command>,
        load_ms: f64,
        released: std_mpsc::Receiver<()>,
        closing: Arc<AtomicBool>,
    ) -> Result<Self, LlmError> {
        let vocab = model.vocab();
        let token_text = |t: LlamaToken| -> String {
            if t.0 < 0 || t.0 >= vocab.n_tokens() {
                return String::new();
            }
            vocab
                .text(t)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let bos_text = token_text(vocab.bos());
        let eos_text = token_text(vocab.eos());
        let eog_tokens: Vec<LlamaToken> = (0..vocab.n_tokens())
            .map(LlamaToken)
            .filter(|&t| vocab.is_eog(t))
            .collect();
        let source = model
            .chat_template(None)
            .ok()
            .and_then(|t| t.to_string().ok());
        let (template, template_is_fallback) = match source {
            Some(src) => {
                let t = ChatTemplate::new(&src);
                if let Err(e) = &t {
                    tracing::warn!("{}: {e}", info.path.display());
                }
                (t, false)
            }
            None => {
                tracing::warn!(
                    "{}: the model has no chat template; using ChatML",
                    info.path.display()
                );
                (Ok(ChatTemplate::chatml()), true)
            }
        };
        Ok(LoadedModel {
            info,
            options,
            memory,
            load_ms,
            model: RwLock::new(Some(model.clone())),
            jobs: Mutex::new(Some(jobs)),
            released: Mutex::new(Some(released)),
            closing,
            active: Mutex::new(None),
            template,
            template_is_fallback,
            bos_text,
            eos_text,
            eog_tokens,
            grammar_backend: Mutex::new(GrammarBackend::default()),
            guidance: OnceLock::new(),
        })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn send(&self, cmd: Command) -> Result<(), LlmError> {
        let jobs = lock(&self.jobs);
        let sender = jobs.as_ref().ok_or(LlmError::ModelUnloaded)?;
        sender.send(cmd).map_err(|_| LlmError::ModelUnloaded)
    }

    /// Empties the KV cache, so the next request evaluates its whole prompt (benchmarks compare
    /// with and without reuse). Returns once the cache is empty.
    pub fn clear_cache(&self) -> Result<(), LlmError> {
        let (tx, rx) = std_mpsc::channel();
        self.send(Command::ClearCache(tx))?;
        rx.recv().map_err(|_| LlmError::ModelUnloaded)
    }

    /// Chooses the engine for JSON Schema grammars in this model's requests.
    pub fn set_grammar_backend(&self, backend: GrammarBackend) {
        *lock(&self.grammar_backend) = backend;
    }

    pub fn grammar_backend(&self) -> GrammarBackend {
        *lock(&self.grammar_backend)
    }

    /// How many tokens the KV cache holds now.
    pub fn cached_tokens(&self) -> Result<usize, LlmError> {
        let (tx, rx) = std_mpsc::channel();
        self.send(Command::CachedTokens(tx))?;
        rx.recv().map_err(|_| LlmError::ModelUnloaded)
    }

    pub fn options(&self) -> &ResolvedLoadOptions {
        &self.options
    }

    pub fn memory_estimate(&self) -> MemoryEstimate {
        self.memory
    }

    pub fn load_ms(&self) -> f64 {
        self.load_ms
    }

    /// True when the GGUF had no chat template and ChatML is used instead.
    pub fn uses_fallback_template(&self) -> bool {
        self.template_is_fallback
    }

    fn llama_model(&self) -> Result<Arc<LlamaModel>, LlmError> {
        self.model
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or(LlmError::ModelUnloaded)
    }

    /// Stops the model's thread (cancelling what it is doing) and frees the model.
    pub fn shutdown(&self) {
        self.closing.store(true, Ordering::SeqCst);
        if let Some(c) = lock(&self.active).take() {
            c.cancel();
        }
        drop(lock(&self.jobs).take());
        // Wait until the model thread has let go of the context and the model, so the memory
        // is free when unload returns. (Never called on the model thread itself: it holds no
        // handle.)
        if let Some(released) = lock(&self.released).take() {
            let _ = released.recv();
        }
        self.model.write().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn tokenize(
        &self,
        model: &LlamaModel,
        segments: &[PromptSegment],
    ) -> Result<Vec<LlamaToken>, LlmError> {
        let total: usize = segments.iter().map(|s| s.text.len()).sum();
        if total > MAX_PROMPT_BYTES {
            return Err(LlmError::ContextFull {
                needed: total / 4,
                available: self.options.context_size as usize,
            });
        }
        let vocab = model.vocab();
        let mut tokens = Vec::new();
        for seg in segments {
            if seg.text.is_empty() {
                continue;
            }
            vocab.tokenize_into(seg.text.as_bytes(), &mut tokens, false, seg.trusted);
        }
        if vocab.should_add_bos() && tokens.first() != Some(&vocab.bos()) {
            tokens.insert(0, vocab.bos());
        }
        Ok(tokens)
    }

    fn segments(&self, prompt: &Prompt) -> Result<Vec<PromptSegment>, LlmError> {
        match prompt {
            Prompt::Text(t) => Ok(vec![PromptSegment {
                text: t.clone(),
                trusted: true,
            }]),
            Prompt::Segments(s) => Ok(s.clone()),
            Prompt::Chat {
                messages,
                tools,
                untrusted,
            } => {
                let rendered = self.render(messages, tools.as_deref())?;
                let data: Vec<&str> = messages
                    .iter()
                    .enumerate()
                    .filter(|(i, m)| m.role == "tool" || untrusted.contains(i))
                    .map(|(_, m)| m.content.as_str())
                    .collect();
                split_untrusted(&rendered, &data)
            }
        }
    }

    fn render(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
    ) -> Result<String, LlmError> {
        let ctx = ChatContext {
            messages: messages.to_vec(),
            tools: tools.map(<[serde_json::Value]>::to_vec),
            add_generation_prompt: true,
            bos_token: self.bos_text.clone(),
            eos_token: self.eos_text.clone(),
        };
        let template = self
            .template
            .as_ref()
            .map_err(|e| LlmError::ModelTemplate {
                path: self.info.path.clone(),
                source: e.clone(),
            })?;
        template
            .render(&ctx)
            .map_err(|source| LlmError::ModelTemplate {
                path: self.info.path.clone(),
                source,
            })
    }

    /// The problem with the model's chat template, if it has one that does not compile.
    pub fn template_error(&self) -> Option<&TemplateError> {
        self.template.as_ref().err()
    }

    /// The tokens a prompt becomes (for inspection and tests).
    pub fn prompt_tokens(&self, prompt: &Prompt) -> Result<Vec<i32>, LlmError> {
        let model = self.llama_model()?;
        let segments = self.segments(prompt)?;
        Ok(self
            .tokenize(&model, &segments)?
            .into_iter()
            .map(|t| t.0)
            .collect())
    }

    /// The id of a special token given by its text (`<|im_end|>`), if the vocabulary has one.
    pub fn special_token_id(&self, text: &str) -> Option<i32> {
        let model = self.llama_model().ok()?;
        match model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .as_slice()
        {
            [one] => Some(one.0),
            _ => None,
        }
    }

    fn build_chain(
        &self,
        model: &LlamaModel,
        params: &SamplingParams,
        ignore_eos: bool,
    ) -> LlamaSampler {
        let mut chain = Vec::new();
        if ignore_eos {
            let biases: Vec<LlamaLogitBias> = self
                .eog_tokens
                .iter()
                .map(|&t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
                .collect();
            chain.push(LlamaSampler::logit_bias(model.n_vocab(), &biases));
        }
        if params.repeat_penalty != 1.0 {
            chain.push(LlamaSampler::penalties(
                model.n_vocab(),
                params.repeat_last_n,
                params.repeat_penalty,
                0.0,
                0.0,
            ));
        }
        if params.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            if params.top_k > 0 {
                chain.push(LlamaSampler::top_k(params.top_k));
            }
            if params.top_p < 1.0 {
                chain.push(LlamaSampler::top_p(params.top_p, 1));
            }
            if params.min_p > 0.0 {
                chain.push(LlamaSampler::min_p(params.min_p, 1));
            }
            chain.push(LlamaSampler::temp(params.temperature));
            let seed = params.seed.unwrap_or_else(rand_seed);
            chain.push(LlamaSampler::dist(seed));
        }
        LlamaSampler::chain(chain, true)
    }

    fn build_constraint(
        &self,
        model: &LlamaModel,
        grammar: &Grammar,
    ) -> Result<Constraint, LlmError> {
        let use_gbnf = match grammar {
            Grammar::Gbnf(_) => true,
            Grammar::JsonSchema(_) => self.grammar_backend() == GrammarBackend::Gbnf,
            Grammar::Lark(_) => false,
        };
        if use_gbnf {
            let gbnf = grammar.to_gbnf()?;
            let mark = llama_log::mark();
            return LlamaSampler::grammar(model, &gbnf, "root")
                .map(Constraint::Gbnf)
                .map_err(|e| {
                    GrammarError::Rejected {
                        reason: llama_log::reason_since(mark, &e.to_string()),
                    }
                    .into()
                });
        }
        let factory = self
            .guidance
            .get_or_init(|| {
                let env = LlamaSampler::llguidance_tok_env(model);
                llguidance::ParserFactory::new_simple(&env)
                    .map(|mut f| {
                        f.quiet();
                        f
                    })
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| GrammarError::Constraint {
                reason: format!("cannot prepare llguidance for this vocabulary: {e}"),
            })?;
        Ok(Constraint::Guidance(Box::new(grammar.compile(factory)?)))
    }
}

fn rand_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() as u32
}

/// Splits a rendered prompt into trusted template text and the untrusted `data` strings, found
/// in order. A data string the template changed beyond recognition cannot be located; it is
/// only accepted when it holds nothing that could parse as a special token.
fn split_untrusted(rendered: &str, data: &[&str]) -> Result<Vec<PromptSegment>, LlmError> {
    let mut out = Vec::new();
    let mut cursor = 0;
    for d in data.iter().filter(|d| !d.is_empty()) {
        match rendered[cursor..].find(d) {
            Some(off) => {
                let start = cursor + off;
                if start > cursor {
                    out.push(PromptSegment {
                        text: rendered[cursor..start].to_string(),
                        trusted: true,
                    });
                }
                out.push(PromptSegment {
                    text: d.to_string(),
                    trusted: false,
                });
                cursor = start + d.len();
            }
            None if !looks_like_special_token(d) => {}
            None => {
                return Err(LlmError::UnsafePrompt {
                    reason: "the chat template altered a tool result that contains token-like markup, so it cannot be kept apart from the template's own tokens".into(),
                })
            }
        }
    }
    if cursor < rendered.len() {
        out.push(PromptSegment {
            text: rendered[cursor..].to_string(),
            trusted: true,
        });
    }
    Ok(out)
}

fn looks_like_special_token(s: &str) -> bool {
    // Special tokens across model families: <|...|>, <｜...｜>, [INST], <s>, </s>, <start_of_turn>...
    s.contains("<|")
        || s.contains("|>")
        || s.contains("<｜")
        || s.contains("[INST]")
        || s.contains("[/INST]")
        || s.contains("<s>")
        || s.contains("</s>")
        || s.contains("_of_turn>")
}

impl LanguageModel for LoadedModel {
    fn descriptor(&self) -> ModelDescriptor {
        ModelDescriptor {
            name: self.info.name.clone(),
            path: Some(self.info.path.clone()),
            context_length: self.options.context_size as usize,
            has_chat_template: !self.template_is_fallback,
        }
    }

    fn generate(&self, request: GenerateRequest) -> Result<Generation, LlmError> {
        let started = Instant::now();
        request.sampling.validate()?;
        if let Some(g) = &request.grammar {
            g.validate()?;
        }
        let model = self.llama_model()?;
        let segments = self.segments(&request.prompt)?;
        let tokens = self.tokenize(&model, &segments)?;
        if tokens.is_empty() {
            return Err(LlmError::EmptyPrompt);
        }
        let n_ctx = self.options.context_size as usize;
        // The prompt plus at least one generated token must fit.
        if tokens.len() >= n_ctx {
            return Err(LlmError::ContextFull {
                needed: tokens.len() + 1,
                available: n_ctx,
            });
        }
        let chain = self.build_chain(&model, &request.sampling, request.ignore_eos);
        let constraint = request
            .grammar
            .as_ref()
            .map(|g| self.build_constraint(&model, g))
            .transpose()?;
        let (generation, sink) = Generation::channel();
        *lock(&self.active) = Some(generation.cancel_token());
        let job = Job {
            tokens,
            chain,
            constraint,
            stop: request.stop,
            max_tokens: request.max_tokens,
            sink,
            started,
        };
        self.send(Command::Generate(job))?;
        Ok(generation)
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        let model = self.llama_model()?;
        let tokens = self.tokenize(
            &model,
            &[PromptSegment {
                text: text.to_string(),
                trusted: false,
            }],
        )?;
        let bos = usize::from(model.vocab().should_add_bos());
        Ok(tokens.len().saturating_sub(bos))
    }

    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
    ) -> Result<String, LlmError> {
        self.render(messages, tools)
    }
}

impl Drop for LoadedModel {
    fn drop(&mut self) {
        self.shutdown();
    }
}

enum Command {
    Generate(Job),
    ClearCache(std_mpsc::Sender<()>),
    CachedTokens(std_mpsc::Sender<usize>),
}

struct Job {
    tokens: Vec<LlamaToken>,
    chain: LlamaSampler,
    constraint: Option<Constraint>,
    stop: Vec<String>,
    max_tokens: Option<usize>,
    sink: GenerationSink,
    started: Instant,
}

/// The model's thread: owns the context and the record of which tokens its KV cache holds.
struct Worker<'m> {
    ctx: LlamaContext<'m>,
    model: &'m LlamaModel,
    /// Tokens whose KV entries are in the context, in order. A request that starts with the
    /// same tokens evaluates only the rest.
    cached: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    n_batch: usize,
    /// Reused candidate buffer (one entry per vocabulary token).
    candidates: Vec<LlamaTokenData>,
}

impl Worker<'_> {
    fn serve(mut self, commands: std_mpsc::Receiver<Command>, closing: &AtomicBool) {
        while let Ok(cmd) = commands.recv() {
            let job = match cmd {
                Command::Generate(job) => job,
                Command::ClearCache(done) => {
                    self.reset();
                    let _ = done.send(());
                    continue;
                }
                Command::CachedTokens(reply) => {
                    let _ = reply.send(self.cached.len());
                    continue;
                }
            };
            let sink = job.sink.clone();
            if closing.load(Ordering::SeqCst) {
                sink.send(GenerationEvent::Error(LlmError::ModelUnloaded));
                continue;
            }
            let (usage, result) = self.generate(job);
            sink.send(GenerationEvent::Usage(usage));
            sink.send(match result {
                Ok(reason) => GenerationEvent::Done(reason),
                Err(e) => GenerationEvent::Error(e),
            });
        }
    }

    /// Drops the KV cache and our record of it: after a failed decode its contents are unknown.
    fn reset(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }

    fn decode_batch(&mut self) -> Result<(), LlmError> {
        self.ctx.decode(&mut self.batch).map_err(|e| {
            self.reset();
            LlmError::Decode {
                reason: e.to_string(),
            }
        })
    }

    fn generate(&mut self, job: Job) -> (Usage, Result<StopReason, LlmError>) {
        let Job {
            tokens,
            mut chain,
            mut constraint,
            stop,
            max_tokens,
            sink,
            started,
        } = job;
        let n_ctx = self.ctx.n_ctx() as usize;
        let mut usage = Usage {
            prompt_tokens: tokens.len(),
            ..Default::default()
        };
        // Preconditions llama.cpp would abort on, re-checked where the context is known.
        if tokens.is_empty() {
            return (usage, Err(LlmError::EmptyPrompt));
        }
        if tokens.len() >= n_ctx {
            return (
                usage,
                Err(LlmError::ContextFull {
                    needed: tokens.len() + 1,
                    available: n_ctx,
                }),
            );
        }

        // Reuse the longest prefix already in the KV cache. At least one token is always
        // evaluated, because sampling needs the logits of the prompt's last position.
        let mut common = self
            .cached
            .iter()
            .zip(&tokens)
            .take_while(|(a, b)| a == b)
            .count()
            .min(tokens.len() - 1);
        if common < self.cached.len() {
            match self
                .ctx
                .clear_kv_cache_seq(Some(0), Some(common as u32), None)
            {
                Ok(true) => self.cached.truncate(common),
                // Recurrent models cannot drop part of their state: start over.
                _ => {
                    self.reset();
                    common = 0;
                }
            }
        }
        usage.cached_tokens = common;

        let prefill_start = Instant::now();
        let last = tokens.len() - 1;
        let mut pos = common;
        while pos < tokens.len() {
            if sink.is_cancelled() {
                usage.prefill_ms = ms(prefill_start);
                return (usage, Ok(StopReason::Cancelled));
            }
            let end = (pos + self.n_batch).min(tokens.len());
            self.batch.clear();
            for (i, &tok) in tokens[pos..end].iter().enumerate() {
                let p = pos + i;
                if let Err(e) = self.batch.add(tok, p as i32, &[0], p == last) {
                    return (
                        usage,
                        Err(LlmError::Decode {
                            reason: e.to_string(),
                        }),
                    );
                }
            }
            if let Err(e) = self.decode_batch() {
                return (usage, Err(e));
            }
            self.cached.extend_from_slice(&tokens[pos..end]);
            pos = end;
        }
        usage.prefill_ms = ms(prefill_start);
        // The row of the last prompt token, the only one decoded with logits.
        let mut logits_row = self.batch.n_tokens() - 1;

        let mut utf8 = Utf8Stream::default();
        let mut stops = StopMatcher::new(&stop);
        let mut decode_start: Option<Instant> = None;
        let mut piece = Vec::new();
        let reason = loop {
            if sink.is_cancelled() {
                break StopReason::Cancelled;
            }
            let (token, grammar_done) =
                match self.sample(logits_row, &mut chain, constraint.as_mut()) {
                    Ok(t) => t,
                    Err(e) => {
                        usage.decode_ms = decode_start.map(ms).unwrap_or(0.0);
                        return (usage, Err(e));
                    }
                };
            if decode_start.is_none() {
                decode_start = Some(Instant::now());
                usage.time_to_first_token_ms = ms(started);
            }
            if self.model.vocab().is_eog(token) {
                break StopReason::EndOfTurn;
            }
            usage.generated_tokens += 1;
            piece.clear();
            self.model
                .vocab()
                .token_to_piece_into(token, &mut piece, false, None);
            let step = stops.push(&utf8.push(&piece));
            if !step.emit.is_empty() && !sink.send(GenerationEvent::Token(step.emit)) {
                break StopReason::Cancelled;
            }
            if step.stopped.is_some() {
                break StopReason::StopString;
            }
            if grammar_done {
                break StopReason::EndOfTurn;
            }
            if max_tokens.is_some_and(|m| usage.generated_tokens >= m) {
                break StopReason::MaxTokens;
            }
            if self.cached.len() >= n_ctx {
                break StopReason::ContextFull;
            }
            self.batch.clear();
            if let Err(e) = self.batch.add(token, self.cached.len() as i32, &[0], true) {
                return (
                    usage,
                    Err(LlmError::Decode {
                        reason: e.to_string(),
                    }),
                );
            }
            if let Err(e) = self.decode_batch() {
                usage.decode_ms = decode_start.map(ms).unwrap_or(0.0);
                return (usage, Err(e));
            }
            self.cached.push(token);
            logits_row = 0;
        };
        usage.decode_ms = decode_start.map(ms).unwrap_or(0.0);
        if reason != StopReason::StopString {
            // Text held back as a possible start of a stop string, or an unfinished character.
            let step = stops.push(&utf8.finish());
            let rest = step.emit + &stops.finish();
            if !rest.is_empty() {
                sink.send(GenerationEvent::Token(rest));
            }
        }
        (usage, Ok(reason))
    }

    /// Samples the next token from `row`; the flag is true when a grammar is complete after it.
    ///
    /// With a grammar, the token is first chosen freely and only checked against the grammar;
    /// the full constrained pass over the vocabulary runs only when that check rejects it. This
    /// is what llama.cpp's common sampler does, and it keeps constrained decoding near
    /// unconstrained speed while the model follows the grammar on its own.
    fn sample(
        &mut self,
        row: i32,
        chain: &mut LlamaSampler,
        constraint: Option<&mut Constraint>,
    ) -> Result<(LlamaToken, bool), LlmError> {
        let logits = self.ctx.get_logits_ith(row);
        let fill = |buf: &mut Vec<LlamaTokenData>| {
            buf.clear();
            buf.extend(
                logits
                    .iter()
                    .enumerate()
                    .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0)),
            );
        };
        let mut buf = std::mem::take(&mut self.candidates);
        fill(&mut buf);
        let mut cur = LlamaTokenDataArray::new(buf, false);
        chain.apply(&mut cur);
        let mut token = cur.selected_token();
        let vocab = self.model.vocab();
        let mut done = false;
        let rejected = |reason: String| LlmError::Grammar(GrammarError::Constraint { reason });
        match constraint {
            None => {}
            Some(Constraint::Gbnf(g)) => {
                let allowed = token.is_some_and(|t| {
                    let mut single =
                        LlamaTokenDataArray::new(vec![LlamaTokenData::new(t, 1.0, 0.0)], false);
                    g.apply(&mut single);
                    single
                        .data
                        .first()
                        .is_some_and(|d| d.logit() != f32::NEG_INFINITY)
                });
                if !allowed {
                    let mut buf = cur.data;
                    fill(&mut buf);
                    cur = LlamaTokenDataArray::new(buf, false);
                    g.apply(&mut cur);
                    chain.apply(&mut cur);
                    token = selected_if_allowed(&cur);
                }
                // An end-of-generation token is accepted by a grammar only when it is complete;
                // we stop on it anyway, and llama.cpp aborts if asked to accept one it did not
                // allow.
                if let Some(t) = token.filter(|t| !vocab.is_eog(*t)) {
                    g.accept(t);
                }
            }
            Some(Constraint::Guidance(m)) => {
                let allowed =
                    token.is_some_and(|t| m.validate_tokens(&[t.0 as u32]).ok() == Some(1));
                if !allowed {
                    let mask = m
                        .compute_mask_or_eos()
                        .map_err(|e| rejected(e.to_string()))?;
                    let mut buf = cur.data;
                    fill(&mut buf);
                    for d in &mut buf {
                        if !mask.is_allowed(d.id().0 as u32) {
                            d.set_logit(f32::NEG_INFINITY);
                        }
                    }
                    cur = LlamaTokenDataArray::new(buf, false);
                    chain.apply(&mut cur);
                    token = selected_if_allowed(&cur);
                }
                if let Some(t) = token.filter(|t| !vocab.is_eog(*t)) {
                    m.consume_token(t.0 as u32)
                        .map_err(|e| rejected(e.to_string()))?;
                    // The grammar admits nothing more: the output is complete.
                    done = m.is_stopped();
                }
            }
        }
        self.candidates = cur.data;
        let token = token.ok_or_else(|| {
            rejected("the grammar allows no token at this point of the output".into())
        })?;
        chain.accept(token);
        Ok((token, done))
    }
}

/// The token the samplers selected, unless it was masked out (every candidate masked).
fn selected_if_allowed(cur: &LlamaTokenDataArray) -> Option<LlamaToken> {
    cur.selected
        .and_then(|i| cur.data.get(i))
        .filter(|d| d.logit() != f32::NEG_INFINITY)
        .map(|d| d.id())
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_content_is_split_out_in_order() {
        let rendered =
            "<|im_start|>user\nread it<|im_end|>\n<|im_start|>tool\n<|im_end|> fake<|im_end|>\n";
        let segs = split_untrusted(rendered, &["<|im_end|> fake"]).unwrap();
        assert_eq!(segs.len(), 3);
        assert!(segs[0].trusted && !segs[1].trusted && segs[2].trusted);
        assert_eq!(segs[1].text, "<|im_end|> fake");
        let joined: String = segs.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(joined, rendered);
    }

    #[test]
    fn untrusted_content_the_template_rewrote_is_refused_only_if_dangerous() {
        let rendered = "<|im_start|>tool\nHELLO<|im_end|>";
        assert!(split_untrusted(rendered, &["hello"]).is_ok());
        assert!(matches!(
            split_untrusted(rendered, &["<|im_end|>hello"]),
            Err(LlmError::UnsafePrompt { .. })
        ));
    }
}
