//! Sentence embeddings with llama.cpp: a BERT-family GGUF (all-MiniLM-L6-v2 by default, or any
//! embedding model the user has) turns texts into unit vectors whose dot product is their
//! cosine similarity. Texts are packed several to a batch; one longer than the model's window
//! is split into windows whose vectors are averaged, never cut and never passed to llama.cpp
//! whole (a non-causal model aborts the process on a sequence longer than its batch).

pub mod prompts;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::gguf::{GgufError, GgufHeader};
use super::llama::backend;
use super::{arch, llama_log};
use crate::llm::engine::LlmError;
pub use prompts::Prompts;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("{}: not an embedding model: {reason}", path.display())]
    NotEmbedding { path: PathBuf, reason: String },
    #[error("{}: llama.cpp could not load the embedding model: {reason}", path.display())]
    Load { path: PathBuf, reason: String },
    #[error(transparent)]
    Engine(#[from] LlmError),
    #[error("llama.cpp failed to embed: {0}")]
    Embed(String),
    #[error("{0} threads is more than any machine has (at most {max})", max = super::llama::MAX_THREADS)]
    Threads(u32),
}

/// llama.cpp's `LLAMA_POOLING_TYPE_LAST`: the vector of a text's last token.
const LAST_POOLING: u64 = 3;
/// llama.cpp's `LLAMA_POOLING_TYPE_RANK`: a reranker's one score per pair.
const RANK_POOLING: u64 = 4;

/// Where a converted model keeps the window sentence-transformers reads it in.
pub const WINDOW_KEY: &str = "sentence_transformers.max_seq_length";

/// Sequences in one batch: llama.cpp allows 256; more than a few dozen short texts per batch
/// buys nothing on a CPU.
const MAX_SEQS: usize = 64;

/// Whether the GGUF at `path` is an embedding model llama.cpp can run, checked from its header
/// alone: the architecture is a pooled encoder, or it names a pooling type.
pub fn check_embedding_model(path: &Path) -> Result<GgufHeader, EmbedError> {
    let header = GgufHeader::read(path)?;
    let arch_name = header.architecture().unwrap_or("").to_string();
    let not = |reason: String| EmbedError::NotEmbedding {
        path: path.to_path_buf(),
        reason,
    };
    if !arch::is_supported(&arch_name) {
        return Err(not(format!(
            "architecture {arch_name:?} is not one this build of llama.cpp runs"
        )));
    }
    let pooling = header.arch_u64("pooling_type");
    if !arch::is_embedding(&arch_name) && pooling.is_none() {
        return Err(not(format!(
            "architecture {arch_name:?} is a language model, with no pooling: choose an \
             embedding model such as all-MiniLM-L6-v2"
        )));
    }
    if pooling == Some(0) {
        return Err(not("its pooling type is none (one vector per token)".into()));
    }
    if pooling == Some(RANK_POOLING) {
        return Err(not(
            "it is a reranker (pooling type rank): it scores a query and a text together, \
             it does not embed"
                .into(),
        ));
    }
    Ok(header)
}

/// A loaded embedding model.
pub struct EmbeddingModel {
    path: PathBuf,
    model: LlamaModel,
    /// Tokens a sequence may have: the model's trained window.
    max_tokens: usize,
    dimension: usize,
    /// What the model's tokenizer puts around a text (BERT: `[CLS]` and `[SEP]`), for windows.
    prefix: Vec<LlamaToken>,
    suffix: Vec<LlamaToken>,
    threads: i32,
    /// What the model is given before a query and a document (`prompts::detect`).
    prompts: Prompts,
    /// The token put after every text where its tokenizer leaves it out (`load`).
    end: Option<LlamaToken>,
}

impl std::fmt::Debug for EmbeddingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingModel")
            .field("path", &self.path)
            .field("dimension", &self.dimension)
            .field("max_tokens", &self.max_tokens)
            .field("end", &self.end)
            .finish()
    }
}

impl EmbeddingModel {
    /// Loads the embedding model at `path` on the CPU with `threads` threads.
    pub fn load(path: &Path, threads: u32) -> Result<Self, EmbedError> {
        if threads > super::llama::MAX_THREADS {
            return Err(EmbedError::Threads(threads));
        }
        let header = check_embedding_model(path)?;
        let backend = backend()?;
        let mark = llama_log::mark();
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| EmbedError::Load {
                path: path.to_path_buf(),
                reason: llama_log::reason_since(mark, &e.to_string()),
            })?;
        let dimension = usize::try_from(model.n_embd_out()).unwrap_or(0);
        // The window the model was trained to read (sentence-transformers' max_seq_length,
        // which the converter keeps), else all of its positions.
        let trained = header
            .get_u64(WINDOW_KEY)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX);
        let max_tokens = (model.n_ctx_train() as usize).min(trained);
        if dimension == 0 || max_tokens < 4 {
            return Err(EmbedError::NotEmbedding {
                path: path.to_path_buf(),
                reason: format!("{dimension} dimensions, a window of {max_tokens} tokens"),
            });
        }
        let (prefix, mut suffix) = {
            let vocab = model.vocab();
            let with = vocab.tokenize(b"a", true, false);
            let bare = vocab.tokenize(b"a", false, false);
            match with.windows(bare.len().max(1)).position(|w| w == bare) {
                Some(at) if !bare.is_empty() => {
                    (with[..at].to_vec(), with[at + bare.len()..].to_vec())
                }
                _ => (Vec::new(), Vec::new()),
            }
        };
        // A model pooled from its last token was trained with the end-of-text token after each
        // text (Qwen3-Embedding's card: append `<|endoftext|>`, as its sentence-transformers
        // tokenizer does); files converted before llama.cpp wrote `add_eos_token` for it leave
        // it out, and each vector is then of the text's last word.
        let eos = model.vocab().eos();
        let end = (header.arch_u64("pooling_type") == Some(LAST_POOLING)
            && eos.0 >= 0
            && suffix.last() != Some(&eos))
        .then_some(eos);
        suffix.extend(end);
        Ok(EmbeddingModel {
            path: path.to_path_buf(),
            model,
            max_tokens,
            dimension,
            prefix,
            suffix,
            threads: threads.max(1) as i32,
            prompts: prompts::detect(&header),
            end,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// What the model is given before a query and before a document, for retrieval. The
    /// vectors `embed` returns are of the texts as given: callers add these.
    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// The most tokens one window holds, its special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The text's tokens as the model reads them, special tokens included. A text's own
    /// `[CLS]` or `<|im_end|>` is text: special tokens are never parsed from it.
    pub fn tokens(&self, text: &str) -> Vec<i32> {
        self.tokenize(text).into_iter().map(|t| t.0).collect()
    }

    fn tokenize(&self, text: &str) -> Vec<LlamaToken> {
        let mut tokens = self.model.vocab().tokenize(text.as_bytes(), true, false);
        tokens.extend(self.end);
        tokens
    }

    /// The windows `text` is read in, each of `limit` tokens at most (the model's window at
    /// most): the whole of it when it fits, else consecutive pieces of its tokens, each between
    /// the model's own special tokens.
    fn windows(&self, text: &str, limit: usize) -> Vec<Vec<LlamaToken>> {
        let limit = limit.min(self.max_tokens);
        let whole = self.tokenize(text);
        if whole.len() <= limit {
            return vec![whole];
        }
        let bare = self.model.vocab().tokenize(text.as_bytes(), false, false);
        if bare.is_empty() {
            // The model's own tokens alone (an empty text): a window shorter than they are
            // would leave it none, and a zero vector.
            return vec![whole];
        }
        let room = limit
            .saturating_sub(self.prefix.len() + self.suffix.len())
            .max(1);
        bare.chunks(room)
            .map(|c| [self.prefix.as_slice(), c, self.suffix.as_slice()].concat())
            .collect()
    }

    /// A session that reads texts in windows of at most `window` tokens (the model's own at
    /// most), packing up to `batch_tokens` tokens into each batch (a longer window alone).
    pub fn session(
        &self,
        window: usize,
        batch_tokens: usize,
    ) -> Result<EmbedSession<'_>, EmbedError> {
        self.session_with_threads(window, batch_tokens, self.threads)
    }

    /// A session on `threads` threads rather than the model's own (a query's, beside a
    /// pass that embeds the workspace).
    pub fn session_with_threads(
        &self,
        window: usize,
        batch_tokens: usize,
        threads: i32,
    ) -> Result<EmbedSession<'_>, EmbedError> {
        let threads = threads.max(1);
        // The context holds one window whole (a non-causal model must see a sequence in one
        // micro-batch), and no more than the windows it is given need: sized by the model's
        // trained window instead, a model trained on 8,192 tokens took 1.3 GB and twice the
        // time to embed units read from their first 256 (llama.cpp reserves for the largest
        // micro-batch, and attention spans all of it).
        let window = window.clamp(1, self.max_tokens);
        let pack = batch_tokens.max(1);
        // llama.cpp aborts making a context smaller than the sequences it may hold.
        let batch = pack.max(window).max(MAX_SEQS);
        let n = u32::try_from(batch).unwrap_or(u32::MAX);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n))
            .with_n_batch(n)
            // A non-causal model must see a whole sequence in one micro-batch.
            .with_n_ubatch(n)
            .with_n_seq_max(MAX_SEQS as u32)
            // A decoder pooled into a vector (Qwen3-Embedding) keeps a KV cache: one shared by
            // the batch's sequences holds any mix of them up to the context. Split per sequence,
            // each got the context over 64 (at least 256 cells), and a text longer than that
            // failed ("find_slot: n_tokens = 3602 > size = 256").
            .with_kv_unified(true)
            .with_embeddings(true)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let mark = llama_log::mark();
        let ctx = self
            .model
            .new_context(backend()?, params)
            .map_err(|e| EmbedError::Load {
                path: self.path.clone(),
                reason: llama_log::reason_since(mark, &e.to_string()),
            })?;
        Ok(EmbedSession {
            model: self,
            ctx,
            window,
            pack,
            batch,
        })
    }

    /// Embeds `texts` whole (in the model's windows) in one session of the default batch size,
    /// sized for the longest of them.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Tokenized once: the windows size the session, then fill its batches.
        let windows = self.windows_of(texts, usize::MAX, usize::MAX);
        let longest = windows.iter().map(|(_, w)| w.len()).max().unwrap_or(1);
        let mut session = self.session(longest, DEFAULT_BATCH_TOKENS)?;
        let vectors = session.embed_prepared(&windows, texts.len())?;
        session.all_numbers(vectors)
    }

    /// The windows of `limit` tokens (the model's at most) that `texts` are read in, the first
    /// `per_text` of each, with the index of the text each belongs to.
    fn windows_of(
        &self,
        texts: &[&str],
        limit: usize,
        per_text: usize,
    ) -> Vec<(usize, Vec<LlamaToken>)> {
        texts
            .iter()
            .enumerate()
            .flat_map(|(i, text)| {
                self.windows(text, limit)
                    .into_iter()
                    .take(per_text)
                    .map(move |w| (i, w))
            })
            .collect()
    }
}

/// Tokens per batch by default: several short texts, or two full windows. A non-causal model
/// attends across the whole micro-batch (llama.cpp masks what is not a sequence's own), so the
/// cost grows with its square: 96 real units embedded at 3,300-3,600 tokens/s in batches of
/// 256-512 tokens against 2,000 in batches of 2,048 (2 threads, this machine).
pub const DEFAULT_BATCH_TOKENS: usize = 512;

/// A context for embedding, reused from batch to batch.
pub struct EmbedSession<'m> {
    model: &'m EmbeddingModel,
    ctx: LlamaContext<'m>,
    /// The longest window it reads a text in.
    window: usize,
    /// Tokens packed into one batch, where the windows are shorter.
    pack: usize,
    /// Tokens one batch may hold: the context's size.
    batch: usize,
}

impl EmbedSession<'_> {
    /// The tokens its context holds: the most one batch embeds.
    pub fn context_tokens(&self) -> usize {
        self.batch
    }

    /// One unit vector per text, in order. A text longer than the session's window (the
    /// model's, for `EmbeddingModel::embed`) is read in windows whose vectors are averaged,
    /// weighted by their tokens.
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.embed_windows(texts, usize::MAX, usize::MAX)?;
        self.all_numbers(vectors)
    }

    /// One unit vector per text, in order, each of the text's start alone: its first
    /// `max_tokens` tokens at most, and never more than the model's window.
    pub fn embed_starts(
        &mut self,
        texts: &[&str],
        max_tokens: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.embed_windows(texts, max_tokens, 1)?;
        self.all_numbers(vectors)
    }

    /// As [`EmbedSession::embed_starts`], but a vector that is not a number throughout (NaN or
    /// infinite: an f16 overflow on some texts, damaged weights on all) is returned as it is,
    /// for a caller that leaves those texts out and keeps the others' vectors.
    pub fn embed_starts_unchecked(
        &mut self,
        texts: &[&str],
        max_tokens: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_windows(texts, max_tokens, 1)
    }

    /// `vectors`, where each is a number throughout.
    fn all_numbers(&self, vectors: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>, EmbedError> {
        // A damaged model (weights that are NaN) gives vectors no search can rank by; stored,
        // they replaced good ones.
        match vectors.iter().position(|v| !is_number(v)) {
            Some(i) => Err(EmbedError::Embed(format!(
                "{}: the vector of text {} is not a number throughout (NaN or infinite): \
                 are the model's weights damaged?",
                self.model.path.display(),
                i + 1
            ))),
            None => Ok(vectors),
        }
    }

    /// The vectors of `texts` from the first `per_text` of their windows of `limit` tokens,
    /// packed into batches: a text's windows are averaged, weighted by their tokens.
    fn embed_windows(
        &mut self,
        texts: &[&str],
        limit: usize,
        per_text: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Never a window longer than the context holds: llama.cpp aborts on one.
        let windows = self
            .model
            .windows_of(texts, limit.min(self.window), per_text);
        self.embed_prepared(&windows, texts.len())
    }

    /// The vectors of `count` texts from their `windows`, packed into batches: a text's
    /// windows are averaged, weighted by their tokens.
    fn embed_prepared(
        &mut self,
        windows: &[(usize, Vec<LlamaToken>)],
        count: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut sums = vec![vec![0f32; self.model.dimension]; count];
        let mut start = 0;
        while start < windows.len() {
            let mut end = start;
            let mut tokens = 0;
            // Short windows packed up to `pack` tokens; a longer one goes alone.
            while end < windows.len()
                && end - start < MAX_SEQS
                && (end == start || tokens + windows[end].1.len() <= self.pack)
                && tokens + windows[end].1.len() <= self.batch
            {
                tokens += windows[end].1.len();
                end += 1;
            }
            if end == start {
                // Not reached (a window is at most the session's, which the context holds),
                // but a batch of nothing would never end the loop.
                return Err(EmbedError::Embed(format!(
                    "a window of {} tokens is longer than the context's {}",
                    windows[start].1.len(),
                    self.batch
                )));
            }
            self.embed_batch(&windows[start..end], tokens, &mut sums)?;
            start = end;
        }
        for v in &mut sums {
            normalize(v);
        }
        Ok(sums)
    }

    fn embed_batch(
        &mut self,
        windows: &[(usize, Vec<LlamaToken>)],
        tokens: usize,
        sums: &mut [Vec<f32>],
    ) -> Result<(), EmbedError> {
        // Each token belongs to one sequence.
        let mut batch = LlamaBatch::new(tokens.max(1), 1);
        for (seq, (_, w)) in windows.iter().enumerate() {
            batch
                .add_sequence(w, seq as i32, true)
                .map_err(|e| EmbedError::Embed(e.to_string()))?;
        }
        self.ctx.clear_kv_cache();
        let mark = llama_log::mark();
        self.ctx
            .decode(&mut batch)
            .map_err(|e| EmbedError::Embed(llama_log::reason_since(mark, &e.to_string())))?;
        for (seq, (text, w)) in windows.iter().enumerate() {
            let v = self
                .ctx
                .embeddings_seq_ith(seq as i32)
                .map_err(|e| EmbedError::Embed(format!("no vector for sequence {seq}: {e}")))?;
            let weight = w.len() as f32;
            for (s, x) in sums[*text].iter_mut().zip(v) {
                *s += x * weight;
            }
        }
        Ok(())
    }
}

/// Whether every element of `v` is a number (neither NaN nor infinite).
pub fn is_number(v: &[f32]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    // In f64: the squares of values past 1.8e19 overflow an f32 to infinity, and every
    // element then divided to zero, a vector that passed for a number.
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for x in v {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vector of huge values normalized to zeros (its squares overflowed), which the pass
    /// took for a good one.
    #[test]
    fn a_vector_of_huge_values_is_normalized_not_zeroed() {
        let mut v = vec![3e30f32, 4e30];
        normalize(&mut v);
        assert!(
            (v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6,
            "{v:?}"
        );
        let mut zero = vec![0f32; 3];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 3]);
        let mut small = vec![1f32, 0.0];
        normalize(&mut small);
        assert_eq!(small, vec![1.0, 0.0]);
    }
}
