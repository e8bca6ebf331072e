//! The model's thread: the KV cache, the decode loop, and sampling.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use super::greedy::Greedy;
use super::lock;
use super::prefill::PrefillCost;
use crate::llm::engine::{
    GenerationEvent, GenerationSink, LlmError, PromptSegment, StopReason, Usage, WarmStart,
};
use crate::llm::grammar::GrammarError;
use crate::llm::stream::{StopMatcher, Utf8Stream};

/// A grammar, compiled for one generation.
pub(super) enum Constraint {
    Gbnf(LlamaSampler),
    Guidance(Box<llguidance::Matcher>),
}

pub(super) enum Command {
    Generate(Box<Job>),
    ClearCache(std_mpsc::Sender<()>),
    CachedTokens(std_mpsc::Sender<usize>),
    /// Bring the KV state of a prefix from its file, or evaluate it and write the file (see
    /// `LanguageModel::warm_start`).
    Warm {
        tokens: Vec<LlamaToken>,
        file: PathBuf,
        reply: std_mpsc::Sender<Result<WarmStart, LlmError>>,
    },
}

/// What the KV cache holds after a generation, as the handle needs it to tokenize the next
/// prompt: the prompt's segments and tokens, then each generated token that was decoded, with
/// its text. A next prompt that replays the output is then tokenized as the model wrote it, so
/// the cache is reused through the output too (tokenizing the text anew often splits it
/// differently than the sampled tokens did).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct LastSequence {
    pub(super) segments: Vec<PromptSegment>,
    pub(super) prompt: Vec<LlamaToken>,
    pub(super) generated: Vec<(LlamaToken, Vec<u8>)>,
}

/// Shared between the handle and the model's thread; `None` while the cache is changing or
/// unknown.
pub(super) type SharedSequence = Arc<Mutex<Option<LastSequence>>>;

pub(super) struct Job {
    pub(super) segments: Vec<PromptSegment>,
    pub(super) tokens: Vec<LlamaToken>,
    pub(super) chain: LlamaSampler,
    /// The chain's choice made from the logits directly, where the chain is greedy.
    pub(super) greedy: Option<Greedy>,
    pub(super) constraint: Option<Constraint>,
    pub(super) stop: Vec<String>,
    pub(super) max_tokens: Option<usize>,
    pub(super) sink: GenerationSink,
    pub(super) started: Instant,
    /// How long the request took to prepare (see `Usage::setup_ms`).
    pub(super) setup_ms: f64,
    /// Whether a short prefill may re-evaluate cached tokens to reach the faster attention
    /// kernel (see `prefill`).
    pub(super) pad_prefill: bool,
}

/// The model's thread: owns the context and the record of which tokens its KV cache holds.
pub(super) struct Worker<'m> {
    ctx: LlamaContext<'m>,
    model: &'m LlamaModel,
    /// Tokens whose KV entries are in the context, in order. A request that starts with the
    /// same tokens evaluates only the rest.
    cached: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    n_batch: usize,
    prefill_cost: Option<PrefillCost>,
    /// Reused candidate buffer (one entry per vocabulary token).
    candidates: Vec<LlamaTokenData>,
    last: SharedSequence,
}

impl<'m> Worker<'m> {
    pub(super) fn new(
        ctx: LlamaContext<'m>,
        model: &'m LlamaModel,
        n_batch: usize,
        prefill_cost: Option<PrefillCost>,
        last: SharedSequence,
    ) -> Self {
        Worker {
            ctx,
            model,
            cached: Vec::new(),
            batch: LlamaBatch::new(n_batch, 1),
            n_batch,
            prefill_cost,
            candidates: Vec::new(),
            last,
        }
    }

    pub(super) fn serve(mut self, commands: std_mpsc::Receiver<Command>, closing: &AtomicBool) {
        while let Ok(cmd) = commands.recv() {
            let job = match cmd {
                Command::Generate(job) => *job,
                Command::ClearCache(done) => {
                    self.reset();
                    let _ = done.send(());
                    continue;
                }
                Command::CachedTokens(reply) => {
                    let _ = reply.send(self.cached.len());
                    continue;
                }
                Command::Warm {
                    tokens,
                    file,
                    reply,
                } => {
                    let _ = reply.send(self.warm(tokens, &file));
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
        *lock(&self.last) = None;
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
        // The cache is about to change: until this generation has ended well, the handle
        // tokenizes from scratch.
        *lock(&self.last) = None;
        let Job {
            segments,
            tokens,
            mut chain,
            mut greedy,
            mut constraint,
            stop,
            max_tokens,
            sink,
            started,
            setup_ms,
            pad_prefill,
        } = job;
        let n_ctx = self.ctx.n_ctx() as usize;
        let mut usage = Usage {
            prompt_tokens: tokens.len(),
            setup_ms,
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
        let mut common = self.common_prefix(&tokens).min(tokens.len() - 1);
        if pad_prefill {
            if let Some(cost) = &self.prefill_cost {
                common = cost.start(common, tokens.len());
            }
        }
        let common = self.keep_first(common);
        usage.cached_tokens = common;

        let prefill_start = Instant::now();
        let evaluated = self.evaluate(&tokens, true, &|| sink.is_cancelled());
        // A GPU computes the last batch after `decode` returns: without waiting for it, the
        // prefill time ended early and its speed read 1.2-1.7x llama-bench's on an H200.
        self.ctx.synchronize();
        usage.prefill_ms = ms(prefill_start);
        match evaluated {
            Ok(true) => {}
            Ok(false) => return (usage, Ok(StopReason::Cancelled)),
            Err(e) => return (usage, Err(e)),
        }
        // The row of the last prompt token, the only one decoded with logits.
        let mut logits_row = self.batch.n_tokens() - 1;

        let mut utf8 = Utf8Stream::default();
        let mut stops = StopMatcher::new(&stop);
        let mut decode_start: Option<Instant> = None;
        let mut piece = Vec::new();
        let mut generated: Vec<(LlamaToken, Vec<u8>)> = Vec::new();
        let reason = 'decode: loop {
            if sink.is_cancelled() {
                break StopReason::Cancelled;
            }
            let (token, grammar_done) =
                match self.sample(logits_row, &mut chain, greedy.as_mut(), constraint.as_mut()) {
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
            // The tokens this round decodes: the sampled one, then those the grammar forces
            // after it, evaluated in one batch as a prefill is instead of a decode each.
            let room = [
                max_tokens.map_or(usize::MAX, |m| m.saturating_sub(usage.generated_tokens + 1)),
                n_ctx.saturating_sub(self.cached.len() + 1),
                self.n_batch.saturating_sub(1),
            ]
            .into_iter()
            .min()
            .unwrap_or(0);
            let mut round = vec![token];
            let mut grammar_done = grammar_done;
            if let (false, Some(Constraint::Guidance(m))) = (grammar_done, constraint.as_mut()) {
                let forced = match self.forced(m, room) {
                    Ok(f) => f,
                    Err(e) => {
                        usage.decode_ms = decode_start.map(ms).unwrap_or(0.0);
                        return (usage, Err(e));
                    }
                };
                for &t in &forced {
                    accept(&mut chain, greedy.as_mut(), t);
                }
                grammar_done = m.is_stopped();
                usage.forced_tokens += forced.len();
                round.extend(forced);
            }
            let mut pieces = Vec::with_capacity(round.len());
            for &t in &round {
                usage.generated_tokens += 1;
                piece.clear();
                self.model
                    .vocab()
                    .token_to_piece_into(t, &mut piece, false, None);
                let step = stops.push(&utf8.push(&piece));
                pieces.push(piece.clone());
                if !step.emit.is_empty() && !sink.send(GenerationEvent::Token(step.emit)) {
                    break 'decode StopReason::Cancelled;
                }
                if step.stopped.is_some() {
                    break 'decode StopReason::StopString;
                }
            }
            if grammar_done {
                break StopReason::EndOfTurn;
            }
            if max_tokens.is_some_and(|m| usage.generated_tokens >= m) {
                break StopReason::MaxTokens;
            }
            if self.cached.len() + round.len() > n_ctx {
                break StopReason::ContextFull;
            }
            self.batch.clear();
            let last = round.len() - 1;
            for (i, &t) in round.iter().enumerate() {
                if let Err(e) = self
                    .batch
                    .add(t, (self.cached.len() + i) as i32, &[0], i == last)
                {
                    return (
                        usage,
                        Err(LlmError::Decode {
                            reason: e.to_string(),
                        }),
                    );
                }
            }
            if let Err(e) = self.decode_batch() {
                usage.decode_ms = decode_start.map(ms).unwrap_or(0.0);
                return (usage, Err(e));
            }
            self.cached.extend_from_slice(&round);
            generated.extend(round.into_iter().zip(pieces));
            logits_row = last as i32;
        };
        if self.cached.len() == tokens.len() + generated.len() {
            *lock(&self.last) = Some(LastSequence {
                segments,
                prompt: tokens,
                generated,
            });
        }
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

    /// The tokens the grammar forces next, consumed by `m`: at most `room`, none unless at
    /// least two are forced. The forced text is tokenized as plain text (it may quote the
    /// workspace) and its last token is left to the model, which may join it to what follows.
    fn forced(
        &self,
        m: &mut llguidance::Matcher,
        room: usize,
    ) -> Result<Vec<LlamaToken>, LlmError> {
        if room == 0 {
            return Ok(Vec::new());
        }
        let bytes = m.compute_ff_bytes();
        if bytes.len() < 2 {
            return Ok(Vec::new());
        }
        let whole = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) => e.valid_up_to(),
        };
        let mut tokens = self.model.vocab().tokenize(&bytes[..whole], false, false);
        tokens.pop();
        tokens.truncate(room);
        let ids: Vec<u32> = tokens.iter().map(|t| t.0 as u32).collect();
        // Only what the grammar takes: a tokenizer that adds a space in front, say, is refused
        // at its first token.
        let taken = m.try_consume_tokens(&ids).map_err(|e| {
            LlmError::Grammar(GrammarError::Constraint {
                reason: e.to_string(),
            })
        })?;
        tokens.truncate(taken);
        Ok(tokens)
    }

    /// How many of `tokens` the cache holds already, from the start.
    fn common_prefix(&self, tokens: &[LlamaToken]) -> usize {
        self.cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Drops the cache past its first `n` tokens; returns how many it keeps (none for a
    /// recurrent model, which cannot drop part of its state and starts over).
    fn keep_first(&mut self, n: usize) -> usize {
        if n < self.cached.len() {
            match self.ctx.clear_kv_cache_seq(Some(0), Some(n as u32), None) {
                Ok(true) => self.cached.truncate(n),
                _ => self.reset(),
            }
        }
        self.cached.len()
    }

    /// Evaluates what of `tokens` the cache lacks past what it holds (`cached` is a prefix of
    /// them), in batches, with the last token's logits when `logits`. `false` when cancelled
    /// between batches.
    fn evaluate(
        &mut self,
        tokens: &[LlamaToken],
        logits: bool,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<bool, LlmError> {
        let last = tokens.len().saturating_sub(1);
        let mut pos = self.cached.len();
        while pos < tokens.len() {
            if cancelled() {
                return Ok(false);
            }
            let end = (pos + self.n_batch).min(tokens.len());
            self.batch.clear();
            for (i, &tok) in tokens[pos..end].iter().enumerate() {
                let p = pos + i;
                self.batch
                    .add(tok, p as i32, &[0], logits && p == last)
                    .map_err(|e| LlmError::Decode {
                        reason: e.to_string(),
                    })?;
            }
            self.decode_batch()?;
            self.cached.extend_from_slice(&tokens[pos..end]);
            pos = end;
        }
        Ok(true)
    }

    /// The KV state of `tokens` from `file` when it holds exactly them; else evaluated and
    /// written there (to a temporary file renamed into place, so a crash leaves no half
    /// state). A file that does not load (another llama.cpp, a truncated write) is replaced.
    fn warm(&mut self, tokens: Vec<LlamaToken>, file: &Path) -> Result<WarmStart, LlmError> {
        if self.cached.starts_with(&tokens) {
            return Ok(WarmStart::InMemory {
                tokens: tokens.len(),
            });
        }
        let started = Instant::now();
        *lock(&self.last) = None;
        if file.is_file() {
            // Loading replaces the whole state.
            self.reset();
            match self.ctx.state_load_file(file, self.ctx.n_ctx() as usize) {
                Ok(loaded) if loaded == tokens => {
                    self.cached = loaded;
                    return Ok(WarmStart::Loaded {
                        tokens: tokens.len(),
                        ms: ms(started),
                    });
                }
                Ok(_) => self.reset(),
                Err(e) => {
                    tracing::warn!("{}: the saved state does not load: {e}", file.display());
                    self.reset();
                }
            }
        }
        self.keep_first(self.common_prefix(&tokens));
        self.evaluate(&tokens, false, &|| false)?;
        let tmp = file.with_extension("kv.part");
        let written = file
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                self.ctx
                    .state_save_file(&tmp, &tokens)
                    .map_err(|e| e.to_string())
            })
            .and_then(|()| std::fs::rename(&tmp, file).map_err(|e| e.to_string()));
        Ok(match written {
            Ok(()) => WarmStart::Saved {
                tokens: tokens.len(),
                ms: ms(started),
            },
            Err(reason) => {
                let _ = std::fs::remove_file(&tmp);
                WarmStart::NotSaved {
                    tokens: tokens.len(),
                    reason: format!("{}: {reason}", file.display()),
                }
            }
        })
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
        mut greedy: Option<&mut Greedy>,
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
        let mut cur = LlamaTokenDataArray::new(std::mem::take(&mut self.candidates), false);
        let mut token = match greedy.as_deref_mut() {
            Some(g) => Some(g.pick(logits)),
            None => {
                fill(&mut cur.data);
                chain.apply(&mut cur);
                cur.selected_token()
            }
        };
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
                    if let Some(g) = greedy.as_deref_mut() {
                        token = g.pick_allowed(logits, mask.as_slice());
                    } else {
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
        accept(chain, greedy, token);
        Ok((token, done))
    }
}

/// A token chosen or forced: the sampler chain and its greedy mirror both see it, so their
/// repetition windows stay the same.
fn accept(chain: &mut LlamaSampler, greedy: Option<&mut Greedy>, token: LlamaToken) {
    chain.accept(token);
    if let Some(g) = greedy {
        g.accept(token);
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
