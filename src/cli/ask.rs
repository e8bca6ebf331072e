//! `burrow ask`: one agent run over the workspace, its steps printed live.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::models::{load_model, ModelArgs};
use burrow::agent::hooks::TraceHook;
use burrow::agent::prompt::PromptTemplate;
use burrow::agent::protocol::{Protocol, PROTOCOLS};
use burrow::agent::record::RunStatus;
use burrow::agent::{AgentConfig, AgentEvent, RunOutcome};
use burrow::app::App;
use burrow::config::BurrowHome;
use burrow::llm::engine::CancelToken;

#[derive(Args)]
pub struct AskArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The ReAct dialect: json-typed, json-action, json-finish, text or tool-calls (default:
    /// json-typed; a resumed run keeps its own).
    #[arg(long)]
    pub protocol: Option<String>,
    #[arg(long, default_value_t = 12)]
    pub max_steps: usize,
    /// Steps before a final answer is accepted (small models otherwise answer before they
    /// have looked).
    #[arg(long, default_value_t = 0)]
    pub min_steps: usize,
    /// Decode steps freely, without the protocol's grammar (the parser is then tolerant, and
    /// what it cannot read goes back to the model).
    #[arg(long)]
    pub no_grammar: bool,
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
    /// Write each step as a JSON line to this file as it completes.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// A prompt template of your own (minijinja, with `system()` and `observation()` macros).
    #[arg(long = "prompt", value_name = "FILE")]
    pub prompt_template: Option<PathBuf>,
    /// Who the agent is, in a line (the template's `persona`).
    #[arg(long)]
    pub persona: Option<String>,
    /// Embedding model for the run's searches: a GGUF path or a catalogue id (default: the
    /// settings', else the catalogue's). Used where the workspace has vectors of it.
    #[arg(long, value_name = "MODEL")]
    pub embedding_model: Option<String>,
    /// Search by words only, even where the workspace has vectors.
    #[arg(long, conflicts_with = "embedding_model")]
    pub words_only: bool,
    /// Print the run as one JSON object at the end instead of the steps as they happen.
    #[arg(long)]
    pub json: bool,
    /// Continue an interrupted run (see `burrow runs list`) instead of starting one.
    #[arg(long, value_name = "RUN_ID", conflicts_with = "task")]
    pub resume: Option<i64>,
    /// The task.
    #[arg(required_unless_present = "resume")]
    pub task: Option<String>,
}

pub fn protocol(name: &str) -> Result<Protocol> {
    let Some(protocol) = Protocol::parse_name(name) else {
        let names: Vec<&str> = PROTOCOLS.iter().map(|p| p.as_str()).collect();
        bail!(
            "unknown protocol {name:?}: it is one of {}",
            names.join(", ")
        );
    };
    Ok(protocol)
}

pub fn ask(home: &BurrowHome, args: AskArgs) -> Result<ExitCode> {
    // Before the model loads: `ask "$TASK"` with an empty variable ran, searched for nothing
    // and said it succeeded.
    if args.resume.is_none() && args.task.as_deref().is_none_or(|t| t.trim().is_empty()) {
        bail!("the task is empty: say what to find out (burrow ask \"Which PR fixed …?\")");
    }
    let prompt = match &args.prompt_template {
        Some(path) => PromptTemplate::from_file(path)?,
        None => PromptTemplate::builtin()?,
    };
    // Opening the app marks the runs of processes that died as interrupted.
    let mut app = App::open(home.clone())?;
    // A resumed run goes on in the dialect its steps are written in: resumed in the default
    // one, its history was read under another's grammar and prompt.
    let protocol = match (args.resume, &args.protocol) {
        (Some(id), asked) => {
            let kept = app.resumable(id)?;
            if let Some(asked) = asked.as_deref().filter(|a| *a != kept.as_str()) {
                bail!(
                    "run {id} is in the {} protocol; it cannot go on in {asked}",
                    kept.as_str()
                );
            }
            kept
        }
        (None, asked) => protocol(asked.as_deref().unwrap_or("json-typed"))?,
    };
    // The MCP servers in the settings: their tools join the toolbelt for this run.
    for problem in app.connect_mcp_servers() {
        eprintln!("{}", super::term_line(&problem.to_string()));
    }
    let mut config = AgentConfig {
        protocol,
        max_steps: args.max_steps,
        min_steps: args.min_steps,
        grammar: !args.no_grammar,
        search_first: !args.no_search_first,
        route_first: !args.no_route,
        check_matches: args.check_matches,
        quote_answers: args.quote_answers,
        few_shot: args.few_shot,
        task_context: app.task_context()?,
        ..Default::default()
    };
    if let Some(p) = &args.persona {
        config.persona = p.clone();
    }
    // Before the model loads: an empty workspace is said at once.
    app.check_answerable()?;
    super::search_by_meaning(&app, args.words_only, args.embedding_model.as_deref())?;
    let model = load_model(home, &args.model)?;
    let mut agent = app.agent(&*model.model, config)?.with_prompt(prompt);
    if let Some(path) = &args.trace {
        let hook = TraceHook::create(path)
            .with_context(|| format!("cannot write the trace {}", path.display()))?;
        agent = agent.with_hook(Arc::new(hook));
    }

    // Ctrl-C ends the run as cancelled, with every step so far kept.
    let cancel = CancelToken::new();
    let on_interrupt = cancel.clone();
    let _ = ctrlc::set_handler(move || on_interrupt.cancel());

    let mut printer = Printer::new(!args.json);
    let outcome = match args.resume {
        Some(id) => agent.resume(id, &cancel, &mut |e| printer.event(&e))?,
        None => agent.run(
            args.task.as_deref().unwrap_or_default(),
            &cancel,
            &mut |e| printer.event(&e),
        ),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&run_json(&outcome))?);
    } else {
        printer.summary(&outcome);
    }
    Ok(exit_code(outcome.status))
}

/// How a run ended, for scripts (the README's table): a run that stopped at its step limit
/// and Burrow's own failure both exited 1 (issue 17). 1 stays Burrow failing, as for every
/// command, and 2 is a command line clap refused.
fn exit_code(status: RunStatus) -> ExitCode {
    match status {
        RunStatus::Succeeded => ExitCode::SUCCESS,
        RunStatus::Failed | RunStatus::Blocked => ExitCode::from(3),
        RunStatus::MaxSteps => ExitCode::from(4),
        RunStatus::Cancelled => ExitCode::from(130),
        RunStatus::Error | RunStatus::Interrupted | RunStatus::Running => ExitCode::FAILURE,
    }
}

fn run_json(o: &RunOutcome) -> serde_json::Value {
    serde_json::json!({
        "id": o.run_id,
        "status": o.status,
        "final_answer": o.final_answer,
        "error": o.error,
        "steps": o.steps,
    })
}

/// Prints a run as it happens: the model's output streamed dimmed, then what was read from it.
struct Printer {
    live: bool,
    color: bool,
    in_output: bool,
}

impl Printer {
    fn new(live: bool) -> Self {
        Printer {
            live,
            color: std::io::stdout().is_terminal(),
            in_output: false,
        }
    }

    fn dim(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[2m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    fn end_output(&mut self) {
        if self.in_output {
            println!();
            self.in_output = false;
        }
    }

    fn event(&mut self, e: &AgentEvent) {
        if !self.live {
            return;
        }
        match e {
            AgentEvent::RunStarted {
                run_id,
                protocol,
                model,
                ..
            } => {
                let id = run_id.map(|i| format!("run {i}, ")).unwrap_or_default();
                let model = super::term_line(model);
                println!("{}", self.dim(&format!("[{id}{model}, {protocol}]")));
            }
            AgentEvent::StepStarted { index } => {
                self.end_output();
                println!("\n── step {} ──", index + 1);
            }
            AgentEvent::Token { text, .. } => {
                print!("{}", self.dim(&super::term(text)));
                self.in_output = true;
                let _ = std::io::stdout().flush();
            }
            AgentEvent::StepFinished { step } => {
                self.end_output();
                if !step.thought.is_empty() {
                    println!("thought: {}", super::term_line(&step.thought));
                }
                if let Some(a) = &step.action {
                    println!(
                        "action: {} {}",
                        super::term_line(&a.tool),
                        super::term_line(&serde_json::Value::Object(a.args.clone()).to_string())
                    );
                }
                if let Some(text) = &step.observation {
                    let label = if step.error.is_some() {
                        "error"
                    } else {
                        "observation"
                    };
                    let lines: Vec<&str> = text.lines().collect();
                    for (i, line) in lines.iter().take(15).enumerate() {
                        let head = if i == 0 {
                            format!("{label}: ")
                        } else {
                            "  ".into()
                        };
                        println!("{head}{}", super::term_line(line));
                    }
                    if lines.len() > 15 {
                        println!("  … {} more lines", lines.len() - 15);
                    }
                }
            }
            AgentEvent::TodoChanged { items } => {
                self.end_output();
                println!("plan:");
                for i in items {
                    println!(
                        "  [{}] {}: {}",
                        i.status.as_str(),
                        i.id,
                        super::term_line(&i.title)
                    );
                }
            }
            AgentEvent::ContextSummarized {
                messages_folded, ..
            } => {
                self.end_output();
                println!(
                    "{}",
                    self.dim(&format!(
                        "(context: {messages_folded} older messages summarized)"
                    ))
                );
            }
            // The raw output is already streamed; the thought is printed once it is read.
            AgentEvent::ThoughtDelta { .. } => {}
            AgentEvent::Final { .. } => self.end_output(),
            AgentEvent::Error { message } => {
                self.end_output();
                eprintln!("error: {}", super::term_line(message));
            }
        }
    }

    fn summary(&mut self, o: &RunOutcome) {
        self.end_output();
        println!();
        match &o.final_answer {
            Some(a) => {
                println!("{}", super::term(a));
                if let Some(step) = o.steps.iter().rev().find(|s| s.final_answer.is_some()) {
                    for line in super::answer_sources(step) {
                        println!("{line}");
                    }
                }
            }
            None => println!("(no answer)"),
        }
        let id = o.run_id.map(|i| format!("run {i}: ")).unwrap_or_default();
        println!(
            "{}",
            self.dim(&format!(
                "[{id}{}, {} steps{}]",
                o.status.as_str(),
                o.steps.len(),
                o.error
                    .as_deref()
                    .map(|e| format!("; {e}"))
                    .unwrap_or_default()
            ))
        );
    }
}
