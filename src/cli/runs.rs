//! `burrow runs`: the agent runs kept in the workspace database.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;

use burrow::agent::record::RunRecord;
use burrow::agent::RunStore;
use burrow::config::BurrowHome;
use burrow::workspace::Workspace;

#[derive(Subcommand)]
pub enum RunsCommand {
    /// The newest runs, one line each.
    List {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// One run with every step.
    Show {
        id: i64,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(home: &BurrowHome, command: RunsCommand) -> Result<ExitCode> {
    let ws = Workspace::open(home)?;
    // Runs left marked running by a process that died are interrupted, whoever looks first.
    ws.interrupt_orphaned_runs()
        .context("checking for interrupted runs")?;
    match command {
        RunsCommand::List { limit, json } => {
            let runs = ws.runs(limit)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else if runs.is_empty() {
                println!("No runs yet. Start one with: burrow ask \"...\"");
            } else {
                for r in &runs {
                    println!("{}", one_line(r));
                }
            }
        }
        RunsCommand::Show { id, json } => {
            let r = ws.run(id)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print_run(&r);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// In the user's own time zone, as the desktop app's History shows it: in UTC, unlabelled,
/// times were hours off for anyone elsewhere, and differed from the app's for the same run.
fn when(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map(|d| {
            d.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "?".into())
}

fn one_line(r: &RunRecord) -> String {
    // A task typed with new lines (the app's task box takes Shift+Enter) is one row still:
    // each of its lines read as another run.
    let task: String = super::term_line(&r.task)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(70)
        .collect();
    format!(
        "{:>5}  {}  {:<11}  {:<11}  {}",
        r.id,
        when(r.started_at),
        r.status.as_str(),
        r.protocol,
        task
    )
}

/// The lines of each step's observation `runs show` prints.
const OBSERVATION_LINES: usize = 12;

fn print_run(r: &RunRecord) {
    println!(
        "run {} [{}] {} {}, started {}",
        r.id,
        r.status.as_str(),
        r.protocol,
        super::term_line(r.model.as_deref().unwrap_or("(default model)")),
        when(r.started_at)
    );
    println!("task: {}", super::term_line(&r.task));
    for s in &r.steps {
        println!(
            "\nstep {} ({} prompt tokens, {} reused; first token {:.0} ms, decode {:.0} ms, tool {:.0} ms)",
            // Counted from 1, as `ask` and the app's timeline count (issue 17: this said
            // "step 0" where `ask` said "step 1"); the JSON keeps the 0-based index.
            s.index + 1, s.prompt_tokens, s.cached_tokens, s.ttft_ms, s.decode_ms, s.tool_ms
        );
        if !s.thought.is_empty() {
            println!("  thought: {}", super::term_line(&s.thought));
        }
        if let Some(a) = &s.action {
            println!(
                "  action: {} {}",
                super::term_line(&a.tool),
                super::term_line(&serde_json::Value::Object(a.args.clone()).to_string())
            );
        }
        if let Some(o) = &s.observation {
            for line in o.lines().take(OBSERVATION_LINES) {
                println!("  | {}", super::term_line(line));
            }
            // Cut with no sign, an observation read as all the step saw.
            let more = o.lines().count().saturating_sub(OBSERVATION_LINES);
            if more > 0 {
                println!(
                    "  | [{more} more lines: `burrow runs show {} --json` has them]",
                    r.id
                );
            }
        }
        if let Some(e) = &s.error {
            println!("  error: {}", super::term_line(e));
        }
        if let Some(f) = &s.final_answer {
            println!("  final: {}", super::term(f));
            for line in super::answer_sources(s) {
                println!("  {line}");
            }
        }
    }
    if let Some(f) = &r.final_answer {
        println!("\nfinal answer: {}", super::term(f));
    }
    if let Some(e) = &r.error {
        println!("\nerror: {}", super::term_line(e));
    }
}
