//! `burrow bench`: what a model does on this machine. Prompt processing (a 512-token prompt),
//! generation (128 tokens), generation under a ReAct-action JSON grammar, and time to first
//! token of a follow-up turn with KV-cache reuse against full re-evaluation. Each figure is the
//! median of several runs, and the figures that are compared (grammar against none, reuse against
//! none) are measured alternately in the same process.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::engine::{Completion, GenerateRequest, LanguageModel, LlmError, Prompt, SamplingParams};
use super::grammar::Grammar;
use super::library::{ModelInfo, ModelSource};
use super::llama::{
    gpu_devices, layer_count, GpuDevice, GrammarBackend, LlamaEngine, LoadOptions, LoadedModel,
};
use super::template::ChatMessage;

/// Which measurements to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchTests {
    pub prefill: bool,
    pub decode: bool,
    pub grammar: bool,
    pub reuse: bool,
    /// Time to first token of a fixed number of new tokens behind growing cached prefixes: how
    /// an agent step's cost grows with the history it sits on.
    pub depth: bool,
    /// Decoding behind growing cached prefixes, free and under the action grammar: what a
    /// step deep in a run writes at (llama-bench's `tg64 @ dN`).
    pub decode_depth: bool,
}

impl BenchTests {
    pub const ALL: BenchTests = BenchTests {
        prefill: true,
        decode: true,
        grammar: true,
        reuse: true,
        depth: true,
        decode_depth: true,
    };

    /// Parses a comma-separated list of `prefill`, `decode`, `grammar`, `reuse`, `depth`,
    /// `decode-depth`.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut t = BenchTests {
            prefill: false,
            decode: false,
            grammar: false,
            reuse: false,
            depth: false,
            decode_depth: false,
        };
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match name {
                "prefill" => t.prefill = true,
                "decode" => t.decode = true,
                "grammar" => t.grammar = true,
                "reuse" => t.reuse = true,
                "depth" => t.depth = true,
                "decode-depth" => t.decode_depth = true,
                other => {
                    return Err(format!(
                        "unknown benchmark {other:?} (choose from prefill, decode, grammar, reuse, depth, decode-depth)"
                    ))
                }
            }
        }
        Ok(t)
    }
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub load: LoadOptions,
    pub repetitions: usize,
    pub tests: BenchTests,
    /// Sampling temperature of the constrained runs (0: greedy). With sampling, the freely
    /// chosen token breaks the grammar more often, which is the slow path of the GBNF sampler.
    pub grammar_temperature: f32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct BenchReport {
    pub model: String,
    pub path: PathBuf,
    pub threads: u32,
    pub context_size: u32,
    pub repetitions: usize,
    pub load_ms: f64,
    /// Layers offloaded to a GPU, of `layers` (the blocks and the output layer).
    pub gpu_layers: u32,
    pub layers: u32,
    /// The GPUs llama.cpp sees with the model loaded, and their memory then (none in a CPU
    /// build): what shows that the offload took place, beside the speeds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuDevice>,
    /// Reading and validating the GGUF header.
    pub metadata_ms: f64,
    pub prefill_tokens: Option<usize>,
    pub prefill_tps: Option<f64>,
    pub decode_tokens: Option<usize>,
    pub decode_tps: Option<f64>,
    /// Tokens generated under the grammar (the model ends when the JSON is complete).
    pub grammar_decode_tokens: Option<usize>,
    pub grammar_decode_tps: Option<f64>,
    /// Unconstrained decode of the same prompt and the same number of tokens, measured
    /// alternately with the constrained runs.
    pub grammar_baseline_tps: Option<f64>,
    pub grammar_ratio: Option<f64>,
    /// The same constrained generation with the schema converted to GBNF for llama.cpp's
    /// grammar sampler (the engine Burrow measured llguidance against).
    pub gbnf_decode_tps: Option<f64>,
    pub gbnf_ratio: Option<f64>,
    pub history_tokens: Option<usize>,
    pub followup_new_tokens: Option<usize>,
    pub ttft_reuse_ms: Option<f64>,
    pub ttft_full_ms: Option<f64>,
    pub reuse_speedup: Option<f64>,
    /// One row per cached depth, in increasing order (depths that do not fit the context are
    /// left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depth: Vec<DepthPoint>,
    /// One row per cached depth, in increasing order (depths that do not fit are left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub decode_depth: Vec<DecodeDepthPoint>,
}

/// Decoding behind `depth` cached tokens: [`DECODE_DEPTH_TOKENS`] tokens free (end of turn
/// masked), and a step's JSON action under the grammar.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DecodeDepthPoint {
    pub depth: usize,
    pub free_tokens: usize,
    pub free_tps: f64,
    pub grammar_tokens: usize,
    pub grammar_tps: f64,
}

/// The cached depths `--tests decode-depth` measures, as llama-bench's `-d 0,1000,2000,3000`.
pub const DECODE_DEPTHS: [usize; 4] = [0, 1000, 2000, 3000];
/// Tokens decoded per depth point (llama-bench's `tg64`).
pub const DECODE_DEPTH_TOKENS: usize = 64;

/// New tokens evaluated behind `depth` cached tokens, as the engine runs them (short batches
/// deep in the cache padded to llama.cpp's tiled attention kernel) and without the padding.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DepthPoint {
    pub depth: usize,
    pub new_tokens: usize,
    /// Tokens the padded run evaluated (new ones plus re-evaluated cached ones).
    pub evaluated_tokens: usize,
    pub ttft_ms: f64,
    pub unpadded_ttft_ms: f64,
    /// New tokens per second of prefill without padding (comparable with llama-bench's ppN).
    pub unpadded_prefill_tps: f64,
}

/// The cached depths `--tests depth` measures: an empty cache, then roughly an agent's step 2,
/// its step 6 and its step 12 with SmolLM2 (see `burrow bench --agent`).
pub const DEPTHS: [usize; 4] = [0, 700, 1600, 2600];
/// New tokens per depth point: a typical agent step's observation and step header, below the
/// 64-row tile of ggml's CPU attention kernel.
pub const DEPTH_NEW_TOKENS: usize = 48;

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model:      {} ({})", self.model, self.path.display())?;
        writeln!(
            f,
            "threads:    {}   context: {}   runs: {} (medians)",
            self.threads, self.context_size, self.repetitions
        )?;
        writeln!(
            f,
            "load:       {:.0} ms (metadata {:.2} ms)",
            self.load_ms, self.metadata_ms
        )?;
        if self.gpu_layers == 0 {
            writeln!(f, "offload:    none (CPU)")?;
        } else {
            writeln!(
                f,
                "offload:    {} of {} layers",
                self.gpu_layers, self.layers
            )?;
        }
        for g in &self.gpus {
            writeln!(
                f,
                "  GPU:      {}: {} MiB in use of {} MiB",
                g.name,
                g.memory_total.saturating_sub(g.memory_free) >> 20,
                g.memory_total >> 20
            )?;
        }
        if let (Some(tps), Some(n)) = (self.prefill_tps, self.prefill_tokens) {
            writeln!(f, "prefill:    {tps:.1} tok/s ({n} tokens)")?;
        }
        if let (Some(tps), Some(n)) = (self.decode_tps, self.decode_tokens) {
            writeln!(f, "decode:     {tps:.1} tok/s ({n} tokens)")?;
        }
        if let (Some(tps), Some(n), Some(base), Some(r)) = (
            self.grammar_decode_tps,
            self.grammar_decode_tokens,
            self.grammar_baseline_tps,
            self.grammar_ratio,
        ) {
            writeln!(
                f,
                "grammar:    {tps:.1} tok/s ({n} tokens) vs {base:.1} tok/s unconstrained: {r:.2}x"
            )?;
        }
        if let (Some(tps), Some(r)) = (self.gbnf_decode_tps, self.gbnf_ratio) {
            writeln!(
                f,
                "  as GBNF:  {tps:.1} tok/s with llama.cpp's grammar sampler: {r:.2}x"
            )?;
        }
        if let (Some(reuse), Some(full), Some(s), Some(h), Some(n)) = (
            self.ttft_reuse_ms,
            self.ttft_full_ms,
            self.reuse_speedup,
            self.history_tokens,
            self.followup_new_tokens,
        ) {
            writeln!(
                f,
                "follow-up:  first token {reuse:.1} ms with KV reuse vs {full:.1} ms re-evaluating all {} tokens: {s:.1}x ({n} new tokens)",
                h + n
            )?;
        }
        for p in &self.decode_depth {
            writeln!(
                f,
                "decode at depth {:>5}: {:.1} tok/s free ({} tokens), {:.1} tok/s under the action grammar ({} tokens)",
                p.depth, p.free_tps, p.free_tokens, p.grammar_tps, p.grammar_tokens
            )?;
        }
        if let Some(base) = self.depth.iter().find(|p| p.depth > 0) {
            for p in &self.depth {
                writeln!(
                    f,
                    "depth {:>5}: {} new tokens, first token {:.1} ms ({:.2}x depth {}); unpadded {:.1} ms ({:.1} tok/s): padding to {} tokens {:.2}x faster",
                    p.depth,
                    p.new_tokens,
                    p.ttft_ms,
                    ratio(p.ttft_ms, base.ttft_ms),
                    base.depth,
                    p.unpadded_ttft_ms,
                    p.unpadded_prefill_tps,
                    p.evaluated_tokens,
                    ratio(p.unpadded_ttft_ms, p.ttft_ms),
                )?;
            }
        }
        Ok(())
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
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

/// The action a ReAct step emits, as the agent constrains it.
pub fn react_action_schema() -> serde_json::Value {
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
    let reps = opts.repetitions.max(1);
    let mut metadata = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        ModelInfo::from_path(path, ModelSource::Path)?;
        metadata.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let engine = LlamaEngine::new()?;
    let model: Arc<LoadedModel> = engine.load_blocking(path, &opts.load)?;
    let mut report = BenchReport {
        model: model.info().name.clone(),
        path: path.to_path_buf(),
        threads: model.options().threads,
        context_size: model.options().context_size,
        repetitions: reps,
        load_ms: model.load_ms(),
        gpu_layers: model.options().gpu_layers,
        layers: layer_count(model.info()),
        gpus: if model.options().gpu_layers > 0 {
            gpu_devices()
        } else {
            Vec::new()
        },
        metadata_ms: median(metadata),
        ..Default::default()
    };
    let greedy = SamplingParams::greedy();

    if opts.tests.prefill {
        let prompt512 = text_of_tokens(model.as_ref(), 512)?;
        let req = || {
            GenerateRequest::new(Prompt::Text(prompt512.clone()))
                .sampling(greedy.clone())
                .max_tokens(1)
        };
        run_one(&model, req(), true)?; // warm-up
        let mut tps = Vec::new();
        for _ in 0..reps {
            let c = run_one(&model, req(), true)?;
            report.prefill_tokens = Some(c.usage.prompt_tokens);
            tps.push(c.usage.prefill_tokens_per_s());
        }
        report.prefill_tps = Some(median(tps));
    }

    if opts.tests.decode {
        // 128 tokens from a short prompt; end-of-turn is masked so every run is full length.
        let req = || {
            GenerateRequest::new(Prompt::Text("Once upon a time".into()))
                .sampling(greedy.clone())
                .max_tokens(128)
                .ignore_eos(true)
        };
        let mut tps = Vec::new();
        for _ in 0..reps {
            let c = run_one(&model, req(), true)?;
            report.decode_tokens = Some(c.usage.generated_tokens);
            tps.push(c.usage.decode_tokens_per_s());
        }
        report.decode_tps = Some(median(tps));
    }

    if opts.tests.grammar {
        let prompt = Prompt::chat(vec![
            ChatMessage::system("You are a coding agent. Reply with one JSON action."),
            ChatMessage::user(
                "Find where the configuration file is parsed and explain the error handling in detail.",
            ),
        ]);
        let sampling = SamplingParams {
            temperature: opts.grammar_temperature,
            seed: Some(42),
            ..Default::default()
        };
        let constrained = || {
            GenerateRequest::new(prompt.clone())
                .sampling(sampling.clone())
                .grammar(Grammar::JsonSchema(react_action_schema()))
                .max_tokens(160)
        };
        let (mut grammar, mut baseline, mut gbnf) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let c = run_one(&model, constrained(), true)?;
            let n = c.usage.generated_tokens;
            report.grammar_decode_tokens = Some(n);
            grammar.push(c.usage.decode_tokens_per_s());
            let b = run_one(
                &model,
                GenerateRequest::new(prompt.clone())
                    .sampling(sampling.clone())
                    .max_tokens(n.max(2))
                    .ignore_eos(true),
                true,
            )?;
            baseline.push(b.usage.decode_tokens_per_s());
            model.set_grammar_backend(GrammarBackend::Gbnf);
            let l = run_one(&model, constrained(), true);
            model.set_grammar_backend(GrammarBackend::default());
            gbnf.push(l?.usage.decode_tokens_per_s());
        }
        let (g, b) = (median(grammar), median(baseline));
        report.grammar_decode_tps = Some(g);
        report.grammar_baseline_tps = Some(b);
        report.grammar_ratio = Some(ratio(g, b));
        let l = median(gbnf);
        report.gbnf_decode_tps = Some(l);
        report.gbnf_ratio = Some(ratio(l, b));
    }

    if opts.tests.reuse {
        // A follow-up turn: ~450 tokens of history in the cache, then ~40 new tokens.
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
        let primed = Prompt::chat(history.clone());
        report.history_tokens = Some(model.prompt_tokens(&primed)?.len());
        history.push(ChatMessage::user(
            "Which module reads the configuration file, and what happens when a file cannot be read during a search? Answer briefly.",
        ));
        let followup = || {
            GenerateRequest::new(Prompt::chat(history.clone()))
                .sampling(greedy.clone())
                .max_tokens(1)
        };
        let (mut reuse, mut full) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            run_one(
                &model,
                GenerateRequest::new(primed.clone())
                    .sampling(greedy.clone())
                    .max_tokens(1),
                true,
            )?;
            let c = run_one(&model, followup(), false)?;
            report.followup_new_tokens = Some(c.usage.prompt_tokens - c.usage.cached_tokens);
            reuse.push(c.usage.time_to_first_token_ms);
            let f = run_one(&model, followup(), true)?;
            full.push(f.usage.time_to_first_token_ms);
        }
        let (r, f) = (median(reuse), median(full));
        report.ttft_reuse_ms = Some(r);
        report.ttft_full_ms = Some(f);
        report.reuse_speedup = Some(ratio(f, r));
    }

    if opts.tests.depth {
        report.depth = depth_points(&model, reps)?;
    }
    if opts.tests.decode_depth {
        report.decode_depth = decode_depth_points(&model, reps)?;
    }
    Ok(report)
}

/// For each depth: the cache primed with `depth` tokens of text, then
/// [`DECODE_DEPTH_TOKENS`] tokens decoded behind it, free; then, primed again, a JSON action
/// under the grammar behind the same text and an instruction. Only decoding is timed.
fn decode_depth_points(
    model: &LoadedModel,
    reps: usize,
) -> Result<Vec<DecodeDepthPoint>, LlmError> {
    let n_ctx = model.options().context_size as usize;
    let greedy = SamplingParams::greedy();
    let mut points = Vec::new();
    for depth in DECODE_DEPTHS {
        if depth + DECODE_DEPTH_TOKENS * 3 + 16 > n_ctx {
            continue;
        }
        let cached = if depth == 0 {
            "Once upon a time".to_string()
        } else {
            text_of_tokens(model, depth)?
        };
        let asked = format!(
            "{cached}\nNext step, as one JSON action with a long thought about the text above:\n"
        );
        let prime = |text: &str| -> Result<(), LlmError> {
            model.clear_cache()?;
            run_one(
                model,
                GenerateRequest::new(Prompt::Text(text.to_string()))
                    .sampling(greedy.clone())
                    .max_tokens(1),
                false,
            )
            .map(drop)
        };
        let mut point = DecodeDepthPoint {
            depth,
            ..Default::default()
        };
        let (mut free, mut constrained) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            prime(&cached)?;
            let c = run_one(
                model,
                GenerateRequest::new(Prompt::Text(cached.clone()))
                    .sampling(greedy.clone())
                    .max_tokens(DECODE_DEPTH_TOKENS)
                    .ignore_eos(true),
                false,
            )?;
            point.free_tokens = c.usage.generated_tokens;
            free.push(c.usage.decode_tokens_per_s());
            prime(&asked)?;
            let g = run_one(
                model,
                GenerateRequest::new(Prompt::Text(asked.clone()))
                    .sampling(greedy.clone())
                    .grammar(Grammar::JsonSchema(react_action_schema()))
                    .max_tokens(DECODE_DEPTH_TOKENS),
                false,
            )?;
            point.grammar_tokens = g.usage.generated_tokens;
            constrained.push(g.usage.decode_tokens_per_s());
        }
        point.free_tps = median(free);
        point.grammar_tps = median(constrained);
        points.push(point);
    }
    Ok(points)
}

/// For each depth: prime the cache with `depth` tokens of text, then time the first token of the
/// same text followed by [`DEPTH_NEW_TOKENS`] more, so only the new tokens are evaluated; with
/// and without prefill padding, alternately.
fn depth_points(model: &LoadedModel, reps: usize) -> Result<Vec<DepthPoint>, LlmError> {
    let n_ctx = model.options().context_size as usize;
    // Starts with a space, so the first new token cannot merge with the cached text's last one.
    let new_text = format!(
        " Question: {}",
        text_of_tokens(model, DEPTH_NEW_TOKENS.saturating_sub(3))?
    );
    let greedy = SamplingParams::greedy();
    let one = |text: String| {
        GenerateRequest::new(Prompt::Text(text))
            .sampling(greedy.clone())
            .max_tokens(1)
    };
    let mut points = Vec::new();
    for depth in DEPTHS {
        if depth + DEPTH_NEW_TOKENS * 2 + 8 > n_ctx {
            continue;
        }
        let cached = if depth == 0 {
            String::new()
        } else {
            text_of_tokens(model, depth)?
        };
        let mut point = DepthPoint {
            depth,
            ..Default::default()
        };
        let (mut padded, mut unpadded, mut prefill) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            for pad in [true, false] {
                model.set_prefill_padding(pad);
                model.clear_cache()?;
                let run = (|| {
                    if depth > 0 {
                        run_one(model, one(cached.clone()), false)?;
                    }
                    run_one(model, one(format!("{cached}{new_text}")), false)
                })();
                model.set_prefill_padding(true);
                let u = run?.usage;
                if pad {
                    point.evaluated_tokens = u.prompt_tokens - u.cached_tokens;
                    padded.push(u.time_to_first_token_ms);
                } else {
                    point.new_tokens = u.prompt_tokens - u.cached_tokens;
                    unpadded.push(u.time_to_first_token_ms);
                    prefill.push(ratio(point.new_tokens as f64, u.prefill_ms / 1000.0));
                }
            }
        }
        point.ttft_ms = median(padded);
        point.unpadded_ttft_ms = median(unpadded);
        point.unpadded_prefill_tps = median(prefill);
        points.push(point);
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_selection_parses() {
        assert_eq!(
            BenchTests::parse("prefill,decode,grammar,reuse,depth,decode-depth").unwrap(),
            BenchTests::ALL
        );
        let d = BenchTests::parse("decode").unwrap();
        assert!(d.decode && !d.prefill && !d.grammar && !d.reuse && !d.depth);
        assert!(BenchTests::parse("depth").unwrap().depth);
        assert!(BenchTests::parse("decode,warp")
            .unwrap_err()
            .contains("warp"));
    }

    #[test]
    fn the_action_schema_is_a_valid_grammar() {
        let g = Grammar::JsonSchema(react_action_schema())
            .to_gbnf()
            .unwrap();
        assert!(g.contains("final_answer"));
    }
}

/// A model measured only through `LanguageModel` (a remote backend, whose engine Burrow does
/// not drive): a chat turn's time to first token, prompt and decode speed, and decode under a
/// JSON-schema grammar, each the median over the repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct ServedBenchReport {
    pub model: String,
    pub repetitions: usize,
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
    pub ttft_ms: f64,
    pub prefill_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    pub grammar_decode_tokens_per_s: f64,
    /// The grammar could not be enforced by the server (the figure is free decoding).
    pub grammar_unconstrained: bool,
}

/// Runs `repetitions` rounds of a free turn and a grammar-constrained one.
pub fn run_served_bench(
    model: &dyn LanguageModel,
    repetitions: usize,
) -> Result<ServedBenchReport, LlmError> {
    let topic = "The workspace holds a search tool, a file reader and a commit log. ".repeat(24);
    let (mut ttft, mut prefill, mut decode, mut grammar) = (vec![], vec![], vec![], vec![]);
    let (mut prompt_tokens, mut generated, mut unconstrained) = (0, 0, false);
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "thought": {"type": "string", "maxLength": 200},
            "tool": {"enum": ["search", "read_file", "final_answer"]},
            "query": {"type": "string", "maxLength": 80},
        },
        "required": ["thought", "tool", "query"],
    });
    // A different first line each round and each process, so no server reuses a prompt it
    // saw before (a cached prompt would time the cache, not the prefill).
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for round in 0..repetitions.max(1) {
        let text = format!("Round {round}-{nonce}. {topic}\nDescribe the workspace in detail.");
        let free = GenerateRequest::new(Prompt::chat(vec![ChatMessage::user(text.clone())]))
            .sampling(SamplingParams::greedy())
            .max_tokens(128)
            .ignore_eos(true);
        let c = model.generate(free)?.complete()?;
        ttft.push(c.usage.time_to_first_token_ms);
        prefill.push(c.usage.prefill_tokens_per_s());
        decode.push(c.usage.decode_tokens_per_s());
        prompt_tokens = c.usage.prompt_tokens;
        generated = c.usage.generated_tokens;
        let constrained = GenerateRequest::new(Prompt::chat(vec![ChatMessage::user(format!(
            "{text}\nAnswer with one JSON step."
        ))]))
        .sampling(SamplingParams::greedy())
        .max_tokens(96)
        .grammar(Grammar::JsonSchema(schema.clone()));
        let g = model.generate(constrained)?.complete()?;
        grammar.push(g.usage.decode_tokens_per_s());
        unconstrained |= g.usage.unconstrained;
    }
    Ok(ServedBenchReport {
        model: model.descriptor().name,
        repetitions: repetitions.max(1),
        prompt_tokens,
        generated_tokens: generated,
        ttft_ms: median(ttft),
        prefill_tokens_per_s: median(prefill),
        decode_tokens_per_s: median(decode),
        grammar_decode_tokens_per_s: median(grammar),
        grammar_unconstrained: unconstrained,
    })
}

impl fmt::Display for ServedBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} (medians of {} rounds)", self.model, self.repetitions)?;
        writeln!(
            f,
            "  chat turn: {} prompt tokens, first token {:.0} ms, prefill {:.1} tok/s",
            self.prompt_tokens, self.ttft_ms, self.prefill_tokens_per_s
        )?;
        writeln!(
            f,
            "  decode: {:.1} tok/s ({} tokens)",
            self.decode_tokens_per_s, self.generated_tokens
        )?;
        writeln!(
            f,
            "  decode under a JSON-schema grammar: {:.1} tok/s{}",
            self.grammar_decode_tokens_per_s,
            if self.grammar_unconstrained {
                " (not enforced by this server)"
            } else {
                ""
            }
        )
    }
}
