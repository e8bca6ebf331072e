//! Loading, unloading and switching models, on a small pool of reused model threads.

use std::num::NonZeroU32;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use serde::Serialize;
use tokio::sync::mpsc;

use super::model::LoadedModel;
use super::prefill::PrefillCost;
use super::worker::{Command, Worker};
use super::{backend, lock, LoadOptions, MemoryEstimate, ResolvedLoadOptions};
use crate::llm::engine::{human_bytes, CancelToken, LlmError};
use crate::llm::library::{ModelInfo, ModelSource};
use crate::llm::{llama_log, memory};

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
        self.load_info_with_memory(info, options, available)
    }

    /// `load` for a model as discovery just listed it, so it keeps the name the list shows (a
    /// Hugging Face repository, an Ollama tag) in its status and in the runs it records.
    pub fn load_info(
        &self,
        info: ModelInfo,
        options: &LoadOptions,
    ) -> Result<LoadHandle, LlmError> {
        self.load_info_with_memory(info, options, memory::available_memory_bytes())
    }

    fn load_info_with_memory(
        &self,
        info: ModelInfo,
        options: &LoadOptions,
        available: Option<u64>,
    ) -> Result<LoadHandle, LlmError> {
        let path = info.path.clone();
        if info.not_for_chat {
            let what = if info.embedding {
                "an embedding model"
            } else {
                "a reranker or encoder"
            };
            return Err(LlmError::NotAModel {
                path: path.to_path_buf(),
                reason: format!(
                    "{} is {what} (architecture {}): it turns text into vectors or scores \
                     for search and cannot chat",
                    info.name, info.architecture
                ),
            });
        }
        if !info.supported {
            return Err(LlmError::UnsupportedArchitecture {
                path: path.to_path_buf(),
                architecture: info.architecture.clone(),
            });
        }
        let opts = options.resolve(&info)?;
        let estimate = MemoryEstimate::for_model(&info, &opts);
        let unload_first = host_room(&path, &estimate, &opts, available, self.resident_bytes())?;
        let (tx, rx) = mpsc::unbounded_channel();
        let cancel = CancelToken::new();
        let job = LoadJob {
            gpu_layers_chosen: options.gpu_layers.is_none() && opts.gpu_layers > 0,
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

    /// Host memory the model in use takes (0 when none is loaded).
    fn resident_bytes(&self) -> u64 {
        self.current()
            .map(|m| m.memory_estimate().total())
            .unwrap_or(0)
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
    /// The layers offloaded were chosen from the GPU's free memory, not asked for: a load that
    /// fails on the GPU is tried again on the CPU.
    gpu_layers_chosen: bool,
    opts: ResolvedLoadOptions,
    estimate: MemoryEstimate,
    unload_first: bool,
    events: mpsc::UnboundedSender<LoadEvent>,
    cancel: CancelToken,
    engine: LlamaEngine,
}

/// A load that failed for want of (GPU) memory, as llama.cpp words it, not for a bad file.
fn is_allocation_failure(reason: &str) -> bool {
    let reason = reason.to_ascii_lowercase();
    ["alloc", "buffer", "out of memory"]
        .iter()
        .any(|w| reason.contains(w))
}

/// Whether a model of `estimate` fits in the host memory `available` (None: unknown), the
/// `resident` model's counted as freed where need be: Ok(true) when that model must be unloaded
/// first, or the error saying how far short it is.
fn host_room(
    path: &Path,
    estimate: &MemoryEstimate,
    opts: &ResolvedLoadOptions,
    available: Option<u64>,
    resident: u64,
) -> Result<bool, LlmError> {
    let Some(available) = available else {
        return Ok(false);
    };
    if estimate.total() <= available {
        return Ok(false);
    }
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
    Ok(true)
}

impl LoadJob {
    /// The model in use goes first (it and the new one do not fit together).
    fn unload_resident(&self) {
        self.engine.unload();
        *lock(&self.engine.shared.state) = LoadState::Loading {
            path: self.info.path.clone(),
            progress: 0.0,
        };
    }

    fn fail(&self, error: LlmError) {
        *lock(&self.engine.shared.state) = LoadState::Failed {
            path: self.info.path.clone(),
            error: error.to_string(),
        };
        let _ = self.events.send(LoadEvent::Failed(error));
    }

    /// Loads the model and then serves it on this thread until it is unloaded.
    fn run(mut self) {
        let backend = match backend() {
            Ok(b) => b,
            Err(e) => return self.fail(e),
        };
        if self.unload_first {
            self.unload_resident();
        }
        let path = self.info.path.clone();
        let open = |job: &LoadJob, gpu_layers: u32| -> Result<LlamaModel, LlmError> {
            let mut params = LlamaModelParams::default();
            if gpu_layers == 0 && super::gpu_offload_available() {
                // No GPU device at all, not only no layers: with its GPUs listed, llama.cpp
                // still puts buffers on them, and a GPU too full for one layer fails the load.
                params = params.with_devices(&[]).map_err(|e| LlmError::LoadFailed {
                    reason: e.to_string(),
                    path: path.clone(),
                })?;
            }
            let progress_tx = job.events.clone();
            let progress_cancel = job.cancel.clone();
            let shared = job.engine.shared.clone();
            let progress_path = path.clone();
            let params = params
                .with_n_gpu_layers(gpu_layers)
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
            LlamaModel::load_from_file(backend, &path, &params).map_err(|e| {
                if job.cancel.is_cancelled() {
                    LlmError::LoadCancelled { path: path.clone() }
                } else {
                    LlmError::LoadFailed {
                        reason: llama_log::reason_since(mark, &e.to_string()),
                        path: path.clone(),
                    }
                }
            })
        };
        let started = Instant::now();
        // At most twice: a chosen offload that fails for want of GPU memory, while loading the
        // weights or while making the context, is tried again on the CPU (the GPU's copy of
        // the weights is freed at the end of the failed round, before the CPU's is made).
        let mut fall_back: Option<String> = None;
        loop {
            if let Some(reason) = fall_back.take() {
                if let Err(e) = self.fall_back_to_cpu(&reason) {
                    return self.fail(e);
                }
            }
            let model = match open(&self, self.opts.gpu_layers) {
                Ok(m) => Arc::new(m),
                Err(LlmError::LoadFailed { reason, .. }) if self.may_fall_back(&reason) => {
                    fall_back = Some(reason);
                    continue;
                }
                Err(e) => return self.fail(e),
            };
            if self.cancel.is_cancelled() {
                return self.fail(LlmError::LoadCancelled { path });
            }
            let ctx = match self.new_context(backend, &model) {
                Ok(c) => c,
                Err(LlmError::LoadFailed { reason, .. }) if self.may_fall_back(&reason) => {
                    fall_back = Some(reason);
                    continue;
                }
                Err(e) => return self.fail(e),
            };
            if self.cancel.is_cancelled() {
                return self.fail(LlmError::LoadCancelled { path });
            }
            let released = self.serve(&model, ctx, started);
            // The context went with the worker; the model goes now, and then `shutdown`, which
            // waits for this signal, may return.
            drop(model);
            if let Some(released) = released {
                let _ = released.send(());
            }
            return;
        }
    }

    /// Whether a failure of the GPU offload Burrow chose (not one the user asked for) may be
    /// retried on the CPU: for want of memory, and only once.
    fn may_fall_back(&self, reason: &str) -> bool {
        self.gpu_layers_chosen && self.opts.gpu_layers > 0 && is_allocation_failure(reason)
    }

    /// Moves the load to the CPU: the free memory read before loading was wrong or went to
    /// another program (a GPU nearly full reports nothing once this process's own CUDA context
    /// takes the rest), and the CPU can still run the model.
    fn fall_back_to_cpu(&mut self, reason: &str) -> Result<(), LlmError> {
        tracing::warn!(
            "{}: {} layers did not fit on the GPU ({reason}); loading on the CPU",
            self.info.name,
            self.opts.gpu_layers
        );
        self.opts.gpu_layers = 0;
        self.estimate = MemoryEstimate::for_model(&self.info, &self.opts);
        // The host-memory check the load was admitted with, again for the CPU's larger share
        // (every weight and the whole KV cache).
        if host_room(
            &self.info.path,
            &self.estimate,
            &self.opts,
            memory::available_memory_bytes(),
            self.engine.resident_bytes(),
        )? {
            self.unload_resident();
        }
        Ok(())
    }

    fn new_context<'m>(
        &self,
        backend: &LlamaBackend,
        model: &'m LlamaModel,
    ) -> Result<LlamaContext<'m>, LlmError> {
        let n_ctx = self.opts.context_size;
        let mut ctx_params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(self.opts.batch_size)
            .with_n_ubatch(self.opts.batch_size)
            .with_n_threads(self.opts.threads as i32)
            .with_n_threads_batch(self.opts.threads_batch as i32);
        if self.opts.kv_cache != super::KvCacheType::F16 {
            // A quantized V cache works only under flash attention.
            let kind = match self.opts.kv_cache {
                super::KvCacheType::Q4_0 => KvCacheType::Q4_0,
                _ => KvCacheType::Q8_0,
            };
            ctx_params = ctx_params
                .with_type_k(kind)
                .with_type_v(kind)
                .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED);
        }
        let mark = llama_log::mark();
        model
            .new_context(backend, ctx_params)
            .map_err(|e| LlmError::LoadFailed {
                reason: format!(
                    "cannot create a context of {n_ctx} tokens: {}",
                    llama_log::reason_since(mark, &e.to_string())
                ),
                path: self.info.path.clone(),
            })
    }

    /// Publishes the loaded model and serves it on this thread until it is unloaded; then gives
    /// the signal to send once the model is freed (none when it failed before serving).
    fn serve(
        self,
        model: &Arc<LlamaModel>,
        ctx: LlamaContext<'_>,
        started: Instant,
    ) -> Option<std_mpsc::Sender<()>> {
        let path = self.info.path.clone();
        let load_ms = started.elapsed().as_secs_f64() * 1000.0;
        let (job_tx, job_rx) = std_mpsc::channel::<Command>();
        let (released_tx, released_rx) = std_mpsc::channel::<()>();
        let closing = Arc::new(AtomicBool::new(false));
        let last: super::worker::SharedSequence = Arc::default();
        let handle = match LoadedModel::new(
            model,
            self.info.clone(),
            self.opts.clone(),
            self.estimate,
            job_tx,
            load_ms,
            released_rx,
            closing.clone(),
            last.clone(),
        ) {
            Ok(h) => Arc::new(h),
            Err(e) => {
                self.fail(e);
                return None;
            }
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
        let prefill_cost = PrefillCost::for_model(
            model.n_params(),
            model.n_layer(),
            model.n_embd(),
            self.opts.gpu_layers,
        );
        let worker = Worker::new(
            ctx,
            model,
            self.opts.batch_size as usize,
            prefill_cost,
            last,
        );
        drop(self);
        worker.serve(job_rx, &closing);
        Some(released_tx)
    }
}
