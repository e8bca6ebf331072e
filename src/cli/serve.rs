//! `burrow serve`: the model over an OpenAI-compatible API (issue 19), until Ctrl-C. Stdout
//! carries one line, the API's base URL (for scripts, with `--port 0`); the rest goes to
//! stderr.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use burrow::app::serve::{self, ServeOptions, Server};
use burrow::config::BurrowHome;
use burrow::llm::remote::ApiKey;

use super::models::{load_model, ModelArgs};

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but 127.0.0.1 (or ::1) opens the model to other machines.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port, printed on stdout).
    #[arg(long, default_value_t = 8089)]
    pub port: u16,
    /// Model name, catalogue id, file name or path (default: the catalogue's default model),
    /// or a remote backend added with `models add-remote`.
    #[arg(long, short)]
    pub model: Option<String>,
    /// Context size in tokens.
    #[arg(long, value_name = "TOKENS")]
    pub ctx: Option<u32>,
    /// CPU threads.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Layers to offload to the GPU (GPU builds).
    #[arg(long, value_name = "N")]
    pub gpu_layers: Option<u32>,
    /// The environment variable holding the key clients must send (`Authorization: Bearer
    /// KEY`); without it, any local client may use the server.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The embedding model for /v1/embeddings: a GGUF path or a catalogue id (default: the
    /// catalogue's, when downloaded). Loaded on the first request.
    #[arg(long)]
    pub embedding_model: Option<String>,
    /// Requests that may wait for the model at once; more are told the server is busy.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_waiting: usize,
}

pub fn serve(home: &BurrowHome, args: ServeArgs) -> Result<ExitCode> {
    let api_key = args
        .api_key_env
        .as_deref()
        .map(ApiKey::from_env)
        .transpose()?;
    let model_args = ModelArgs {
        model: args.model.clone(),
        ctx: args.ctx,
        threads: args.threads,
        gpu_layers: args.gpu_layers,
        kv_cache: None,
        backend: None,
        backend_model: None,
        api_key_env: None,
        backend_llguidance: false,
    };
    // An embedding model the user named must be there now; the default one may be missing
    // (then /v1/embeddings says how to download it).
    let embedding =
        match burrow::app::models::embedding_model(home, args.embedding_model.as_deref()) {
            Ok(path) => Ok(path),
            Err(e) if args.embedding_model.is_some() => return Err(e.into()),
            Err(e) => Err(e.to_string()),
        };
    let model = load_model(home, &model_args)?;
    let options = ServeOptions {
        api_key,
        max_waiting: args.max_waiting,
        embedding,
        embed_threads: super::embed::default_threads(),
        ..Default::default()
    };
    let secured = options.api_key.is_some();
    let server = Arc::new(Server::new(Some(model.model.clone()), options));
    let running = serve::start(&args.host, args.port, server)?;
    let addr = running.addr();
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: listening on {addr}, reachable from other machines{}",
            if secured {
                ""
            } else {
                ", with no API key (--api-key-env)"
            }
        );
    }
    let stopper = running.stopper();
    ctrlc::set_handler(move || stopper.stop()).context("cannot handle Ctrl-C")?;
    let d = model.model.descriptor();
    eprintln!(
        "serving {} at {} (context {} tokens); Ctrl-C stops",
        super::term_line(&d.name),
        running.url(),
        d.context_length
    );
    println!("{}", running.url());
    std::io::stdout().flush().ok();
    running.wait()?;
    eprintln!("stopped");
    Ok(ExitCode::SUCCESS)
}
