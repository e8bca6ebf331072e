//! `burrow mcp`: the workspace tools over MCP on stdio, for other agents (issue 19). Stdout
//! carries the protocol and nothing else; what Burrow has to say goes to stderr.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use burrow::app::mcp_server::WorkspaceServer;
use burrow::app::App;
use burrow::config::BurrowHome;

#[derive(Args)]
pub struct McpArgs {
    /// Embedding model for searches by meaning: a GGUF path or a catalogue id (default: the
    /// settings', else the catalogue's).
    #[arg(long)]
    pub embedding_model: Option<String>,
    /// Search by words only, even where the workspace has vectors.
    #[arg(long)]
    pub words_only: bool,
}

pub fn mcp(home: &BurrowHome, args: McpArgs) -> Result<ExitCode> {
    let app = Arc::new(App::open(home.clone())?);
    super::search_by_meaning(&app, args.words_only, args.embedding_model.as_deref())?;
    // One thread for the protocol; each tool call runs on tokio's blocking pool.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(WorkspaceServer::new(app).serve_stdio())?;
    Ok(ExitCode::SUCCESS)
}
