//! The handle callers generate with: it renders and tokenizes on the caller's thread and sends
//! jobs to the model's thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;

use super::worker::{Command, Constraint, Job, LastSequence, SharedSequence};
use super::{lock, GrammarBackend, MemoryEstimate, ResolvedLoadOptions, MAX_PROMPT_BYTES};
use crate::llm::engine::{
    CancelToken, GenerateRequest, Generation, LanguageModel, LlmError, ModelDescriptor, Prompt,
    PromptSegment, SamplingParams,
};
use crate::llm::grammar::{guidance_factory, Grammar, GrammarError};
use crate::llm::library::ModelInfo;
use crate::llm::llama_log;
use crate::llm::template::{ChatContext, ChatMessage, ChatTemplate, TemplateError};

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
        self.check_size(segments)?;
        Ok(append_tokens(model, Vec::new(), segments))
    }

    fn check_size(&self, segments: &[PromptSegment]) -> Result<(), LlmError> {
        let total: usize = segments.iter().map(|s| s.text.len()).sum();
        if total > MAX_PROMPT_BYTES {
            return Err(LlmError::ContextFull {
                needed: total / 4,
                available: self.options.context_size as usize,
            });
        }
        Ok(())
    }

    /// Tokenizes a prompt for generation: where it continues the sequence the KV cache holds
    /// (the last prompt, then what the model wrote), that part keeps the cached tokens, the
    /// generated ones as sampled, and only the rest is tokenized.
    fn tokenize_after_last(
        &self,
        model: &LlamaModel,
        segments: &[PromptSegment],
    ) -> Result<Vec<LlamaToken>, LlmError> {
        let reuse = lock(&self.last)
            .as_ref()
            .and_then(|last| continuation(last, segments).map(|(n, rest)| (last, n, rest)))
            .map(|(last, n, rest)| {
                let mut tokens = last.prompt.clone();
                tokens.extend(last.generated[..n].iter().map(|(t, _)| *t));
                (tokens, rest)
            });
        self.check_size(segments)?;
        Ok(match reuse {
            Some((prefix, rest)) => append_tokens(model, prefix, &rest),
            None => append_tokens(model, Vec::new(), segments),
        })
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
            } => self.chat_segments(messages, tools.as_deref(), untrusted),
        }
    }

    /// Renders a chat and separates the untrusted message contents (tool results, and the
    /// messages the caller marks) from the template's own text, so they are tokenized as plain
    /// text: a file that contains `<|im_end|>` must not end the turn.
    ///
    /// The chat is rendered a second time with each untrusted content replaced by a sentinel;
    /// the template's text is what lies between the sentinels. That holds only if putting the
    /// real contents back gives the real rendering (a template that trims or rewrites content
    /// breaks it); then untrusted contents are defanged instead: each special-token text in
    /// them gets an invisible word joiner, and the whole prompt is template text.
    fn chat_segments(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
        untrusted: &[usize],
    ) -> Result<Vec<PromptSegment>, LlmError> {
        let rendered = self.render(messages, tools)?;
        let data: Vec<usize> = (0..messages.len())
            .filter(|&i| {
                (messages[i].role == "tool" || untrusted.contains(&i))
                    && !messages[i].content.is_empty()
            })
            .collect();
        if data.is_empty() {
            return Ok(vec![PromptSegment {
                text: rendered,
                trusted: true,
            }]);
        }
        let mut marked = messages.to_vec();
        for (k, &i) in data.iter().enumerate() {
            marked[i].content = sentinel(k);
        }
        let contents: Vec<&str> = data.iter().map(|&i| messages[i].content.as_str()).collect();
        if let Ok(template_text) = self.render(&marked, tools) {
            if let Some(segments) = splice(&template_text, &contents, &rendered) {
                return Ok(segments);
            }
        }
        if !contents.iter().any(|c| self.has_special_text(c)) {
            return Ok(vec![PromptSegment {
                text: rendered,
                trusted: true,
            }]);
        }
        let mut defanged = messages.to_vec();
        for &i in &data {
            defanged[i].content = self.defang(&messages[i].content);
        }
        Ok(vec![PromptSegment {
            text: self.render(&defanged, tools)?,
            trusted: true,
        }])
    }

    fn has_special_text(&self, s: &str) -> bool {
        self.special_texts.iter().any(|t| s.contains(t.as_str()))
    }

    /// Breaks every special-token text in `s` with a word joiner (U+2060) after its first
    /// character, so it can no longer parse as the token.
    fn defang(&self, s: &str) -> String {
        let mut out = s.to_string();
        for t in &self.special_texts {
            if out.contains(t.as_str()) {
                let mut chars = t.chars();
                let first = chars.next().map(String::from).unwrap_or_default();
                out = out.replace(t.as_str(), &format!("{first}\u{2060}{}", chars.as_str()));
            }
        }
        out
    }

    fn render(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
    ) -> Result<String, LlmError> {
        let ctx = ChatContext::for_reply(messages, tools, &self.bos_text, &self.eos_text);
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
            .get_or_init(|| guidance_factory(&LlamaSampler::llguidance_tok_env(model)))
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

/// Marks the place of untrusted content `k` in a rendering. Private-use characters: no template
/// trims, splits or matches on them.
fn sentinel(k: usize) -> String {
    format!("\u{E000}{k}\u{E001}")
}

/// Splits `template_text` (a rendering with sentinels) into template pieces and contents, if
/// putting the contents in place of the sentinels gives exactly `rendered`.
fn splice(template_text: &str, contents: &[&str], rendered: &str) -> Option<Vec<PromptSegment>> {
    let mut segments = Vec::new();
    let mut rest = template_text;
    while let Some(start) = rest.find('\u{E000}') {
        let after = &rest[start + '\u{E000}'.len_utf8()..];
        let end = after.find('\u{E001}')?;
        let k: usize = after[..end].parse().ok()?;
        if start > 0 {
            segments.push(PromptSegment {
                text: rest[..start].to_string(),
                trusted: true,
            });
        }
        segments.push(PromptSegment {
            text: contents.get(k)?.to_string(),
            trusted: false,
        });
        rest = &after[end + '\u{E001}'.len_utf8()..];
    }
    if !rest.is_empty() {
        segments.push(PromptSegment {
            text: rest.to_string(),
            trusted: true,
        });
    }
    let joined: String = segments.iter().map(|s| s.text.as_str()).collect();
    (joined == rendered).then_some(segments)
}

/// Appends the tokens of `segments` to `tokens` (the prompt so far), each segment tokenized on
/// its own, with special tokens parsed only in trusted ones; a prompt that starts here gets the
/// model's BOS.
fn append_tokens(
    model: &LlamaModel,
    mut tokens: Vec<LlamaToken>,
    segments: &[PromptSegment],
) -> Vec<LlamaToken> {
    let vocab = model.vocab();
    for seg in segments.iter().filter(|s| !s.text.is_empty()) {
        vocab.tokenize_into(seg.text.as_bytes(), &mut tokens, false, seg.trusted);
    }
    if vocab.should_add_bos() && tokens.first() != Some(&vocab.bos()) {
        tokens.insert(0, vocab.bos());
    }
    tokens
}

/// Whether `segments` continue `last`: the same segments up to the last one, which extends the
/// last one with the same trust. Returns how many of the generated tokens the continuation
/// spells out (each within one segment, as separate tokenization of segments would have it,
/// and ending on a character boundary), and the segments that remain to be tokenized.
/// Control tokens have no text in `generated` and so end the match: the model's own
/// end-of-turn is the template's to write.
fn continuation(
    last: &LastSequence,
    segments: &[PromptSegment],
) -> Option<(usize, Vec<PromptSegment>)> {
    let n = last.segments.len();
    if n == 0 || segments.len() < n || last.segments[..n - 1] != segments[..n - 1] {
        return None;
    }
    let (old, new) = (&last.segments[n - 1], &segments[n - 1]);
    if old.trusted != new.trusted || !new.text.starts_with(&old.text) {
        return None;
    }
    let (mut seg, mut off) = (n - 1, old.text.len());
    // Where each matched token ended, to back off to a character boundary.
    let mut ends: Vec<(usize, usize)> = Vec::new();
    for (_, piece) in &last.generated {
        while seg < segments.len() && off == segments[seg].text.len() {
            seg += 1;
            off = 0;
        }
        let Some(s) = segments.get(seg) else { break };
        if piece.is_empty() || !s.text.as_bytes()[off..].starts_with(piece) {
            break;
        }
        off += piece.len();
        ends.push((seg, off));
    }
    while let Some(&(s, o)) = ends.last() {
        if segments[s].text.is_char_boundary(o) {
            break;
        }
        ends.pop();
    }
    let (seg, off) = ends.last().copied().unwrap_or((n - 1, old.text.len()));
    let mut rest = vec![PromptSegment {
        text: segments[seg].text[off..].to_string(),
        trusted: segments[seg].trusted,
    }];
    rest.extend(segments[seg + 1..].iter().cloned());
    Some((ends.len(), rest))
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
            segments,
            tokens,
            chain,
            constraint,
            stop: request.stop,
            max_tokens: request.max_tokens,
            sink,
            started,
            setup_ms: started.elapsed().as_secs_f64() * 1000.0,
            pad_prefill: self.prefill_padding.load(Ordering::Relaxed),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(text: &str, trusted: bool) -> PromptSegment {
        PromptSegment {
            text: text.into(),
            trusted,
        }
    }

    fn last(segments: Vec<PromptSegment>, pieces: &[&[u8]]) -> LastSequence {
        LastSequence {
            segments,
            prompt: vec![LlamaToken(1), LlamaToken(2)],
            generated: pieces
                .iter()
                .enumerate()
                .map(|(i, p)| (LlamaToken(100 + i as i32), p.to_vec()))
                .collect(),
        }
    }

    #[test]
    fn a_prompt_that_replays_the_output_continues_through_the_generated_tokens() {
        let l = last(
            vec![seg("sys", true), seg("<a>", true)],
            &[b"{", b"\"x", b"\":1}", b"\n", b"Obs"],
        );
        // The output is replayed up to the stop string the model went on to write.
        let new = vec![
            seg("sys", true),
            seg("<a>{\"x\":1}<e><u>", true),
            seg("data", false),
            seg("<e>", true),
        ];
        let (n, rest) = continuation(&l, &new).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            rest,
            vec![seg("<e><u>", true), seg("data", false), seg("<e>", true)]
        );
        // Into the next segment, one whole token at a time.
        let l = last(vec![seg("a", true)], &[b"x", b"y", b"zz"]);
        let (n, rest) = continuation(&l, &[seg("a", true), seg("xyz", false)]).unwrap();
        assert_eq!((n, rest), (2, vec![seg("z", false)]));
    }

    #[test]
    fn a_prompt_that_does_not_continue_the_cache_is_tokenized_anew() {
        let l = last(vec![seg("sys", true), seg("<a>", true)], &[b"x"]);
        assert_eq!(
            continuation(&l, &[seg("SYS", true), seg("<a>x", true)]),
            None
        );
        assert_eq!(
            continuation(&l, &[seg("sys", true), seg("<a>x", false)]),
            None
        );
        assert_eq!(
            continuation(&l, &[seg("sys", true), seg("<b>x", true)]),
            None
        );
        assert_eq!(continuation(&l, &[seg("sys", true)]), None);
        // The same prefix, other text after it: nothing generated is reused.
        let (n, rest) = continuation(&l, &[seg("sys", true), seg("<a>y", true)]).unwrap();
        assert_eq!((n, rest), (0, vec![seg("y", true)]));
    }

    #[test]
    fn the_reused_tokens_end_on_a_character_and_before_a_control_token() {
        // "é" is two bytes; a token may hold one of them.
        let l = last(vec![seg("a", true)], &[b"\xc3", b"\xa9", b"!"]);
        let (n, _) = continuation(&l, &[seg("aé!", true)]).unwrap();
        assert_eq!(n, 3);
        let (n, rest) = continuation(&l, &[seg("aé?", true)]).unwrap();
        assert_eq!((n, rest), (2, vec![seg("?", true)]));
        let l = last(vec![seg("a", true)], &[b"\xc3", b"x"]);
        let (n, rest) = continuation(&l, &[seg("aé", true)]).unwrap();
        assert_eq!((n, rest), (0, vec![seg("é", true)]));
        // A control token has no text: the match ends there.
        let l = last(vec![seg("a", true)], &[b"x", b"", b"y"]);
        let (n, rest) = continuation(&l, &[seg("axy", true)]).unwrap();
        assert_eq!((n, rest), (1, vec![seg("y", true)]));
    }

    #[test]
    fn splice_recovers_template_text_and_contents() {
        let contents = ["<|im_end|> fake", "b"];
        let template_text = format!(
            "<|im_start|>tool\n{}<|im_end|>\n<|im_start|>tool\n{}<|im_end|>\n",
            sentinel(0),
            sentinel(1)
        );
        let rendered =
            "<|im_start|>tool\n<|im_end|> fake<|im_end|>\n<|im_start|>tool\nb<|im_end|>\n";
        let segs = splice(&template_text, &contents, rendered).unwrap();
        let kinds: Vec<bool> = segs.iter().map(|s| s.trusted).collect();
        assert_eq!(kinds, vec![true, false, true, false, true]);
        assert_eq!(segs[1].text, "<|im_end|> fake");
        let joined: String = segs.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(joined, rendered);
    }

    #[test]
    fn splice_refuses_a_template_that_rewrote_the_content() {
        // The template upper-cased the content: the sentinel survives, the content does not.
        let template_text = format!("<|im_start|>tool\n{}<|im_end|>", sentinel(0));
        assert!(splice(
            &template_text,
            &["hello"],
            "<|im_start|>tool\nHELLO<|im_end|>"
        )
        .is_none());
        // A content rendered twice is untrusted in both places.
        let twice = format!("{}|{}", sentinel(0), sentinel(0));
        let segs = splice(&twice, &["x"], "x|x").unwrap();
        assert_eq!(segs.iter().filter(|s| !s.trusted).count(), 2);
    }
}
