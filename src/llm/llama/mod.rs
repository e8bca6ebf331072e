//! The llama.cpp backend: loading, unloading and switching GGUF models (`load`), the handle
//! callers generate with (`model`), and the decode loop on each model's thread (`worker`).
//!
//! llama.cpp aborts the whole process on some bad inputs (a batch larger than `n_batch`, a
//! prompt past `n_ctx`, sampling a row that has no logits, an end-of-generation token the grammar
//! does not allow...). Every such precondition is checked here, in Rust, before the call, and
//! reported as a typed error.

mod greedy;
mod load;
mod model;
mod prefill;
mod worker;

use std::sync::{Mutex, OnceLock};

use llama_cpp_2::llama_backend::LlamaBackend;
use serde::{Deserialize, Serialize};

use super::engine::LlmError;
use super::library::ModelInfo;
use super::llama_log;

pub use load::{LlamaEngine, LoadEvent, LoadHandle, LoadState};
pub use model::LoadedModel;

/// The most text we hand to llama.cpp's tokenizer at once: its lengths are 32-bit, and no
/// context window holds more.
pub(crate) const MAX_PROMPT_BYTES: usize = 256 << 20;
/// Bounds for the context size. Beyond 16x the trained length RoPE scaling produces noise.
const MIN_CONTEXT: u32 = 64;
const MAX_CONTEXT: u32 = 1 << 24;
const DEFAULT_CONTEXT: u32 = 8192;
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

/// The GPUs llama.cpp sees (none in a CPU build), with their memory now.
pub fn gpu_devices() -> Vec<GpuDevice> {
    if backend().is_err() {
        return Vec::new();
    }
    llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .filter(|d| {
            matches!(
                d.device_type,
                llama_cpp_2::LlamaBackendDeviceType::Gpu
                    | llama_cpp_2::LlamaBackendDeviceType::IntegratedGpu
            )
        })
        .map(|d| GpuDevice {
            name: format!("{} ({})", d.description, d.backend),
            memory_total: d.memory_total as u64,
            memory_free: d.memory_free as u64,
            integrated: matches!(
                d.device_type,
                llama_cpp_2::LlamaBackendDeviceType::IntegratedGpu
            ),
        })
        .collect()
}

/// The free memory the layers will go to: the largest discrete GPU's, since llama.cpp uses an
/// integrated GPU only where there is no other (and one sharing system memory would report far
/// more than the discrete GPU holds). None where no device says. A device that reports its total
/// says how much is free, none included: a GPU another program has filled has 0 bytes free, not
/// an unknown amount (read as unknown, every layer went to it and the load failed).
pub fn offload_free_memory(devices: &[GpuDevice]) -> Option<u64> {
    let discrete = devices.iter().any(|d| !d.integrated);
    devices
        .iter()
        .filter(|d| !discrete || !d.integrated)
        .filter(|d| d.memory_total > 0)
        .map(|d| d.memory_free)
        .max()
}

/// A model's layers as llama.cpp counts them for offload: its blocks and the output layer
/// (bounded, so a corrupt header cannot overflow the count).
pub fn layer_count(info: &ModelInfo) -> u32 {
    info.block_count.unwrap_or(0).min(1 << 20) as u32 + 1
}

/// A GPU and its memory, as the backend reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuDevice {
    pub name: String,
    pub memory_total: u64,
    pub memory_free: u64,
    /// Shares system memory (llama.cpp offloads to it only where there is no other GPU).
    pub integrated: bool,
}

/// Memory left free on the GPUs beside a model fitted to them: the backend's own buffers,
/// other programs' growth and the desktop (llama.cpp's `--fit` keeps 1 GiB by default).
const GPU_HEADROOM: u64 = 1 << 30;

/// How many of a model's `layers` (its blocks and the output layer) fit in `free` bytes of GPU
/// memory with `opts`' context: each block takes its share of the weights and its KV cache,
/// and a compute buffer for one batch is kept beside them. All of them when they fit, else as
/// many as fit (the rest run on the CPU), never so many that loading fails for lack of memory.
pub fn fit_gpu_layers(info: &ModelInfo, opts: &ResolvedLoadOptions, free: u64) -> u32 {
    let n_layer = info.block_count.unwrap_or(32).clamp(1, 1 << 20);
    let layers = n_layer as u32 + 1;
    let all_on_gpu = ResolvedLoadOptions {
        gpu_layers: layers,
        ..opts.clone()
    };
    let on_cpu = MemoryEstimate::for_model(
        info,
        &ResolvedLoadOptions {
            gpu_layers: 0,
            ..opts.clone()
        },
    );
    let compute = MemoryEstimate::for_model(info, &all_on_gpu).compute;
    // Per layer: the weights shared out over the blocks and the output layer (the embedding
    // table stays on the CPU), and the block's KV cache.
    let per_layer = (info.tensor_data_bytes / u64::from(layers))
        .saturating_add(on_cpu.kv_cache / n_layer)
        .max(1);
    let usable = free.saturating_sub(GPU_HEADROOM.saturating_add(compute));
    let fit = usable / per_layer;
    u32::try_from(fit)
        .unwrap_or(u32::MAX)
        .min(layers)
        .min(layer_count(info))
}

/// The most threads a model is given: past it, OpenMP failed to start them or crashed
/// (100,000 asked for: a segfault in libgomp).
pub const MAX_THREADS: u32 = 1024;

/// How to load a model. `None` fields take defaults from the model and the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadOptions {
    /// Context window in tokens (default: the trained length, at most 8192: an agent run with
    /// a few searches fills 4,096 by its fourth step).
    pub context_size: Option<u32>,
    /// Threads for generation (default: the number of CPUs available to this process).
    pub threads: Option<u32>,
    /// Threads for prompt processing (default: same as `threads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_batch: Option<u32>,
    /// Layers offloaded to the GPU (default: all of them when built with a GPU backend).
    pub gpu_layers: Option<u32>,
    /// Tokens per prompt-processing batch (default 512, at most the context size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    /// The KV cache's element type (default f16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache: Option<KvCacheType>,
}

/// What the KV cache stores keys and values as. The quantized types take half (q8_0) or a
/// quarter (q4_0, plus block scales) of f16's memory and bandwidth, and need llama.cpp's flash
/// attention, which the engine then turns on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KvCacheType {
    #[default]
    #[serde(rename = "f16")]
    F16,
    #[serde(rename = "q8_0")]
    Q8_0,
    #[serde(rename = "q4_0")]
    Q4_0,
}

impl KvCacheType {
    pub const ALL: [KvCacheType; 3] = [KvCacheType::F16, KvCacheType::Q8_0, KvCacheType::Q4_0];

    pub fn as_str(self) -> &'static str {
        match self {
            KvCacheType::F16 => "f16",
            KvCacheType::Q8_0 => "q8_0",
            KvCacheType::Q4_0 => "q4_0",
        }
    }

    pub fn parse(name: &str) -> Result<Self, LlmError> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| LlmError::InvalidLoadOption {
                option: "kv_cache",
                reason: format!("{name:?} is none of f16, q8_0, q4_0"),
            })
    }

    /// Bytes per cached element, block scales included (ggml's block sizes: 32 values with an
    /// f16 scale).
    fn bytes_per_element(self) -> f64 {
        match self {
            KvCacheType::F16 => 2.0,
            KvCacheType::Q8_0 => 34.0 / 32.0,
            KvCacheType::Q4_0 => 18.0 / 32.0,
        }
    }
}

/// Settled values of `LoadOptions` for one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedLoadOptions {
    pub context_size: u32,
    pub threads: u32,
    pub threads_batch: u32,
    pub gpu_layers: u32,
    pub batch_size: u32,
    #[serde(default)]
    pub kv_cache: KvCacheType,
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
            Some(n) if n > MAX_THREADS => Err(LlmError::InvalidLoadOption {
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
        let layers = layer_count(info);
        let mut resolved = ResolvedLoadOptions {
            context_size,
            threads,
            threads_batch,
            gpu_layers: 0,
            batch_size,
            kv_cache: self.kv_cache.unwrap_or_default(),
        };
        resolved.gpu_layers = match self.gpu_layers {
            Some(n) => n.min(layers),
            None if gpu_offload_available() => {
                // All layers where they fit, else as many as fit in the free memory (the
                // largest discrete GPU's: llama.cpp splits layers across several, which this
                // does not count on). Devices reporting no memory are trusted to hold them all.
                match offload_free_memory(&gpu_devices()) {
                    Some(free) => {
                        let fit = fit_gpu_layers(info, &resolved, free);
                        if fit < layers {
                            tracing::warn!(
                                "{}: {fit} of {layers} layers fit in the GPU's {} MiB free; \
                                 the rest run on the CPU",
                                info.name,
                                free >> 20
                            );
                        }
                        fit
                    }
                    None => layers,
                }
            }
            None => 0,
        };
        Ok(resolved)
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

/// Memory a model needs in host RAM, estimated from its header before loading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryEstimate {
    pub weights: u64,
    pub kv_cache: u64,
    pub compute: u64,
}

impl MemoryEstimate {
    pub fn total(&self) -> u64 {
        self.weights
            .saturating_add(self.kv_cache)
            .saturating_add(self.compute)
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
        // In floating point: a corrupt header's sizes would overflow integers (and a float
        // past u64::MAX saturates when converted back).
        let f = |n: u64| n as f64;
        // K and V for every layer and position.
        let kv_cache = 2.0
            * f(n_ctx)
            * f(n_layer)
            * f(n_head_kv)
            * f(head_dim)
            * opts.kv_cache.bytes_per_element()
            * cpu_fraction;
        // Activations for one batch plus attention scores, and the logits row.
        let vocab = info.vocab_size.unwrap_or(32000);
        let compute = f(n_batch) * (f(n_embd) * 32.0 + f(n_ctx) * 4.0 * f(n_head))
            + f(vocab) * 4.0
            + f(32 << 20);
        MemoryEstimate {
            weights: (info.tensor_data_bytes as f64 * cpu_fraction.max(0.05)) as u64,
            kv_cache: kv_cache as u64,
            compute: compute as u64,
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data half-updated (each is a
    // single assignment), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::library::ModelSource;

    /// Qwen2.5-Coder-7B's shape at Q4_K_M (4.4 GiB of weights, 28 blocks, GQA with 4 KV heads).
    fn seven_b() -> ModelInfo {
        ModelInfo {
            name: "7b".into(),
            path: "/m/7b.gguf".into(),
            architecture: "qwen2".into(),
            parameters: 7_600_000_000,
            quantization: "Q4_K_M".into(),
            file_size: 4_680_000_000,
            context_length: Some(32768),
            has_chat_template: true,
            source: ModelSource::Project,
            split_count: 1,
            supported: true,
            catalogue_id: None,
            licence: None,
            block_count: Some(28),
            embedding_length: Some(3584),
            head_count: Some(28),
            head_count_kv: Some(4),
            vocab_size: Some(152064),
            tensor_data_bytes: 4_680_000_000,
            embedding: false,
            not_for_chat: false,
        }
    }

    fn opts(context_size: u32) -> ResolvedLoadOptions {
        ResolvedLoadOptions {
            context_size,
            threads: 8,
            threads_batch: 8,
            gpu_layers: 0,
            batch_size: 512,
            kv_cache: KvCacheType::F16,
        }
    }

    const GIB: u64 = 1 << 30;

    /// Issue 20: `--gpu-layers` left out offloaded every layer whatever the GPU had free, and a
    /// model larger than the free memory failed to load; it now takes as many as fit.
    #[test]
    fn layers_are_offloaded_as_far_as_the_free_gpu_memory_holds_them() {
        let info = seven_b();
        // Plenty: all 29 (28 blocks and the output layer).
        assert_eq!(fit_gpu_layers(&info, &opts(8192), 80 * GIB), 29);
        // About half the weights' room: some, not all, and what is offloaded fits.
        let half = fit_gpu_layers(&info, &opts(8192), 3 * GIB + GIB / 2);
        assert!((5..29).contains(&half), "{half}");
        let used = MemoryEstimate::for_model(&info, &opts(8192)).total()
            - MemoryEstimate::for_model(
                &info,
                &ResolvedLoadOptions {
                    gpu_layers: half,
                    ..opts(8192)
                },
            )
            .total();
        assert!(used <= 3 * GIB + GIB / 2 - GPU_HEADROOM, "{used}");
        // A longer context's KV cache leaves room for fewer layers.
        assert!(fit_gpu_layers(&info, &opts(32768), 3 * GIB + GIB / 2) < half);
        // Less than the headroom: nothing goes to the GPU, and loading still works on the CPU.
        assert_eq!(fit_gpu_layers(&info, &opts(8192), GIB / 2), 0);
    }

    /// Issue 20, found on an H200 another process had filled (511 MiB free, Burrow's own CUDA
    /// context took that): 0 bytes free was read as "the device does not say", so every layer
    /// went to the GPU and the load failed where the CPU would have run it.
    #[test]
    fn a_full_gpu_takes_no_layers_where_one_that_does_not_say_takes_them_all() {
        let full = GpuDevice {
            name: "g".into(),
            memory_total: 140 * GIB,
            memory_free: 0,
            integrated: false,
        };
        assert_eq!(offload_free_memory(std::slice::from_ref(&full)), Some(0));
        assert_eq!(fit_gpu_layers(&seven_b(), &opts(8192), 0), 0);
        let silent = GpuDevice {
            memory_total: 0,
            ..full
        };
        assert_eq!(offload_free_memory(&[silent]), None);
    }

    /// Review of issue 20's fit: a laptop's integrated GPU (system memory) reported more free
    /// memory than the discrete GPU the layers go to, and the fit used it.
    #[test]
    fn the_fit_reads_the_discrete_gpu_and_not_an_integrated_one_beside_it() {
        let gpu = |free: u64, integrated| GpuDevice {
            name: "g".into(),
            memory_total: free,
            memory_free: free,
            integrated,
        };
        assert_eq!(
            offload_free_memory(&[gpu(30 * GIB, true), gpu(6 * GIB, false)]),
            Some(6 * GIB)
        );
        assert_eq!(offload_free_memory(&[gpu(30 * GIB, true)]), Some(30 * GIB));
        assert_eq!(offload_free_memory(&[gpu(0, false)]), None);
        assert_eq!(offload_free_memory(&[]), None);
        // A corrupt header's block count neither overflows nor divides by zero.
        let huge = ModelInfo {
            block_count: Some(u64::MAX),
            ..seven_b()
        };
        assert_eq!(layer_count(&huge), (1 << 20) + 1);
        assert!(fit_gpu_layers(&huge, &opts(512), 80 * GIB) <= layer_count(&huge));
    }
}
