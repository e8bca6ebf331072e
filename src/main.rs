//! `burrow`: the command-line interface to Burrow's core.

mod cli;

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use burrow::config::BurrowHome;
use burrow::llm::bench::{run_bench, BenchOptions, BenchTests};
use burrow::llm::engine::human_bytes;
use burrow::llm::library::{self, ModelInfo};
use burrow::llm::llama::{LoadEvent, MemoryEstimate};
use burrow::llm::template::{fixed_clock, system_clock, ChatTemplate, TemplateError};
use burrow::llm::{
    ChatMessage, GenerateRequest, Grammar, LanguageModel, LlamaEngine, LoadOptions, LoadedModel,
    Prompt, SamplingParams,
};

#[derive(Parser)]
#[command(
    name = "burrow",
    version,
    about = "An offline agent over your repositories, with local models"
)]
struct Cli {
    /// Burrow's data directory (default: $BURROW_HOME, else the platform data directory).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List and inspect models.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// Chat with a model: streams the reply, then a line of usage and speed. Without a prompt,
    /// starts an interactive conversation.
    Chat(ChatArgs),
    /// Work with chat templates.
    Template {
        #[command(subcommand)]
        command: TemplateCommand,
    },
    /// Measure prompt processing, generation, constrained generation and KV-cache reuse.
    Bench(BenchArgs),
    /// Add, import, index and inspect the repositories and issues Burrow knows.
    Workspace {
        #[command(subcommand)]
        command: cli::workspace::WorkspaceCommand,
    },
    /// Search code, documents, commits, issues and pull requests.
    Search(cli::workspace::SearchArgs),
    /// Run one of the agent's tools and print what the model would see.
    Tool(cli::workspace::ToolArgs),
    /// Give the agent a task: it plans, searches the workspace with its tools and answers,
    /// showing each step as it happens.
    Ask(cli::ask::AskArgs),
    /// The agent's runs, kept with every step.
    Runs {
        #[command(subcommand)]
        command: cli::runs::RunsCommand,
    },
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Every GGUF model found on this machine.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Details of one model, by name, catalogue id, file name or path.
    Info {
        model: String,
        #[arg(long)]
        json: bool,
    },
    /// Search another folder for models (saved in $BURROW_HOME/config.json).
    AddDir {
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Stop searching a folder added with add-dir.
    RemoveDir {
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum TemplateCommand {
    /// Render a chat template with a context (messages, tools, add_generation_prompt, bos/eos).
    Render {
        #[arg(long, value_name = "FILE")]
        template: PathBuf,
        #[arg(long, value_name = "FILE")]
        context: PathBuf,
        /// The time `strftime_now` sees (RFC 3339); default: now.
        #[arg(long, value_name = "RFC3339")]
        now: Option<String>,
        /// Print `{"ok": true, "text": ...}` or `{"ok": false, "error": ...}`.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub(crate) struct ModelArgs {
    /// Model name, catalogue id, file name or path (default: the catalogue's default model).
    #[arg(long, short)]
    model: Option<String>,
    /// Context size in tokens.
    #[arg(long, value_name = "TOKENS")]
    ctx: Option<u32>,
    /// CPU threads.
    #[arg(long)]
    threads: Option<u32>,
    /// Layers to offload to the GPU (GPU builds).
    #[arg(long, value_name = "N")]
    gpu_layers: Option<u32>,
}

impl ModelArgs {
    fn load_options(&self) -> LoadOptions {
        LoadOptions {
            context_size: self.ctx,
            threads: self.threads,
            gpu_layers: self.gpu_layers,
            ..Default::default()
        }
    }
}

#[derive(Args)]
struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// A system message.
    #[arg(long, short)]
    system: Option<String>,
    /// At most this many tokens per reply.
    #[arg(long, value_name = "N")]
    max_tokens: Option<usize>,
    /// Constrain the reply with a grammar file: GBNF (llama.cpp's format), or Lark
    /// (llguidance's dialect) when the file name ends in `.lark`.
    #[arg(long, value_name = "FILE", conflicts_with = "json_schema")]
    grammar: Option<PathBuf>,
    /// Constrain the reply to JSON matching this JSON Schema file.
    #[arg(long, value_name = "FILE")]
    json_schema: Option<PathBuf>,
    /// Sampling temperature (0 = greedy).
    #[arg(long)]
    temperature: Option<f32>,
    #[arg(long)]
    top_k: Option<i32>,
    #[arg(long)]
    top_p: Option<f32>,
    #[arg(long)]
    min_p: Option<f32>,
    #[arg(long)]
    repeat_penalty: Option<f32>,
    #[arg(long)]
    seed: Option<u32>,
    /// Stop before this string (repeatable).
    #[arg(long = "stop", value_name = "TEXT")]
    stop: Vec<String>,
    /// Print one JSON object (text, usage, stop reason) instead of streaming.
    #[arg(long)]
    json: bool,
    /// The prompt; without it, an interactive chat reads from standard input.
    prompt: Option<String>,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Repetitions of each measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    repetitions: usize,
    /// Which measurements: a comma-separated list of prefill, decode, grammar, reuse, depth
    /// (the first token of 48 new tokens behind 0, 700, 1600 and 2600 cached ones, with and
    /// without prefill padding).
    #[arg(long, default_value = "prefill,decode,grammar,reuse")]
    tests: String,
    /// Sampling temperature for the grammar measurement (0 = greedy).
    #[arg(long, default_value_t = 0.0)]
    grammar_temperature: f32,
    /// Benchmark the agent instead: one run over the workspace, held to --steps steps, with
    /// each step's KV-cache reuse and time to first token, and where the time went.
    #[arg(long)]
    agent: bool,
    /// Steps of the agent run.
    #[arg(long, default_value_t = 12, requires = "agent")]
    steps: usize,
    /// The agent's protocol.
    #[arg(long, default_value = "json-typed", requires = "agent")]
    protocol: String,
    /// The agent's task.
    #[arg(long, default_value = AGENT_BENCH_TASK, requires = "agent")]
    task: String,
    #[arg(long)]
    json: bool,
}

/// A task that keeps an agent searching: code, commits and issues, each to be cited.
const AGENT_BENCH_TASK: &str = "Survey how errors are handled in this workspace: find the error \
     types in the code, the issues that report crashes, and the commits that fixed them. Cite \
     file:line, issue numbers and commit hashes.";

fn main() -> ExitCode {
    // Die quietly when the reader of our output goes away (`burrow ... | head`), as Unix tools
    // do, instead of failing a write.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env("BURROW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let home = BurrowHome::resolve(cli.home.as_deref())?;
    match cli.command {
        Command::Models { command } => match command {
            ModelsCommand::List { json } => models_list(&home, json),
            ModelsCommand::Info { model, json } => models_info(&home, &model, json),
            ModelsCommand::AddDir { path, json } => models_dir(&home, &path, true, json),
            ModelsCommand::RemoveDir { path, json } => models_dir(&home, &path, false, json),
        },
        Command::Chat(args) => chat(&home, args),
        Command::Template { command } => match command {
            TemplateCommand::Render {
                template,
                context,
                now,
                json,
            } => template_render(&template, &context, now.as_deref(), json),
        },
        Command::Bench(args) => bench(&home, args),
        Command::Workspace { command } => cli::workspace::run(&home, command),
        Command::Search(args) => cli::workspace::search(&home, args),
        Command::Tool(args) => cli::workspace::tool(&home, args),
        Command::Runs { command } => cli::runs::run(&home, command),
        Command::Ask(args) => cli::ask::ask(&home, args),
    }
}

fn discover(home: &BurrowHome) -> Result<library::Discovery> {
    Ok(burrow::app::models::discover(home)?)
}

fn models_list(home: &BurrowHome, json: bool) -> Result<ExitCode> {
    let found = discover(home)?;
    for p in &found.problems {
        eprintln!("warning: skipped {}", p.error);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&found.models)?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.models.is_empty() {
        println!("No models found. Fetch the default one with: python3 models/fetch.py");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<40} {:<10} {:>7} {:<8} {:>10} {:>8} {:<8} {:<18} PATH",
        "NAME", "ARCH", "PARAMS", "QUANT", "SIZE", "CONTEXT", "TEMPLATE", "FOUND IN"
    );
    for m in &found.models {
        println!(
            "{:<40} {:<10} {:>7} {:<8} {:>10} {:>8} {:<8} {:<18} {}",
            truncate(&m.name, 40),
            truncate(&m.architecture, 10),
            m.parameters_label(),
            m.quantization,
            human_bytes(m.file_size),
            m.context_length
                .map(|c| c.to_string())
                .unwrap_or_else(|| "?".into()),
            if m.has_chat_template { "yes" } else { "chatml" },
            m.source.label(),
            m.path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

fn find_model(home: &BurrowHome, query: Option<&str>) -> Result<ModelInfo> {
    Ok(burrow::app::models::find(home, query)?)
}

fn models_info(home: &BurrowHome, query: &str, json: bool) -> Result<ExitCode> {
    let found = find_model(home, Some(query))?;
    // Timed on its own: reading and validating this model's header (and its split parts).
    let started = std::time::Instant::now();
    let info = ModelInfo::from_path(&found.path, found.source)?;
    let metadata_ms = started.elapsed().as_secs_f64() * 1000.0;
    let info = ModelInfo {
        name: found.name,
        ..info
    };
    let header = burrow::llm::gguf::GgufHeader::read(&info.path)?;
    let opts = LoadOptions::default().resolve(&info)?;
    let estimate = MemoryEstimate::for_model(&info, &opts);
    if json {
        let metadata: serde_json::Map<String, serde_json::Value> = header
            .metadata
            .iter()
            .filter(|(k, _)| k != "tokenizer.chat_template")
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.to_string())))
            .collect();
        let mut out = serde_json::to_value(&info)?;
        if let Some(o) = out.as_object_mut() {
            o.insert("gguf_version".into(), header.version.into());
            o.insert("tensor_count".into(), header.tensors.len().into());
            o.insert(
                "chat_template".into(),
                header.get_str("tokenizer.chat_template").into(),
            );
            o.insert("metadata".into(), metadata.into());
            o.insert("default_context".into(), opts.context_size.into());
            o.insert("memory_estimate".into(), serde_json::to_value(estimate)?);
            o.insert("metadata_ms".into(), metadata_ms.into());
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("name:              {}", info.name);
    println!("path:              {}", info.path.display());
    println!("found in:          {}", info.source.label());
    println!(
        "architecture:      {}{}",
        info.architecture,
        if info.supported {
            ""
        } else {
            " (not supported by this build)"
        }
    );
    println!(
        "parameters:        {} ({})",
        info.parameters_label(),
        info.parameters
    );
    println!("quantization:      {}", info.quantization);
    println!(
        "file size:         {}{}",
        human_bytes(info.file_size),
        if info.split_count > 1 {
            format!(" in {} files", info.split_count)
        } else {
            String::new()
        }
    );
    println!(
        "trained context:   {}",
        info.context_length
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unknown".into())
    );
    println!(
        "chat template:     {}",
        if info.has_chat_template {
            "yes"
        } else {
            "none (ChatML is used)"
        }
    );
    if let Some(l) = &info.licence {
        println!("licence:           {l}");
    }
    println!("gguf version:      {}", header.version);
    println!("header read in:    {metadata_ms:.1} ms");
    println!("tensors:           {}", header.tensors.len());
    println!(
        "memory at {} ctx: {} (weights {}, KV cache {}, compute {})",
        opts.context_size,
        human_bytes(estimate.total()),
        human_bytes(estimate.weights),
        human_bytes(estimate.kv_cache),
        human_bytes(estimate.compute)
    );
    println!("metadata:");
    for (k, v) in &header.metadata {
        if k == "tokenizer.chat_template" {
            continue;
        }
        let text = v.to_string();
        println!("  {k} = {}", truncate(&text, 100));
    }
    Ok(ExitCode::SUCCESS)
}

/// Adds or removes a model folder in the configuration.
fn models_dir(home: &BurrowHome, path: &Path, add: bool, json: bool) -> Result<ExitCode> {
    let mut config = home.load_config()?;
    let changed = if add {
        let dir = std::fs::canonicalize(path)
            .with_context(|| format!("{}: no such folder", path.display()))?;
        if !dir.is_dir() {
            bail!("{}: not a folder", path.display());
        }
        let new = !config.model_dirs.contains(&dir);
        if new {
            config.model_dirs.push(dir);
        }
        new
    } else {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let before = config.model_dirs.len();
        config.model_dirs.retain(|d| d != path && *d != canonical);
        config.model_dirs.len() != before
    };
    if changed {
        config.save(&home.config_path())?;
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "changed": changed,
                "model_dirs": config.model_dirs,
            }))?
        );
    } else {
        let what = match (add, changed) {
            (true, true) => "added",
            (true, false) => "already listed",
            (false, true) => "removed",
            (false, false) => "was not listed",
        };
        println!("{}: {what}", path.display());
        for d in &config.model_dirs {
            println!("  {}", d.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn template_render(
    template: &Path,
    context: &Path,
    now: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let source = std::fs::read_to_string(template)
        .with_context(|| format!("cannot read the template {}", template.display()))?;
    let ctx_text = std::fs::read_to_string(context)
        .with_context(|| format!("cannot read the context {}", context.display()))?;
    let ctx: serde_json::Value = serde_json::from_str(&ctx_text)
        .with_context(|| format!("{}: invalid JSON", context.display()))?;
    let clock = match now {
        None => system_clock(),
        Some(s) => {
            let t = chrono::DateTime::parse_from_rfc3339(s)
                .with_context(|| format!("--now {s:?} is not an RFC 3339 time"))?;
            fixed_clock(t.naive_local())
        }
    };
    let rendered = ChatTemplate::with_clock(&source, clock).and_then(|t| t.render_json(&ctx));
    if json {
        let out = match &rendered {
            Ok(text) => serde_json::json!({"ok": true, "text": text}),
            Err(e) => serde_json::json!({"ok": false, "error": e.to_string()}),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(if rendered.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    match rendered {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let what = match &e {
                TemplateError::Raised { .. } => "the template raised an error",
                _ => "the template failed",
            };
            eprintln!("error: {}: {what}: {e}", template.display());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Loads a model, showing progress on a terminal.
pub(crate) fn load_model(
    home: &BurrowHome,
    args: &ModelArgs,
) -> Result<(Arc<LoadedModel>, LlamaEngine)> {
    let info = find_model(home, args.model.as_deref())?;
    let engine = LlamaEngine::new()?;
    let mut handle = engine.load_info(info.clone(), &args.load_options())?;
    let tty = std::io::stderr().is_terminal();
    let model = loop {
        match handle.blocking_next() {
            Some(LoadEvent::Progress(p)) => {
                if tty {
                    eprint!("\rloading {} {:>3.0}%", info.name, p * 100.0);
                }
            }
            Some(LoadEvent::Loaded(m)) => break m,
            Some(LoadEvent::Failed(e)) => {
                if tty {
                    eprintln!();
                }
                return Err(e.into());
            }
            None => bail!("the model thread ended without a result"),
        }
    };
    if tty {
        eprint!("\r\x1b[2K");
    }
    if model.uses_fallback_template() {
        eprintln!("note: {} has no chat template; using ChatML", info.name);
    }
    Ok((model, engine))
}

fn chat(home: &BurrowHome, args: ChatArgs) -> Result<ExitCode> {
    let grammar = match (&args.grammar, &args.json_schema) {
        (Some(g), _) => {
            let text = std::fs::read_to_string(g)
                .with_context(|| format!("cannot read the grammar {}", g.display()))?;
            Some(if g.extension().is_some_and(|e| e == "lark") {
                Grammar::Lark(text)
            } else {
                Grammar::Gbnf(text)
            })
        }
        (_, Some(s)) => {
            let text = std::fs::read_to_string(s)
                .with_context(|| format!("cannot read the JSON schema {}", s.display()))?;
            Some(Grammar::JsonSchema(
                serde_json::from_str(&text)
                    .with_context(|| format!("{}: invalid JSON", s.display()))?,
            ))
        }
        _ => None,
    };
    // Check the grammar before spending time on loading the model.
    if let Some(g) = &grammar {
        g.validate()
            .context(match (&args.grammar, &args.json_schema) {
                (Some(p), _) | (_, Some(p)) => p.display().to_string(),
                _ => String::new(),
            })?;
    }
    let mut sampling = SamplingParams::default();
    if let Some(t) = args.temperature {
        sampling.temperature = t;
    }
    if let Some(k) = args.top_k {
        sampling.top_k = k;
    }
    if let Some(p) = args.top_p {
        sampling.top_p = p;
    }
    if let Some(p) = args.min_p {
        sampling.min_p = p;
    }
    if let Some(r) = args.repeat_penalty {
        sampling.repeat_penalty = r;
    }
    sampling.seed = args.seed;
    sampling.validate()?;
    let (model, _engine) = load_model(home, &args.model)?;
    let mut messages = Vec::new();
    if let Some(s) = &args.system {
        messages.push(ChatMessage::system(s.clone()));
    }
    let make_request = |messages: &[ChatMessage]| {
        let mut req = GenerateRequest::new(Prompt::chat(messages.to_vec()))
            .sampling(sampling.clone())
            .stop(args.stop.clone());
        if let Some(g) = &grammar {
            req = req.grammar(g.clone());
        }
        if let Some(n) = args.max_tokens {
            req = req.max_tokens(n);
        }
        req
    };
    if let Some(prompt) = &args.prompt {
        messages.push(ChatMessage::user(prompt.clone()));
        let generation = model.generate(make_request(&messages))?;
        if args.json {
            let c = generation.complete()?;
            let out = serde_json::json!({
                "model": model.info().name,
                "text": c.text,
                "stop_reason": c.stop_reason,
                "usage": c.usage,
                "prefill_tokens_per_s": c.usage.prefill_tokens_per_s(),
                "decode_tokens_per_s": c.usage.decode_tokens_per_s(),
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            stream_reply(generation)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Interactive: each turn resends the conversation; the engine reuses the cached prefix.
    let interactive = std::io::stdin().is_terminal();
    // Ctrl-C stops the reply being written; at the prompt it quits.
    let replying: Arc<std::sync::Mutex<Option<burrow::llm::CancelToken>>> = Arc::default();
    if interactive {
        let replying = replying.clone();
        ctrlc::set_handler(move || match replying.lock().ok().and_then(|r| r.clone()) {
            Some(token) => token.cancel(),
            None => std::process::exit(130),
        })
        .context("cannot install the Ctrl-C handler")?;
        eprintln!(
            "Chatting with {} (context {} tokens). /reset starts over, Ctrl-C stops a reply, /exit or Ctrl-D quits.",
            model.info().name,
            model.options().context_size
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("> ");
            std::io::stderr().flush()?;
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" | "/quit" => break,
            "/reset" => {
                messages.retain(|m| m.role == "system");
                eprintln!("(conversation cleared)");
                continue;
            }
            _ => {}
        }
        messages.push(ChatMessage::user(line.to_string()));
        let generation = match model.generate(make_request(&messages)) {
            Ok(g) => g,
            Err(e) => {
                // A turn that cannot run (the conversation outgrew the context) is reported; the
                // session goes on.
                eprintln!("error: {e}");
                messages.pop();
                continue;
            }
        };
        if let Ok(mut r) = replying.lock() {
            *r = Some(generation.cancel_token());
        }
        let reply = stream_reply(generation);
        if let Ok(mut r) = replying.lock() {
            *r = None;
        }
        match reply {
            Ok(text) => messages.push(ChatMessage::assistant(text)),
            Err(e) => {
                eprintln!("error: {e:#}");
                messages.pop();
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints tokens as they arrive, then a usage line on stderr. Returns the reply.
fn stream_reply(generation: burrow::llm::Generation) -> Result<String> {
    let mut out = std::io::stdout();
    let completion = generation.wait(|t| {
        let _ = out.write_all(t.as_bytes());
        let _ = out.flush();
    })?;
    println!();
    let u = &completion.usage;
    eprintln!(
        "[{} prompt tokens ({} cached) in {:.0} ms, {:.1} tok/s | {} generated, {:.1} tok/s | first token {:.0} ms | stop: {:?}]",
        u.prompt_tokens,
        u.cached_tokens,
        u.prefill_ms,
        u.prefill_tokens_per_s(),
        u.generated_tokens,
        u.decode_tokens_per_s(),
        u.time_to_first_token_ms,
        completion.stop_reason
    );
    Ok(completion.text)
}

fn bench(home: &BurrowHome, args: BenchArgs) -> Result<ExitCode> {
    if args.agent {
        return cli::ask::bench(
            home,
            &args.model,
            &args.protocol,
            args.steps,
            &args.task,
            args.json,
        );
    }
    let info = find_model(home, args.model.model.as_deref())?;
    let report = run_bench(
        &info.path,
        &BenchOptions {
            load: args.model.load_options(),
            repetitions: args.repetitions.max(1),
            tests: BenchTests::parse(&args.tests).map_err(|e| anyhow!("--tests: {e}"))?,
            grammar_temperature: args.grammar_temperature,
        },
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}
