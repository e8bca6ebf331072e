//! `burrow eval`: the agent run on a question set, per model and protocol, each answer scored
//! against the items that answer it, beside search's own first hit.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::ask::protocol;
use super::models::{load_model, ModelArgs};
use burrow::agent::protocol::{Protocol, PROTOCOLS};
use burrow::agent::AgentConfig;
use burrow::app::eval::{
    baseline, read_questions, summarize, BaselineHit, Question, Scored, Summary,
};
use burrow::app::eval_tasks::{is_task_set, read_tasks, summarize_tasks, ScoredTask, TaskSummary};
use burrow::app::meaning::ModelEmbedder;
use burrow::app::App;
use burrow::config::BurrowHome;
use burrow::workspace::Workspace;

#[derive(Args)]
pub struct EvalArgs {
    /// The question set: JSON lines of {"id", "question", "accept": ["owner/repo#12",
    /// "repo:path", "repo@hash"], "split"} (see scripts/eval/).
    pub questions: PathBuf,
    /// Models to run, each by name, catalogue id, file name or path (default: the catalogue's
    /// default model). Repeat for several.
    #[arg(long = "model", short)]
    pub models: Vec<String>,
    /// The ReAct dialect, or `all`.
    #[arg(long, default_value = "json-typed")]
    pub protocol: String,
    /// Only the questions of this split (dev, test).
    #[arg(long)]
    pub split: Option<String>,
    /// Only these questions (ids, comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// At most this many questions.
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value_t = 8)]
    pub max_steps: usize,
    /// Leave out Burrow's own first steps: the search with the task and the opening of its best
    /// match.
    #[arg(long)]
    pub no_search_first: bool,
    /// Leave out the model's choice of the first call (a list, a count, a history or a
    /// definition, with filters held to the workspace's values): every run starts with the
    /// search.
    #[arg(long)]
    pub no_route: bool,
    /// How many of the first search's leading matches Burrow opens one by one, asking the
    /// model whether each answers the task (0: open the best match only and answer from it;
    /// default: what the model's catalogue entry says, else 3).
    #[arg(long, value_name = "N")]
    pub check_matches: Option<usize>,
    /// Whether final answers start with lines quoted whole from what the tools returned, then
    /// the model's own words (default: what the model's catalogue entry says, else false).
    #[arg(long, value_name = "BOOL")]
    pub quote_answers: Option<bool>,
    /// Show the model a worked example of a run in its protocol's format.
    #[arg(long)]
    pub few_shot: bool,
    /// Context size in tokens.
    #[arg(long, value_name = "TOKENS")]
    pub ctx: Option<u32>,
    /// CPU threads.
    #[arg(long)]
    pub threads: Option<u32>,
    /// The KV cache's element type: f16 (default), q8_0 or q4_0.
    #[arg(long, value_name = "TYPE", value_parser = super::models::parse_kv_cache)]
    pub kv_cache: Option<burrow::llm::llama::KvCacheType>,
    /// Write every scored run as a JSON line to this file as it completes (with --search:
    /// each question's rank and first ten items, per way of searching).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the results as one JSON object at the end.
    #[arg(long)]
    pub json: bool,
    /// Measure search alone (no model runs): these ways of searching, comma-separated, of
    /// words, meaning, hybrid and naive (SQLite FTS5's defaults over one row per item).
    #[arg(long, value_delimiter = ',', value_name = "MODES")]
    pub search: Vec<String>,
    /// The runs search by words only, even where the workspace has vectors (by default they
    /// also rank by meaning, as `burrow ask` does).
    #[arg(long)]
    pub words_only: bool,
    /// Embedding model for the runs' searches and for --search meaning and hybrid: a GGUF
    /// path or a catalogue id.
    #[arg(long, value_name = "MODEL")]
    pub embedding_model: Option<String>,
    /// Reciprocal rank fusion's constant for --search hybrid (default: Burrow's).
    #[arg(long, value_name = "K")]
    pub fusion_k: Option<f64>,
}

pub fn eval(home: &BurrowHome, args: EvalArgs) -> Result<ExitCode> {
    if is_task_set(&args.questions) {
        return task_eval(home, &args);
    }
    let mut questions = read_questions(&args.questions)?;
    chosen(&args, &mut questions, |q| (&q.id, &q.split))?;
    if !args.search.is_empty() {
        return search_eval(home, &args, &questions);
    }
    let app = App::open(home.clone())?;
    // Before any model loads: an empty workspace is said at once.
    app.check_answerable()?;
    // The runs' searches rank as a user's do, by meaning as well where the workspace has
    // vectors, and so does the baseline's: the agent is measured against the search it has.
    super::search_by_meaning(&app, args.words_only, args.embedding_model.as_deref())?;
    let base = baseline(app.workspace(), &questions)?;
    let mut out = out_file(&args)?;
    let mut runs: Vec<Scored> = Vec::new();
    let mut summaries: Vec<Summary> = Vec::new();
    each_model_and_protocol(home, &app, &args, &mut |model, config| {
        let mut these: Vec<Scored> = Vec::new();
        for q in &questions {
            let s = app.eval_question(model, config.clone(), q, &mut |_| {})?;
            if !args.json {
                eprintln!("{}", super::term(&line(&s)));
            }
            if let Some(f) = out.as_mut() {
                writeln!(f, "{}", serde_json::to_string(&s)?)?;
            }
            these.push(s);
        }
        summaries.push(summarize(&these));
        runs.extend(these);
        Ok(())
    })?;
    if args.json {
        let json = serde_json::json!({
            "questions": questions.len(),
            "baseline": base,
            "summaries": summaries,
            "runs": runs,
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print_table(&summaries, &base);
    }
    Ok(ExitCode::SUCCESS)
}

/// `burrow eval` on a task set: each answer scored part by part, summarized per kind.
fn task_eval(home: &BurrowHome, args: &EvalArgs) -> Result<ExitCode> {
    let mut tasks = read_tasks(&args.questions)?;
    chosen(args, &mut tasks, |t| (&t.id, &t.split))?;
    if !args.search.is_empty() {
        bail!(
            "--search measures question sets; {} holds tasks",
            args.questions.display()
        );
    }
    let app = App::open(home.clone())?;
    app.check_answerable()?;
    super::search_by_meaning(&app, args.words_only, args.embedding_model.as_deref())?;
    let mut out = out_file(args)?;
    let mut runs: Vec<ScoredTask> = Vec::new();
    let mut summaries: Vec<TaskSummary> = Vec::new();
    each_model_and_protocol(home, &app, args, &mut |model, config| {
        let mut these: Vec<ScoredTask> = Vec::new();
        for t in &tasks {
            let s = app.eval_task(model, config.clone(), t, &mut |_| {})?;
            if !args.json {
                eprintln!("{}", super::term(&task_line(&s)));
            }
            if let Some(f) = out.as_mut() {
                writeln!(f, "{}", serde_json::to_string(&s)?)?;
            }
            these.push(s);
        }
        summaries.extend(summarize_tasks(&these));
        runs.extend(these);
        Ok(())
    })?;
    if args.json {
        let json = serde_json::json!({"tasks": tasks.len(), "summaries": summaries, "runs": runs});
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<32} {:<12} {:<14} {:>4} {:>8} {:>6} {:>6} {:>6} {:>6} {:>9}",
        "model",
        "protocol",
        "kind",
        "n",
        "accuracy",
        "called",
        "acted",
        "steps",
        "unseen",
        "median s"
    );
    for s in &summaries {
        println!(
            "{:<32} {:<12} {:<14} {:>4} {:>8.2} {:>6.2} {:>6.2} {:>6.1} {:>6} {:>9.1}",
            s.model,
            s.protocol,
            s.kind,
            s.tasks,
            s.accuracy,
            s.model_called,
            s.model_acted,
            s.median_steps,
            s.unseen,
            s.median_wall_s
        );
    }
    println!(
        "accuracy: every part of the answer is in it, and it lists no candidates in place of one; \
         called: the model wrote a workspace call itself; acted: one with arguments not the \
         task's own words"
    );
    Ok(ExitCode::SUCCESS)
}

/// Keeps the entries `--split`, `--only` and `--limit` choose, and refuses an empty choice.
fn chosen<T>(
    args: &EvalArgs,
    entries: &mut Vec<T>,
    id_split: impl Fn(&T) -> (&String, &String),
) -> Result<()> {
    if let Some(split) = &args.split {
        entries.retain(|e| id_split(e).1 == split);
    }
    if !args.only.is_empty() {
        entries.retain(|e| args.only.contains(id_split(e).0));
    }
    if let Some(n) = args.limit {
        entries.truncate(n);
    }
    if entries.is_empty() {
        bail!("no question of {} is left to ask", args.questions.display());
    }
    Ok(())
}

fn out_file(args: &EvalArgs) -> Result<Option<std::fs::File>> {
    args.out
        .as_ref()
        .map(|p| std::fs::File::create(p).with_context(|| format!("cannot write {}", p.display())))
        .transpose()
}

/// Loads each model the arguments name in turn and calls `f` with it and each protocol's
/// agent configuration.
fn each_model_and_protocol(
    home: &BurrowHome,
    app: &App,
    args: &EvalArgs,
    f: &mut dyn FnMut(&dyn burrow::llm::engine::LanguageModel, &AgentConfig) -> Result<()>,
) -> Result<()> {
    let protocols: Vec<Protocol> = if args.protocol == "all" {
        PROTOCOLS.to_vec()
    } else {
        vec![protocol(&args.protocol)?]
    };
    let models: Vec<Option<String>> = if args.models.is_empty() {
        vec![None]
    } else {
        args.models.iter().cloned().map(Some).collect()
    };
    for model in models {
        let model_args = ModelArgs {
            model,
            ctx: args.ctx,
            threads: args.threads,
            gpu_layers: None,
            kv_cache: args.kv_cache,
            backend: None,
            backend_model: None,
            api_key_env: None,
            backend_llguidance: false,
        };
        let loaded = load_model(home, &model_args)?;
        for &p in &protocols {
            let config = AgentConfig {
                protocol: p,
                max_steps: args.max_steps,
                search_first: !args.no_search_first,
                route_first: !args.no_route,
                check_matches: args.check_matches,
                quote_answers: args.quote_answers,
                few_shot: args.few_shot,
                task_context: app.task_context()?,
                ..Default::default()
            };
            f(&*loaded.model, &config)?;
        }
    }
    Ok(())
}

fn task_line(s: &ScoredTask) -> String {
    let parts: String = s.parts.iter().map(|p| if *p { '✓' } else { '✗' }).collect();
    format!(
        "{} {} [{} {}] parts {parts}{}, {} steps, model called [{}], {:.1} s, {}",
        if s.correct { "✓" } else { "✗" },
        s.id,
        s.model,
        s.protocol,
        if s.too_many { " (too many named)" } else { "" },
        s.steps,
        s.model_calls.join(" "),
        s.wall_s,
        s.status.as_str(),
    )
}

fn line(s: &Scored) -> String {
    format!(
        "{} {} [{} {}] {} steps, {:.1} s, {}{}{}",
        if s.correct { "✓" } else { "✗" },
        s.id,
        s.model,
        s.protocol,
        s.steps,
        s.wall_s,
        s.status.as_str(),
        if s.named.is_empty() {
            String::new()
        } else {
            format!(", named {}", s.named.join(" "))
        },
        if s.unseen.is_empty() {
            String::new()
        } else {
            format!(", never seen: {}", s.unseen.join(" "))
        },
    )
}

fn print_table(summaries: &[Summary], base: &[BaselineHit]) {
    let n = base.len().max(1) as f64;
    let top1 = base.iter().filter(|b| b.correct).count() as f64 / n;
    let top5 = base.iter().filter(|b| b.in_top5).count() as f64 / n;
    println!(
        "{:<32} {:<12} {:>4} {:>8} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>9}",
        "model",
        "protocol",
        "n",
        "accuracy",
        "first",
        "tool",
        "model",
        "steps",
        "repeat",
        "unseen",
        "median s"
    );
    for s in summaries {
        println!(
            "{:<32} {:<12} {:>4} {:>8.2} {:>6.2} {:>6.2} {:>6.2} {:>6.1} {:>6} {:>6} {:>9.1}",
            s.model,
            s.protocol,
            s.questions,
            s.accuracy,
            s.first_accuracy,
            s.used_tool,
            s.model_used_tool,
            s.median_steps,
            s.repeated,
            s.unseen,
            s.median_wall_s
        );
    }
    println!(
        "baseline: search's first hit {top1:.2} (an accepted item in its first five: {top5:.2}), {} questions",
        base.len()
    );
    println!(
        "accuracy: the answer names an accepted item; first: the first item it names is one; \
         tool: a workspace tool ran; model: the model called one itself; repeat: calls identical \
         to an earlier one; unseen: items named that the run never saw"
    );
}

/// `burrow eval --search`: search alone, per mode, beside the naive floor.
fn search_eval(home: &BurrowHome, args: &EvalArgs, questions: &[Question]) -> Result<ExitCode> {
    let ws = Workspace::open(home)?;
    let modes: Vec<&str> = args.search.iter().map(String::as_str).collect();
    if modes.iter().any(|m| *m == "meaning" || *m == "hybrid") {
        let threads = args.threads.unwrap_or(1);
        let embedder = ModelEmbedder::load(home, args.embedding_model.as_deref(), threads)?;
        ws.set_query_embedder(Some(std::sync::Arc::new(embedder)));
    }
    let scores = burrow::app::eval_search::search_eval(&ws, questions, &modes, args.fusion_k)?;
    if let Some(path) = &args.out {
        let mut lines = String::new();
        for s in &scores {
            for ((id, rank), (_, items)) in s.ranks.iter().zip(&s.firsts) {
                let line =
                    serde_json::json!({"id": id, "mode": s.mode, "rank": rank, "items": items});
                lines.push_str(&line.to_string());
                lines.push('\n');
            }
        }
        std::fs::write(path, lines).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&scores)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} questions; recall@1 / recall@5 / MRR@10, then per kind recall@5",
        questions.len()
    );
    for s in &scores {
        let kinds: Vec<String> = s
            .by_kind
            .iter()
            .map(|(k, v)| format!("{k} {:.2} ({})", v.recall_at_5, v.questions))
            .collect();
        println!(
            "{:>8}: {:.2} / {:.2} / {:.2}   p50 {:.1} ms, p95 {:.1} ms   {}",
            s.mode,
            s.all.recall_at_1,
            s.all.recall_at_5,
            s.all.mrr_at_10,
            s.latency_p50_ms,
            s.latency_p95_ms,
            kinds.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
