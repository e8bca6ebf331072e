//! The interface the agent drives: a `LanguageModel` takes a request (a prompt or chat messages,
//! sampling, grammar, stop strings, a token budget) and yields a stream of events: token text,
//! then usage and timings, then done or an error.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::gguf::GgufError;
use super::grammar::{Grammar, GrammarError};
use super::template::{ChatMessage, TemplateError};

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("{path}: architecture {architecture:?} is not supported by this build of llama.cpp")]
    UnsupportedArchitecture { path: PathBuf, architecture: String },
    #[error("{path}: not a language model: {reason}")]
    NotAModel { path: PathBuf, reason: String },
    #[error("{path}: needs about {} of memory but only {} is available{hint}", human_bytes(*.needed), human_bytes(*.available))]
    InsufficientMemory {
        path: PathBuf,
        needed: u64,
        available: u64,
        hint: String,
    },
    #[error("context size {requested} is invalid: {reason}")]
    InvalidContextSize { requested: u64, reason: String },
    #[error("invalid load option {option}: {reason}")]
    InvalidLoadOption {
        option: &'static str,
        reason: String,
    },
    #[error("the prompt needs {needed} tokens but the context holds {available}")]
    ContextFull { needed: usize, available: usize },
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("invalid sampling parameter {field} = {value}: {reason}")]
    InvalidSampling {
        field: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error(transparent)]
    Grammar(#[from] GrammarError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("{path}: the model's chat template cannot be used: {source}")]
    ModelTemplate {
        path: PathBuf,
        #[source]
        source: TemplateError,
    },
    #[error("{path}: llama.cpp could not load the model: {reason}")]
    LoadFailed { path: PathBuf, reason: String },
    #[error("{path}: loading was cancelled")]
    LoadCancelled { path: PathBuf },
    #[error("no model is loaded")]
    NoModelLoaded,
    #[error("the model was unloaded")]
    ModelUnloaded,
    #[error("no model matches {query:?}{}", if .available.is_empty() { String::new() } else { format!(" (available: {})", .available.join(", ")) })]
    ModelNotFound {
        query: String,
        available: Vec<String>,
    },
    #[error("{query:?} matches {} models: {}; give the one meant by its path", .paths.len(), .paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    AmbiguousModel { query: String, paths: Vec<PathBuf> },
    #[error("llama.cpp failed to decode: {reason}")]
    Decode { reason: String },
    #[error("scripted model: {0}")]
    Script(String),
    #[error("inference thread failed: {0}")]
    Worker(String),
    /// A remote backend failed: unreachable, an HTTP error, a stream cut or malformed.
    #[error("{url}: {reason}")]
    Remote {
        url: String,
        reason: String,
        /// Whether the same request may succeed later (refused, timed out, 5xx, cut).
        retryable: bool,
    },
}

impl LlmError {
    /// Whether retrying the same request may succeed (a busy or restarting engine), as opposed to
    /// a request that is wrong and will fail again.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Worker(_) | LlmError::ModelUnloaded => true,
            LlmError::Remote { retryable, .. } => *retryable,
            _ => false,
        }
    }
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// How to pick each next token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplingParams {
    /// 0 means greedy (always the most likely token).
    pub temperature: f32,
    /// 0 disables top-k.
    pub top_k: i32,
    /// 1.0 disables top-p.
    pub top_p: f32,
    /// 0.0 disables min-p.
    pub min_p: f32,
    /// 1.0 disables the repetition penalty.
    pub repeat_penalty: f32,
    /// How many recent tokens the repetition penalty looks at.
    pub repeat_last_n: i32,
    /// Fixes the random stream; `None` picks a fresh seed per request.
    pub seed: Option<u32>,
}

impl Default for SamplingParams {
    /// llama.cpp's own defaults.
    fn default() -> Self {
        SamplingParams {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
            seed: None,
        }
    }
}

impl SamplingParams {
    pub fn greedy() -> Self {
        SamplingParams {
            temperature: 0.0,
            ..Default::default()
        }
    }

    pub fn validate(&self) -> Result<(), LlmError> {
        let bad = |field, value: String, reason| {
            Err(LlmError::InvalidSampling {
                field,
                value,
                reason,
            })
        };
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            return bad(
                "temperature",
                self.temperature.to_string(),
                "must be a finite number >= 0",
            );
        }
        if self.top_k < 0 {
            return bad("top_k", self.top_k.to_string(), "must be >= 0");
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p", self.top_p.to_string(), "must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return bad("min_p", self.min_p.to_string(), "must be in [0, 1]");
        }
        if !self.repeat_penalty.is_finite() || self.repeat_penalty <= 0.0 {
            return bad(
                "repeat_penalty",
                self.repeat_penalty.to_string(),
                "must be a finite number > 0",
            );
        }
        if self.repeat_last_n < 0 {
            return bad(
                "repeat_last_n",
                self.repeat_last_n.to_string(),
                "must be >= 0",
            );
        }
        Ok(())
    }
}

/// A piece of prompt text with its trust level. Trusted text is tokenized with special tokens
/// parsed (`<|im_start|>` becomes the control token); untrusted text (file contents, tool
/// observations, issue bodies) is tokenized as plain text, so it cannot forge turn boundaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptSegment {
    pub text: String,
    pub trusted: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Raw prompt text, already in the model's format; special tokens are parsed.
    Text(String),
    /// Raw prompt text with per-segment trust.
    Segments(Vec<PromptSegment>),
    /// Chat messages, rendered with the model's chat template. The content of `tool` messages
    /// and of messages in `untrusted` (indices) is untrusted.
    Chat {
        messages: Vec<ChatMessage>,
        tools: Option<Vec<serde_json::Value>>,
        untrusted: Vec<usize>,
    },
}

/// What `LanguageModel::warm_start` did with the prefix.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WarmStart {
    /// The engine keeps no state on disk.
    Unsupported,
    /// The KV cache already held the prefix (the model stayed loaded between runs).
    InMemory { tokens: usize },
    /// Read from the file an earlier process left.
    Loaded { tokens: usize, ms: f64 },
    /// Evaluated, and left for the next process.
    Saved { tokens: usize, ms: f64 },
    /// Evaluated, but the file could not be written: the run goes on, the next process
    /// evaluates the prefix again.
    NotSaved { tokens: usize, reason: String },
}

/// A prompt rendered once for a model, with its size: what `LanguageModel::prepare` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedPrompt {
    /// The prompt to send; the engine does not render it again.
    pub prompt: Prompt,
    /// Its size in tokens, counted as `count_tokens` counts text.
    pub tokens: usize,
}

impl Prompt {
    pub fn chat(messages: Vec<ChatMessage>) -> Self {
        Prompt::Chat {
            messages,
            tools: None,
            untrusted: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub prompt: Prompt,
    pub sampling: SamplingParams,
    pub grammar: Option<Grammar>,
    /// Generation stops before any of these strings; the stop string itself is not emitted.
    pub stop: Vec<String>,
    /// At most this many tokens are generated; `None` runs until the model ends its turn or the
    /// context is full.
    pub max_tokens: Option<usize>,
    /// Never pick an end-of-turn token (benchmarks that need exactly `max_tokens` tokens).
    pub ignore_eos: bool,
}

impl GenerateRequest {
    pub fn new(prompt: Prompt) -> Self {
        GenerateRequest {
            prompt,
            sampling: SamplingParams::default(),
            grammar: None,
            stop: Vec::new(),
            max_tokens: None,
            ignore_eos: false,
        }
    }

    pub fn text(prompt: impl Into<String>) -> Self {
        Self::new(Prompt::Text(prompt.into()))
    }

    pub fn sampling(mut self, sampling: SamplingParams) -> Self {
        self.sampling = sampling;
        self
    }

    pub fn grammar(mut self, grammar: Grammar) -> Self {
        self.grammar = Some(grammar);
        self
    }

    pub fn stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    pub fn max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = Some(n);
        self
    }

    pub fn ignore_eos(mut self, yes: bool) -> Self {
        self.ignore_eos = yes;
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model produced an end-of-turn token.
    EndOfTurn,
    /// One of the request's stop strings appeared.
    StopString,
    MaxTokens,
    /// The context window filled up.
    ContextFull,
    Cancelled,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What one call cost, in tokens and time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    /// Prompt tokens whose KV entries were reused from the previous call.
    pub cached_tokens: usize,
    pub generated_tokens: usize,
    /// Generated tokens the grammar forced (a schema's keys, a constant), evaluated in one
    /// batch with the token before them rather than in a decode step each.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forced_tokens: usize,
    /// Preparing the request before the model runs: rendering and tokenizing the prompt,
    /// compiling the grammar. Part of the time to first token.
    #[serde(default)]
    pub setup_ms: f64,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub time_to_first_token_ms: f64,
    /// The request had a grammar the engine could not enforce (a remote server that takes
    /// none of its form): the output was decoded free.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unconstrained: bool,
}

impl Usage {
    /// Prompt tokens evaluated per second (excluding reused ones).
    pub fn prefill_tokens_per_s(&self) -> f64 {
        let n = self.prompt_tokens.saturating_sub(self.cached_tokens) as f64;
        if self.prefill_ms > 0.0 {
            n / (self.prefill_ms / 1000.0)
        } else {
            0.0
        }
    }

    /// Generated tokens per second after the first (forced ones included).
    pub fn decode_tokens_per_s(&self) -> f64 {
        let n = self.generated_tokens.saturating_sub(1) as f64;
        if self.decode_ms > 0.0 {
            n / (self.decode_ms / 1000.0)
        } else {
            0.0
        }
    }
}

#[derive(Debug)]
pub enum GenerationEvent {
    Token(String),
    Usage(Usage),
    Done(StopReason),
    Error(LlmError),
}

/// Stops a generation or a load; takes effect before the next token (or load step).
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A running generation: its events, and a way to stop it. Dropping it cancels it.
#[derive(Debug)]
pub struct Generation {
    events: mpsc::UnboundedReceiver<GenerationEvent>,
    cancel: CancelToken,
}

/// The sending side, for implementations.
#[derive(Debug, Clone)]
pub struct GenerationSink {
    tx: mpsc::UnboundedSender<GenerationEvent>,
    cancel: CancelToken,
}

impl GenerationSink {
    /// Sends an event; false once the receiver is gone (which counts as a cancel).
    pub fn send(&self, event: GenerationEvent) -> bool {
        self.tx.send(event).is_ok()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled() || self.tx.is_closed()
    }
}

impl Generation {
    pub fn channel() -> (Generation, GenerationSink) {
        let (tx, rx) = mpsc::unbounded_channel();
        let cancel = CancelToken::new();
        (
            Generation {
                events: rx,
                cancel: cancel.clone(),
            },
            GenerationSink { tx, cancel },
        )
    }

    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }

    pub fn cancel(&self) {
        self.cancel.cancel()
    }

    pub async fn next(&mut self) -> Option<GenerationEvent> {
        self.events.recv().await
    }

    /// For synchronous callers (the CLI, tests). Must not be called inside an async runtime.
    pub fn blocking_next(&mut self) -> Option<GenerationEvent> {
        self.events.blocking_recv()
    }

    /// Runs the generation to its end, calling `on_token` for each piece of text.
    pub fn wait(mut self, mut on_token: impl FnMut(&str)) -> Result<Completion, LlmError> {
        let mut text = String::new();
        let mut usage = Usage::default();
        while let Some(ev) = self.blocking_next() {
            match ev {
                GenerationEvent::Token(t) => {
                    on_token(&t);
                    text.push_str(&t);
                }
                GenerationEvent::Usage(u) => usage = u,
                GenerationEvent::Done(stop_reason) => {
                    return Ok(Completion {
                        text,
                        usage,
                        stop_reason,
                    })
                }
                GenerationEvent::Error(e) => return Err(e),
            }
        }
        Err(LlmError::Worker(
            "the generation ended without a final event".into(),
        ))
    }

    pub fn complete(self) -> Result<Completion, LlmError> {
        self.wait(|_| {})
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    pub stop_reason: StopReason,
}

/// Facts about the model behind a `LanguageModel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelDescriptor {
    pub name: String,
    pub path: Option<PathBuf>,
    pub context_length: usize,
    pub has_chat_template: bool,
}

/// A model the agent can call. Implementations: the llama.cpp backend and a scripted fake.
pub trait LanguageModel: Send + Sync {
    fn descriptor(&self) -> ModelDescriptor;

    /// Starts a generation. Request errors that need no inference (a bad grammar, a prompt that
    /// does not fit) are returned here; failures during inference arrive as an `Error` event.
    fn generate(&self, request: GenerateRequest) -> Result<Generation, LlmError>;

    /// Tokens `text` would take, tokenized as untrusted text.
    fn count_tokens(&self, text: &str) -> Result<usize, LlmError>;

    /// The prompt a chat request would send, as text (for inspection and token budgeting).
    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
    ) -> Result<String, LlmError>;

    /// Brings the KV state of `prompt`, a prefix that new runs share (the agent's system
    /// prompt), from `dir`, where an earlier process left it for this model and these tokens;
    /// or evaluates it and leaves it there. What the next request shares with it is then not
    /// evaluated again: a new process's first step costs only what follows the prefix. An
    /// engine without state files does nothing.
    fn warm_start(&self, prompt: Prompt, dir: &Path) -> Result<WarmStart, LlmError> {
        let _ = (prompt, dir);
        Ok(WarmStart::Unsupported)
    }

    /// Renders `prompt` once for this model and counts it, so that a caller budgeting the
    /// context sends the very prompt it counted and the engine does not render it again. This
    /// default counts without rendering ahead; an engine that renders overrides it.
    fn prepare(&self, prompt: Prompt) -> Result<PreparedPrompt, LlmError> {
        let tokens = match &prompt {
            Prompt::Chat {
                messages, tools, ..
            } => self.count_tokens(&self.render_chat(messages, tools.as_deref())?)?,
            Prompt::Text(t) => self.count_tokens(t)?,
            Prompt::Segments(s) => s
                .iter()
                .map(|s| self.count_tokens(&s.text))
                .sum::<Result<usize, _>>()?,
        };
        Ok(PreparedPrompt { prompt, tokens })
    }
}
