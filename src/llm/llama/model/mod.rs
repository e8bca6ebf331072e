//! The handle callers generate with: it renders and tokenizes on the caller's thread and sends
//! jobs to the model's thread.
//!
//! The parts: `tokens` turns prompts into tokens (reusing what the KV cache holds), `chat`
//! renders chats with the untrusted contents kept apart, `sampling` builds the sampler chain
//! and the grammar constraint of a request.

mod chat;
mod sampling;
mod tokens;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use sha2::{Digest, Sha256};

use super::worker::{Command, Job, SharedSequence};
use super::{lock, GrammarBackend, MemoryEstimate, ResolvedLoadOptions};
use crate::llm::engine::{
    CancelToken, GenerateRequest, Generation, LanguageModel, LlmError, ModelDescriptor,
    PreparedPrompt, Prompt, PromptSegment, WarmStart,
};
use crate::llm::library::ModelInfo;
use crate::llm::template::{ChatMessage, ChatTemplate, TemplateError};

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
    /// The texts that parse as special tokens (`<|im_end|>`...), longest first.
    special_texts: Vec<String>,
    grammar_backend: Mutex<GrammarBackend>,
    prefill_padding: AtomicBool,
    /// What the model's KV cache holds, published by its thread after each generation.
    last: SharedSequence,
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
    pub(super) fn new(
        model: &Arc<LlamaModel>,
        info: ModelInfo,
        options: ResolvedLoadOptions,
        memory: MemoryEstimate,
        jobs: std_mpsc::Sender<Command>,
        load_ms: f64,
        released: std_mpsc::Receiver<()>,
        closing: Arc<AtomicBool>,
        last: SharedSequence,
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
        // Control tokens, and user-defined tokens that look like markup and parse as one token
        // only with special parsing on.
        let mut special_texts: Vec<String> = (0..vocab.n_tokens())
            .map(LlamaToken)
            .filter_map(|t| {
                let text = token_text(t);
                if text.chars().count() < 2 {
                    return None;
                }
                let markup = (text.starts_with('<') && text.ends_with('>'))
                    || (text.starts_with('[') && text.ends_with(']'));
                let special = vocab.is_control(t)
                    || (markup
                        && vocab.tokenize(text.as_bytes(), false, true) == [t]
                        && vocab.tokenize(text.as_bytes(), false, false).len() > 1);
                special.then_some(text)
            })
            .collect();
        special_texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
        special_texts.dedup();
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
                (ChatTemplate::chatml(), true)
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
            special_texts,
            grammar_backend: Mutex::new(GrammarBackend::default()),
            prefill_padding: AtomicBool::new(true),
            last,
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

    /// Whether a short prefill deep in the KV cache may re-evaluate a few cached tokens to reach
    /// llama.cpp's faster attention kernel (on by default; benchmarks compare).
    pub fn set_prefill_padding(&self, on: bool) {
        self.prefill_padding.store(on, Ordering::Relaxed);
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

    /// A prompt the context can take: not empty, and room left for at least one generated
    /// token (llama.cpp aborts on either).
    fn check_fits(&self, tokens: &[LlamaToken]) -> Result<(), LlmError> {
        if tokens.is_empty() {
            return Err(LlmError::EmptyPrompt);
        }
        let n_ctx = self.options.context_size as usize;
        if tokens.len() >= n_ctx {
            return Err(LlmError::ContextFull {
                needed: tokens.len() + 1,
                available: n_ctx,
            });
        }
        Ok(())
    }

    /// The name of the state file of `tokens` in this model as loaded: the file (its path,
    /// size and time), the context's shape and the engine's version decide whether a state
    /// loads at all, the tokens what it holds.
    fn state_key(&self, tokens: &[LlamaToken]) -> String {
        let mut h = Sha256::new();
        let modified = std::fs::metadata(&self.info.path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let o = &self.options;
        h.update(format!(
            "{}\0{}\0{modified}\0{}\0{}\0{}\0{}\0{}\0",
            self.info.path.display(),
            self.info.file_size,
            o.context_size,
            o.batch_size,
            o.gpu_layers,
            o.kv_cache.as_str(),
            env!("CARGO_PKG_VERSION"),
        ));
        for t in tokens {
            h.update(t.0.to_le_bytes());
        }
        h.finalize()
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    pub(super) fn llama_model(&self) -> Result<Arc<LlamaModel>, LlmError> {
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
        let tokens = self.tokenize_after_last(&model, &segments)?;
        self.check_fits(&tokens)?;
        let chain = self.build_chain(&model, &request.sampling, request.ignore_eos);
        let greedy = self.greedy_rule(&request.sampling, request.ignore_eos);
        let constraint = request
            .grammar
            .as_ref()
            .map(|g| self.build_constraint(&model, g))
            .transpose()?;
        let (generation, sink) = Generation::channel();
        *lock(&self.active) = Some(generation.cancel_token());
        let job = Job {
            segments,
            tokens,
            chain,
            greedy,
            constraint,
            stop: request.stop,
            max_tokens: request.max_tokens,
            sink,
            started,
            setup_ms: started.elapsed().as_secs_f64() * 1000.0,
            pad_prefill: self.prefill_padding.load(Ordering::Relaxed),
        };
        self.send(Command::Generate(Box::new(job)))?;
        Ok(generation)
    }

    fn warm_start(&self, prompt: Prompt, dir: &Path) -> Result<WarmStart, LlmError> {
        let model = self.llama_model()?;
        let segments = self.segments(&prompt)?;
        let tokens = self.tokenize(&model, &segments)?;
        self.check_fits(&tokens)?;
        let file = dir.join(format!("{}.kv", self.state_key(&tokens)));
        prune_states(dir, &file);
        let (reply, answer) = std_mpsc::channel();
        self.send(Command::Warm {
            tokens,
            file,
            reply,
        })?;
        answer.recv().map_err(|_| LlmError::ModelUnloaded)?
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

    /// The chat rendered once into the segments generation decodes (trusted template text,
    /// untrusted contents), counted as the text they make up.
    fn prepare(&self, prompt: Prompt) -> Result<PreparedPrompt, LlmError> {
        let segments = self.segments(&prompt)?;
        let tokens = match &prompt {
            Prompt::Segments(s) => s
                .iter()
                .map(|s| self.count_tokens(&s.text))
                .sum::<Result<usize, _>>()?,
            _ => {
                self.count_tokens(&segments.iter().map(|s| s.text.as_str()).collect::<String>())?
            }
        };
        Ok(PreparedPrompt {
            prompt: Prompt::Segments(segments),
            tokens,
        })
    }
}

impl Drop for LoadedModel {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// State files kept in a warm-start folder: one per model and prefix in use, the newest
/// first. A prefix changes with the tools, the settings and the workspace's summary, and each
/// file is tens of megabytes.
const STATES_KEPT: usize = 6;

/// Removes all but the newest `STATES_KEPT - 1` state files of `dir` other than `wanted`,
/// making room for it.
fn prune_states(dir: &Path, wanted: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut states: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "kv") && e.path() != wanted)
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, e.path()))
        })
        .collect();
    states.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (_, path) in states.into_iter().skip(STATES_KEPT - 1) {
        let _ = std::fs::remove_file(path);
    }
}
