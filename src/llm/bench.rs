//! `burrow bench`: what a model does on this machine. Prompt processing (a 512-token prompt),
//! generation (128 tokens), generation under a ReAct-action JSON grammar, and time to first
//! token of a follow-up turn with KV-cache reuse against full re-evaluation. Each figure is the
//! median of several runs, measured side by side in one process.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::engine::{Completion, GenerateRequest, LanguageModel, LlmError, Prompt, SamplingParams};
use super::grammar::Grammar;
use super::llama::{LlamaEngine, LoadOptions, LoadedModel};
use super::template::ChatMessage;

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub load: LoadOptions,
    pub repetitions: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub model: String,
    pub path: PathBuf,
    pub threads: u32,
    pub context_size: u32,
    pub load_ms: f64,
    pub prefill_tokens: usize,
    pub prefill_tps: f64,
    pub decode_tokens: usize,
    pub decode_tps: f64,
    /// Tokens generated under the grammar (the model ends when the JSON is complete).
    pub grammar_decode_tokens: usize,
    pub grammar_decode_tps: f64,
    /// Unconstrained decode of the same prompt and the same number of tokens, measured
    /// alongside, for the ratio.
    pub grammar_baseline_tps: f64,
    pub grammar_ratio: f64,
    pub history_tokens: usize,
    pub followup_new_tokens: usize,
    pub ttft_reuse_ms: f64,
    pub ttft_full_ms: f64,
    pub reuse_speedup: f64,
    pub repetitions: usize,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model:      {} ({})", self.model, self.path.display())?;
        writeln!(
            f,
            "threads:    {}   context: {}   runs: {} (medians)",
            self.threads, self.context_size, self.repetitions
        )?;
        writeln!(f, "load:       {:.0} ms", self.load_ms)?;
        writeln!(
            f,
            "prefill:    {:.1} tok/s ({} tokens)",
            self.prefill_tps, self.prefill_tokens
        )?;
        writeln!(
            f,
            "decode:     {:.1} tok/s ({} tokens)",
            self.decode_tps, self.decode_tokens
        )?;
        writeln!(
            f,
            "grammar:    {:.1} tok/s ({} tokens) vs {:.1} tok/s unconstrained: {:.2}x",
            self.grammar_decode_tps,
            self.grammar_decode_tokens,
            self.grammar_baseline_tps,
            self.grammar_ratio
        )?;
        write!(
            f,
            "follow-up:  first token {:.1} ms with KV reuse vs {:.1} ms re-evaluating {} tokens: {:.1}x ({} new tokens)",
            self.ttft_reuse_ms, self.ttft_full_ms, self.history_tokens + self.followup_new_tokens, self.reuse_speedup, self.followup_new_tokens
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

const PASSAGE: &str = "The repository holds a command line tool written in Rust. Its main module parses \
arguments, reads a configuration file, and dispatches to subcommands that index files, search them, \
and print results. Each search walks the directory tree, skips ignored paths, and matches lines \
against a compiled regular expression. Results are sorted by path and line number before printing. \
Errors are collected per file so that one unreadable file does not stop the whole search. The test \
suite builds fixtures in temporary directories and checks the printed output line by line. ";

/// Text that tokenizes to exactly `n` tokens (or as close as the tokenizer allows from below).
fn text_of_tokens(model: &dyn LanguageModel, n: usize) -> Result<String, LlmError> {
    let text = PASSAGE.repeat(n / 40 + 4);
    let words: Vec<&str> = text.split(' ').collect();
    let (mut lo, mut hi) = (1usize, words.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if model.count_tokens(&words[..mid].join(" "))? <= n {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(words[..lo].join(" "))
}

fn react_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "tool": {"enum": ["search_code", "read_file", "search_issues", "final_answer"]},
            "args": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"]
            }
        },
        "required": ["thought", "tool", "args"]
    })
}

fn run_one(model: &LoadedModel, req: GenerateRequest, clear: bool) -> Result<Completion, LlmError> {
    if clear {
        model.clear_cache()?;
    }
    model.generate(req)?.complete()
}

pub fn run_bench(path: &Path, opts: &BenchOptions) -> Result<BenchReport, LlmError> {
    let engine = LlamaEngine::new()?;
    let model: Arc<LoadedModel> = engine.load_blocking(path, &opts.load)?;
    let reps = opts.repetitions.max(1);
    let greedy = SamplingParams::greedy();

    // Prompt processing: a 512-token prompt into an empty cache.
    let prompt512 = text_of_tokens(model.as_ref(), 512)?;
    let prefill_req = || {
        GenerateRequest::new(Prompt::Text(prompt512.clone()))
            .sampling(greedy.clone())
            .max_tokens(1)
    };
    run_one(&model, prefill_req(), true)?; // warm-up
    let mut prefill = Vec::new();
    let mut prefill_tokens = 0;
    for _ in 0..reps {
        let c = run_one(&model, prefill_req(), true)?;
        prefill_tokens = c.usage.prompt_tokens;
        prefill.push(c.usage.prefill_tokens_per_s());
    }

    // Generation: 128 tokens from a short prompt, end-of-turn masked so every run is full length.
    let decode_req = || {
        GenerateRequest::new(Prompt::Text("Once upon a time".into()))
            .sampling(greedy.clone())
            .max_tokens(128)
            .ignore_eos(true)
    };
    let mut decode = Vec::new();
    let mut decode_tokens = 0;
    for _ in 0..reps {
        let c = run_one(&model, decode_req(), true)?;
        decode_tokens = c.usage.generated_tokens;
        decode.push(c.usage.decode_tokens_per_s());
    }

    // Constrained generation: a ReAct action under its JSON grammar, against unconstrained
    // generation of the same prompt and length, interleaved.
    let action_prompt = Prompt::chat(vec![
        ChatMessage::system("You are a coding agent. Reply with one JSON action."),
        ChatMessage::user(
            "Find where the configuration file is parsed and explain the error handling in detail.",
        ),
    ]);
    let mut grammar_tps = Vec::new();
    let mut baseline_tps = Vec::new();
    let mut grammar_tokens = 0;
    for _ in 0..reps {
        let c = run_one(
            &model,
            GenerateRequest::new(action_prompt.clone())
                .sampling(greedy.clone())
                .grammar(Grammar::JsonSchema(react_schema()))
                .max_tokens(160),
            true,
        )?;
        grammar_tokens = c.usage.generated_tokens;
        grammar_tps.push(c.usage.decode_tokens_per_s());
        let b = run_one(
            &model,
            GenerateRequest::new(action_prompt.clone())
                .sampling(greedy.clone())
                .max_tokens(grammar_tokens.max(2))
                .ignore_eos(true),
            true,
        )?;
        baseline_tps.push(b.usage.decode_tokens_per_s());
    }

    // Follow-up turn: ~450 tokens of history, then ~40 new tokens.
    let history_text = text_of_tokens(model.as_ref(), 420)?;
    let mut history = vec![
        ChatMessage::system(
            "You are Burrow, an agent that answers questions about the user's code.",
        ),
        ChatMessage::user(format!(
            "Here is what I know about the project: {history_text}"
        )),
        ChatMessage::assistant("Understood. What would you like to know?"),
    ];
    let history_tokens = model.count_tokens(&model.render_chat(&history, None)?)?;
    let followup = "Which module reads the configuration file, and what happens when a file cannot be read during a search? Answer briefly.";
    history.push(ChatMessage::user(followup));
    let followup_req = || {
        GenerateRequest::new(Prompt::chat(history.clone()))
            .sampling(greedy.clone())
            .max_tokens(1)
    };
    let primed = &history[..3];
    let mut reuse = Vec::new();
    let mut full = Vec::new();
    let mut new_tokens = 0;
    for _ in 0..reps {
        // With reuse: the history is already in the cache from the previous turn.
        run_one(
            &model,
            GenerateRequest::new(Prompt::chat(primed.to_vec()))
                .sampling(greedy.clone())
                .max_tokens(1),
            true,
        )?;
        let c = run_one(&model, followup_req(), false)?;
        new_tokens = c.usage.prompt_tokens - c.usage.cached_tokens;
        reuse.push(c.usage.time_to_first_token_ms);
        let f = run_one(&model, followup_req(), true)?;
        full.push(f.usage.time_to_first_token_ms);
    }

    let (grammar_decode_tps, grammar_baseline_tps) = (median(grammar_tps), median(baseline_tps));
    let (ttft_reuse_ms, ttft_full_ms) = (median(reuse), median(full));
    Ok(BenchReport {
        model: model.info().name.clone(),
        path: path.to_path_buf(),
        threads: model.options().threads,
        context_size: model.options().context_size,
        load_ms: model.load_ms(),
        prefill_tokens,
        prefill_tps: median(prefill),
        decode_tokens,
        decode_tps: median(decode),
        grammar_decode_tokens: grammar_tokens,
        grammar_decode_tps,
        grammar_baseline_tps,
        grammar_ratio: if grammar_baseline_tps > 0.0 {
            grammar_decode_tps / grammar_baseline_tps
        } else {
            0.0
        },
        history_tokens,
        followup_new_tokens: new_tokens,
        ttft_reuse_ms,
        ttft_full_ms,
        reuse_speedup: if ttft_reuse_ms > 0.0 {
            ttft_full_ms / ttft_reuse_ms
        } else {
            0.0
        },
        repetitions: reps,
    })
}
