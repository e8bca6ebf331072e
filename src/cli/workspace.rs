//! `burrow workspace ...` and `burrow search`: adding, importing, indexing and searching.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use burrow::app::meaning::ModelEmbedder;
use burrow::app::search::SearchRequest;
use burrow::app::App;
use burrow::config::BurrowHome;
use burrow::workspace::{IndexEvent, IndexPhase, IndexReport, Kind, SearchMode, Workspace};

#[derive(Subcommand)]
pub enum WorkspaceCommand {
    /// Add a local folder (a git repository or any folder) and index it.
    Add {
        path: PathBuf,
        /// The name to show and search by (default: the folder's name).
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Import issues and pull requests from an export (a JSON file or a directory).
    Import {
        path: PathBuf,
        /// The repository they belong to, as OWNER/NAME.
        #[arg(long, value_name = "OWNER/NAME")]
        repo: String,
        #[arg(long)]
        json: bool,
    },
    /// The repositories in the workspace and what is indexed.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Index again what changed (one repository, or all of them).
    Reindex {
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Give every searchable unit a vector of the embedding model, so search finds by meaning
    /// too (only what has none yet; everything again after a change of model).
    Embed {
        /// Embedding model: a GGUF path or a catalogue id (default: the settings', else the
        /// catalogue's). Also `--embedding-model`, as `ask`, `search` and `eval` call it.
        #[arg(long, short, visible_alias = "embedding-model")]
        model: Option<String>,
        /// CPU threads (default: all cores).
        #[arg(long)]
        threads: Option<u32>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// code, doc, commit, issue or pr (repeatable).
    #[arg(long)]
    pub kind: Vec<String>,
    #[arg(long)]
    pub repo: Option<String>,
    /// open, closed or merged.
    #[arg(long)]
    pub state: Option<String>,
    #[arg(long)]
    pub label: Option<String>,
    #[arg(long)]
    pub author: Option<String>,
    /// Only paths matching this glob (`src/**/*.rs`, `*.md`).
    #[arg(long, value_name = "GLOB")]
    pub path: Option<String>,
    /// Only items from this date on (YYYY-MM-DD).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only items before this date (YYYY-MM-DD).
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// Results per page (1 to 100).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub limit: u16,
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// words, meaning or hybrid (both, fused; by words alone until the workspace is
    /// embedded).
    #[arg(long, default_value = "hybrid")]
    pub mode: String,
    /// Embedding model for meaning and hybrid: a GGUF path or a catalogue id.
    #[arg(long, value_name = "MODEL")]
    pub embedding_model: Option<String>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(home: &BurrowHome, command: WorkspaceCommand) -> Result<ExitCode> {
    let ws = Workspace::open(home)?;
    match command {
        WorkspaceCommand::Add { path, name, json } => {
            let repo = ws.add_repo(&path, name.as_deref())?;
            let report = index_with_progress(&ws, &repo.name, json)?;
            print_reports(&[report], json)
        }
        WorkspaceCommand::Import { path, repo, json } => {
            let report = with_progress(json, |on| ws.import(&path, &repo, on))
                .with_context(|| format!("importing {}", path.display()))?;
            print_reports(&[report], json)
        }
        WorkspaceCommand::Status { json } => {
            let status = ws.status()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else if status.is_empty() {
                println!(
                    "The workspace is empty. Add a repository with: burrow workspace add PATH"
                );
            } else {
                for s in status {
                    let r = &s.repo;
                    println!(
                        "{}  [{}{}]{}",
                        super::term_line(&r.name),
                        r.status,
                        r.error
                            .as_deref()
                            .map(|e| format!(": {}", super::term_line(e)))
                            .unwrap_or_default(),
                        r.root
                            .as_ref()
                            .map(|p| format!("  {}", super::term_line(&p.display().to_string())))
                            .unwrap_or_default()
                    );
                    println!(
                        "  {} files ({} skipped), {} commits, {} branches, {} tags, {} issues, {} pull requests, {} comments; {} search entries",
                        s.files, s.skipped_files, s.commits, s.branches, s.tags, s.issues, s.pull_requests, s.comments, s.documents
                    );
                }
                match ws.vectors_status()? {
                    Some((model, dim, n)) => println!(
                        "search by meaning: {n} units have a vector of {model} ({dim} dimensions)"
                    ),
                    None => println!("search by meaning: no vectors yet (burrow workspace embed)"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        WorkspaceCommand::Reindex { name, json } => {
            let names: Vec<String> = match name {
                Some(n) => vec![ws.repo(&n)?.name],
                None => ws
                    .repos()?
                    .into_iter()
                    .filter(|r| r.root.is_some())
                    .map(|r| r.name)
                    .collect(),
            };
            // Every repository is indexed, whichever fails: stopping at the first whose folder
            // is gone left all those after it stale, and those before it unreported.
            let mut reports = Vec::new();
            let mut failed = Vec::new();
            for n in names {
                match index_with_progress(&ws, &n, json) {
                    Ok(r) => reports.push(r),
                    Err(e) => failed.push(format!("{e:#}")),
                }
            }
            let code = print_reports(&reports, json)?;
            if failed.is_empty() {
                return Ok(code);
            }
            for f in &failed {
                eprintln!("error: {}", super::term_line(&f.to_string()));
            }
            anyhow::bail!(
                "{} of {} repositories could not be indexed",
                failed.len(),
                failed.len() + reports.len()
            )
        }
        WorkspaceCommand::Embed {
            model,
            threads,
            json,
        } => {
            let threads = threads.unwrap_or_else(super::embed::default_threads);
            let embedder = ModelEmbedder::load(home, model.as_deref(), threads)?;
            let bar = ProgressBar::new(0);
            if json {
                bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            bar.set_style(
                ProgressStyle::with_template(
                    "   embed [{bar:30}] {pos}/{len} units {per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            let started = std::time::Instant::now();
            let report = ws.embed_pending(&mut &embedder, &mut |p| {
                bar.set_length(p.total as u64);
                bar.set_position(p.done as u64);
            })?;
            bar.finish();
            let seconds = started.elapsed().as_secs_f64();
            let prompts = embedder.prompts();
            if json {
                let mut v = serde_json::to_value(&report)?;
                v["seconds"] = seconds.into();
                v["prompts"] = serde_json::to_value(prompts)?;
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                if let Some(old) = &report.replaced_model {
                    println!(
                        "note: the vectors were {old}'s; this model's, one for every unit, \
                         replace them"
                    );
                }
                if !prompts.is_empty() {
                    println!(
                        "prompts (from {}): {:?} before each query, {:?} before each unit",
                        prompts.source, prompts.query, prompts.document
                    );
                }
                println!(
                    "{} units embedded ({} reused a vector of the same text) in {seconds:.1} s; \
                     {} units in the workspace",
                    report.embedded, report.reused, report.total
                );
                if report.unembeddable > 0 {
                    println!(
                        "note: {} units have no vector: the model gives their text one that is \
                         not a number (NaN or infinite); its passes leave those texts out",
                        report.unembeddable
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn index_with_progress(ws: &Workspace, name: &str, quiet: bool) -> Result<IndexReport> {
    with_progress(quiet, |on| ws.index_repo(name, on)).with_context(|| format!("indexing {name}"))
}

/// Runs an indexing job with a progress bar per phase on stderr (hidden when not a terminal, or
/// when the output is JSON).
fn with_progress<T, E>(
    quiet: bool,
    job: impl FnOnce(&mut dyn FnMut(IndexEvent)) -> Result<T, E>,
) -> Result<T, E> {
    let multi = MultiProgress::new();
    if quiet {
        multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let mut bars: HashMap<IndexPhase, ProgressBar> = HashMap::new();
    let result = job(&mut |event| match event {
        IndexEvent::Progress {
            phase, done, total, ..
        } => {
            let bar = bars.entry(phase).or_insert_with(|| {
                let b = multi.add(ProgressBar::new(total));
                b.set_style(style.clone());
                b.set_prefix(format!("{phase:?}").to_lowercase());
                b
            });
            bar.set_length(total);
            bar.set_position(done);
        }
        IndexEvent::Note { message, .. } => {
            let _ = multi.println(format!("note: {}", super::term_line(&message)));
        }
    });
    for b in bars.values() {
        b.finish();
    }
    result
}

fn print_reports(reports: &[IndexReport], json: bool) -> Result<ExitCode> {
    if json {
        if let [one] = reports {
            println!("{}", serde_json::to_string_pretty(one)?);
        } else {
            println!("{}", serde_json::to_string_pretty(reports)?);
        }
        return Ok(ExitCode::SUCCESS);
    }
    for r in reports {
        let mut parts = Vec::new();
        if r.files_indexed + r.files_unchanged + r.files_removed > 0 || !r.files_skipped.is_empty()
        {
            parts.push(format!(
                "{} files indexed, {} unchanged, {} removed",
                r.files_indexed, r.files_unchanged, r.files_removed
            ));
        }
        if !r.files_skipped.is_empty() {
            let skipped: Vec<String> = r
                .files_skipped
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect();
            parts.push(format!("skipped: {}", skipped.join(", ")));
        }
        if r.commits_added > 0 || r.refs > 0 {
            parts.push(format!(
                "{} new commits, {} branches and tags",
                r.commits_added, r.refs
            ));
        }
        if r.commits_removed > 0 {
            parts.push(format!(
                "{} commits no branch or tag reaches any more removed",
                r.commits_removed
            ));
        }
        if r.issues + r.pull_requests + r.comments > 0 {
            parts.push(format!(
                "{} issues, {} pull requests, {} comments",
                r.issues, r.pull_requests, r.comments
            ));
        }
        if r.comments_deleted > 0 {
            parts.push(format!(
                "{} comments deleted on GitHub since the last import",
                r.comments_deleted
            ));
        }
        println!(
            "{} ({:.1} s): {}",
            super::term_line(&r.repo),
            r.elapsed_ms / 1000.0,
            parts.join("; ")
        );
        if r.plain_folder {
            println!("  note: not a git repository; indexed its files only");
        }
        for w in &r.warnings {
            println!("  warning: {w}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn search(home: &BurrowHome, args: SearchArgs) -> Result<ExitCode> {
    let kinds = args
        .kind
        .iter()
        .map(|k| Kind::parse(k))
        .collect::<Result<Vec<_>, _>>()?;
    let request = SearchRequest {
        text: args.query.clone(),
        kinds,
        repo: args.repo,
        state: args.state,
        label: args.label,
        author: args.author,
        path: args.path,
        since: args.since,
        until: args.until,
        limit: Some(usize::from(args.limit)),
        offset: args.offset,
        mode: SearchMode::parse(&args.mode)?,
    };
    let query = request.query()?;
    // The embedding model as the app's search box and `ask` take it: the settings', else the
    // catalogue's; one that cannot be loaded leaves the search to words, and its page says why
    // (this search failed instead, and ignored the settings). A model named here must load.
    // By words alone, or over a workspace with no vectors, the workspace is enough (opening
    // the app, its tools' grammars checked, doubled the 6 ms such a search takes).
    let ws = Workspace::open(home)?;
    let has_vectors = ws.vectors_status()?.is_some_and(|(_, _, n)| n > 0);
    let page = if query.mode == SearchMode::Words || !has_vectors {
        burrow::app::search::search(&ws, &query, None)?
    } else {
        drop(ws);
        let app = App::open(home.clone())?;
        let named = args.embedding_model.as_deref();
        let why_not = app.search_by_meaning(named)?;
        if let (Some(model), Some(why)) = (named, &why_not) {
            anyhow::bail!("cannot rank by meaning with {model}: {why}");
        }
        burrow::app::search::search(app.workspace(), &query, why_not)?
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&page.hits)?);
        // The hits are the JSON; why they were ranked by words alone goes beside them.
        if let Some(note) = &page.note {
            eprintln!("note: {note}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if page.hits.is_empty() {
        println!("Nothing found for {:?}.", args.query);
        // Why it ranked by words alone, where it did: the reason nothing was found by meaning.
        if let Some(note) = &page.note {
            println!("(note: {note})");
        }
        return Ok(ExitCode::SUCCESS);
    }
    for (i, h) in page.hits.iter().enumerate() {
        let linked = h
            .linked_note()
            .map(|l| format!("  ({l})"))
            .unwrap_or_default();
        let also = h
            .also_note()
            .map(|a| format!("  ({a})"))
            .unwrap_or_default();
        println!(
            "{:>2}. [{}] {} {}  {}{linked}{also}",
            args.offset + i + 1,
            h.kind,
            super::term_line(&h.repo),
            super::term_line(&h.location()),
            super::term_line(&h.title)
        );
        for line in h.snippet.lines().take(4) {
            println!("      {}", super::term_line(line));
        }
    }
    if let Some(next) = page.next_offset {
        println!("(more: --offset {next})");
    }
    if let Some(note) = &page.note {
        println!("(note: {note})");
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct ToolArgs {
    /// The tool (see --list).
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// Its arguments as a JSON object (default: {}).
    pub args: Option<String>,
    /// List the tools with their descriptions and parameters.
    #[arg(long)]
    pub list: bool,
    /// Print the tool's structured result instead of the text the model reads.
    #[arg(long)]
    pub json: bool,
}

/// Runs one agent tool and prints what the model would see.
pub fn tool(home: &BurrowHome, args: ToolArgs) -> Result<ExitCode> {
    let ws = std::sync::Arc::new(Workspace::open(home)?);
    let registry = burrow::tools::all_tools(ws)?;
    if args.list {
        let specs = registry.specs();
        if args.json {
            println!("{}", serde_json::to_string_pretty(&specs)?);
        } else {
            for s in specs {
                println!("{}: {}", s.name, s.description);
                if let Some(props) = s.parameters.get("properties").and_then(|p| p.as_object()) {
                    for (k, v) in props {
                        let d = v.get("description").and_then(|d| d.as_str()).unwrap_or("");
                        println!("    {k}: {d}");
                    }
                }
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let name = args.name.unwrap_or_default();
    let raw = args.args.unwrap_or_else(|| "{}".into());
    let value: serde_json::Value =
        serde_json::from_str(&raw).with_context(|| format!("the arguments are not JSON: {raw}"))?;
    match registry.call(&name, value) {
        Ok(out) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&out.data)?);
            } else {
                print!("{}", super::term(&out.text));
                if !out.text.ends_with('\n') {
                    println!();
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // What the model would see as the observation.
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "error": e.to_string(),
                        "retryable": e.is_retryable()
                    }))?
                );
            } else {
                eprintln!("error: {e}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
