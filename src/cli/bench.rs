//! `burrow bench`: the engine's prefill, decode, grammar, cache-reuse and depth measurements,
//! or (`--agent`) one agent run over the workspace, measured step by step.

use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::Args;

use super::models::{find_model, load_model, remote_choice, ModelArgs};
use burrow::agent::bench::bench_agent;
use burrow::agent::record::RunStatus;
use burrow::agent::AgentConfig;
use burrow::app::App;
use burrow::config::BurrowHome;
use burrow::llm::bench::{run_bench, run_served_bench, BenchOptions, BenchTests};

/// The measurements `bench` runs by default.
const DEFAULT_TESTS: &str = "prefill,decode,grammar,reuse";

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Repetitions of each measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    repetitions: usize,
    /// Which measurements: a comma-separated list of prefill, decode, grammar, reuse, depth
    /// (the first token of 48 new tokens behind 0, 700, 1600 and 2600 cached ones, with and
    /// without prefill padding), decode-depth (64 tokens decoded behind 0, 1000, 2000 and 3000
    /// cached ones, free and under the action grammar).
    #[arg(long, default_value = DEFAULT_TESTS, conflicts_with = "served")]
    tests: String,
    /// Sampling temperature for the grammar measurement (0 = greedy).
    #[arg(long, default_value_t = 0.0, conflicts_with = "served")]
    grammar_temperature: f32,
    /// Measure a local model the way a remote backend is measured (a chat turn, free decode,
    /// decode under a JSON schema, through the model interface), to set the two side by side.
    #[arg(long, conflicts_with = "agent")]
    served: bool,
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
    /// The agent's repetition penalty (default: the agent's own). 1 turns it off, as when
    /// comparing with llama-server, whose penalty also counts the prompt's last tokens.
    #[arg(long, requires = "agent")]
    repeat_penalty: Option<f32>,
    #[arg(long)]
    json: bool,
}

/// A task that keeps an agent searching: code, commits and issues, each to be cited.
const AGENT_BENCH_TASK: &str = "Survey how errors are handled in this workspace: find the error \
     types in the code, the issues that report crashes, and the commits that fixed them. Cite \
     file:line, issue numbers and commit hashes.";

pub fn bench(home: &BurrowHome, args: BenchArgs) -> Result<ExitCode> {
    if args.agent {
        return bench_agent_run(
            home,
            &args.model,
            &args.protocol,
            args.steps,
            &args.task,
            args.repeat_penalty,
            args.json,
        );
    }
    if args.served || remote_choice(home, &args.model)?.is_some() {
        // The measurements of Burrow's own engine do not apply: asked for, they are refused,
        // not ignored (clap refuses them beside --served; a remote model is known only here).
        if args.tests != DEFAULT_TESTS || args.grammar_temperature != 0.0 {
            bail!("--tests and --grammar-temperature measure Burrow's own engine, not a model served elsewhere");
        }
        // A server's engine is not Burrow's to drive: measured through the model interface.
        let model = load_model(home, &args.model)?;
        let report = run_served_bench(&*model.model, args.repetitions)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{report}");
        }
        return Ok(ExitCode::SUCCESS);
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

/// `burrow bench --agent`: one run of exactly `steps` steps over the workspace, measured.
fn bench_agent_run(
    home: &BurrowHome,
    model: &ModelArgs,
    protocol_name: &str,
    steps: usize,
    task: &str,
    repeat_penalty: Option<f32>,
    json: bool,
) -> Result<ExitCode> {
    if steps == 0 {
        bail!("--steps must be at least 1");
    }
    let protocol = super::ask::protocol(protocol_name)?;
    let app = App::open(home.clone())?;
    app.check_answerable()?;
    let mut config = AgentConfig {
        protocol,
        max_steps: steps,
        min_steps: steps,
        task_context: app.task_context()?,
        ..Default::default()
    };
    if let Some(p) = repeat_penalty {
        config.sampling.repeat_penalty = p;
        config.sampling.validate()?;
    }
    let model = load_model(home, model)?;
    let agent = app.agent(&*model.model, config)?;
    let report = bench_agent(&agent, task);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    // A run that failed is Burrow's failure (1), not a command line's (2).
    Ok(if report.status == RunStatus::Error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
