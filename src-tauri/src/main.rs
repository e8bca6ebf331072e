//! `burrow-app`: the desktop app. With no arguments it uses the folder it was started in as the
//! default workspace and loads the default model.

use std::path::PathBuf;

use anyhow::Context;
use burrow::app::App;
use burrow::config::BurrowHome;
use burrow_app::{Shell, Startup};
use clap::Parser;

#[derive(Parser)]
#[command(
    version,
    about = "Burrow: an offline agent over your repositories and issues"
)]
struct Args {
    /// Burrow's data folder (default: $BURROW_HOME, else the platform's data folder).
    #[arg(long)]
    home: Option<PathBuf>,
    /// The default workspace: indexed on the first start (default: the current folder).
    #[arg(long, conflicts_with = "no_workspace")]
    workspace: Option<PathBuf>,
    /// Start without a default workspace.
    #[arg(long)]
    no_workspace: bool,
    /// The model to load at start: a path, name or catalogue id (default: the default model).
    #[arg(long, conflicts_with = "no_model")]
    model: Option<String>,
    /// Start without loading a model.
    #[arg(long)]
    no_model: bool,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let home = BurrowHome::resolve(args.home.as_deref())?;
    let mut app = App::open(home).context("opening Burrow's data folder")?;
    // The MCP servers the settings name: their tools join the toolbelt of the app's runs. One
    // that cannot start or answer is said here and left out.
    for problem in app.connect_mcp_servers() {
        tracing::warn!("{problem}");
    }
    let workspace = match (args.no_workspace, args.workspace) {
        (true, _) => None,
        (false, Some(dir)) => Some(dir),
        (false, None) => Some(std::env::current_dir().context("reading the current folder")?),
    };
    let startup = Startup {
        workspace,
        model: (!args.no_model).then_some(args.model),
    };
    burrow_app::builder(tauri::Builder::default(), Shell::new(app, startup))
        .run(tauri::generate_context!())
        .context("running the desktop app")?;
    Ok(())
}
