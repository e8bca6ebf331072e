//! `burrow`: the command-line interface to Burrow's core.

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use burrow::config::BurrowHome;

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
        command: cli::models::ModelsCommand,
    },
    /// Chat with a model: streams the reply, then a line of usage and speed. Without a prompt,
    /// starts an interactive conversation.
    Chat(cli::chat::ChatArgs),
    /// Work with chat templates.
    Template {
        #[command(subcommand)]
        command: cli::template::TemplateCommand,
    },
    /// Measure prompt processing, generation, constrained generation and KV-cache reuse.
    Bench(cli::bench::BenchArgs),
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
    /// Measure the agent's answers on a question set, per model and protocol, beside the
    /// first hit of a search.
    Eval(cli::eval::EvalArgs),
    /// Turn texts into vectors with the embedding model (search by meaning), or compare them.
    Embed(cli::embed::EmbedArgs),
    /// Serve the workspace tools to other agents over MCP (stdio): the same tools, names and
    /// arguments as `burrow tool --list`, read-only.
    Mcp(cli::mcp::McpArgs),
    /// Serve the model over an OpenAI-compatible API (/v1/chat/completions, /v1/completions,
    /// /v1/embeddings, /v1/models) on this machine, for other tools and clients.
    Serve(cli::serve::ServeArgs),
    /// The agent's runs, kept with every step.
    Runs {
        #[command(subcommand)]
        command: cli::runs::RunsCommand,
    },
}

fn main() -> ExitCode {
    // Die quietly when the reader of our output goes away (`burrow ... | head`), as Unix tools
    // do, instead of failing a write.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env("BURROW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=error"));
    // Colour codes only for a terminal: an MCP client's log file (stderr is its log) filled
    // with escape sequences.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", cli::report(&e));
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let home = BurrowHome::resolve(cli.home.as_deref())?;
    match cli.command {
        Command::Models { command } => cli::models::run(&home, command),
        Command::Chat(args) => cli::chat::chat(&home, args),
        Command::Template { command } => cli::template::run(command),
        Command::Bench(args) => cli::bench::bench(&home, args),
        Command::Workspace { command } => cli::workspace::run(&home, command),
        Command::Search(args) => cli::workspace::search(&home, args),
        Command::Tool(args) => cli::workspace::tool(&home, args),
        Command::Runs { command } => cli::runs::run(&home, command),
        Command::Ask(args) => cli::ask::ask(&home, args),
        Command::Eval(args) => cli::eval::eval(&home, args),
        Command::Embed(args) => cli::embed::embed(&home, args),
        Command::Serve(args) => cli::serve::serve(&home, args),
        Command::Mcp(args) => cli::mcp::mcp(&home, args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `ask`, `search` and `eval` take `--embedding-model`; `workspace embed` and `embed`
    /// refused it (they said `--model`), so the command a user had just used to search failed
    /// when they went to embed.
    #[test]
    fn every_command_that_embeds_takes_embedding_model() {
        let cli = Cli::try_parse_from([
            "burrow",
            "workspace",
            "embed",
            "--embedding-model",
            "m.gguf",
        ])
        .unwrap();
        let Command::Workspace {
            command: cli::workspace::WorkspaceCommand::Embed { model, .. },
        } = cli.command
        else {
            panic!("not workspace embed");
        };
        assert_eq!(model.as_deref(), Some("m.gguf"));
        let cli = Cli::try_parse_from(["burrow", "embed", "--embedding-model", "m.gguf", "text"])
            .unwrap();
        let Command::Embed(args) = cli.command else {
            panic!("not embed");
        };
        assert_eq!(args.model.as_deref(), Some("m.gguf"));
    }
}
