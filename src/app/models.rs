//! Finding models: discovery over the standard places, and resolving what a user typed (a
//! catalogue id, a name, a file name or a path) to one model. Shared by the CLI and the app.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{BurrowHome, Config, ConfigError, RemoteBackend};
use crate::llm::library::fetch::{self, FetchError, FetchEvent, Fetched, Fetcher};
use crate::llm::library::{
    self, Catalogue, CatalogueEntry, Discovery, ModelInfo, ModelSource, ResolvedModel,
};
use crate::llm::llama::{LlamaEngine, LoadEvent, LoadOptions, LoadedModel};
use crate::llm::remote::{normalize_url, ApiKey, RemoteInfo, RemoteModel, RemoteOptions};
use crate::llm::LlmError;

#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Model(#[from] LlmError),
    #[error("the catalogue has no default model")]
    NoDefault,
    #[error(
        "the default model {name} ({file}) is not downloaded: download it under Models, or with `burrow models fetch`"
    )]
    DefaultMissing { name: String, file: String },
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(
        "the embedding model {name} ({file}) is not downloaded: download it with `burrow models fetch {id}`"
    )]
    EmbeddingMissing {
        id: String,
        name: String,
        file: String,
    },
    #[error("{}: not an embedding model file: {reason}", path.display())]
    NotAFile { path: PathBuf, reason: String },
}

/// The project's `models/` folder: next to the working directory, else next to the sources
/// this binary was built from.
pub fn project_models_dir() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok().map(|d| d.join("models"));
    let built = Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("models"));
    [cwd, built]
        .into_iter()
        .flatten()
        .find(|d| d.join("catalogue.json").is_file())
}

pub fn discover(home: &BurrowHome) -> Result<Discovery, ModelsError> {
    Ok(discover_with(home, &home.load_config()?))
}

fn discover_with(home: &BurrowHome, config: &Config) -> Discovery {
    let roots = library::default_roots(home, config, project_models_dir().as_deref());
    library::discover(&roots)
}

/// The model `query` names, or with none the configured default, else the catalogue's.
pub fn find(home: &BurrowHome, query: Option<&str>) -> Result<ModelInfo, ModelsError> {
    let config = home.load_config()?;
    let found = discover_with(home, &config);
    let query = match query {
        Some(q) => q.to_string(),
        None => match config.default_model {
            Some(m) => m,
            None => {
                let entry = Catalogue::builtin()
                    .default_entry()
                    .ok_or(ModelsError::NoDefault)?;
                if !found
                    .models
                    .iter()
                    .any(|m| m.catalogue_id.as_deref() == Some(&entry.id))
                {
                    return Err(ModelsError::DefaultMissing {
                        name: entry.name.clone(),
                        file: entry.file.clone(),
                    });
                }
                entry.id.clone()
            }
        },
    };
    match library::resolve(&query, &found.models)? {
        ResolvedModel::Found(m) => Ok(m.clone()),
        ResolvedModel::Path(p) => Ok(ModelInfo::from_path(&p, ModelSource::Path)?),
    }
}

/// The catalogue entry `id` names, or with none the catalogue's default.
pub fn catalogue_entry(id: Option<&str>) -> Result<&'static CatalogueEntry, ModelsError> {
    let catalogue = Catalogue::builtin();
    match id {
        Some(id) => Ok(fetch::catalogue_entry(catalogue, id)?),
        None => catalogue.default_entry().ok_or(ModelsError::NoDefault),
    }
}

/// Where a catalogue model is fetched to: the folder it is already in, else the project's
/// `models/` (where models/fetch.py puts it), else `$BURROW_HOME/models`. Discovery searches
/// these first, in this order, so `--model <id>` finds it there.
pub fn fetch_dir(home: &BurrowHome, entry: &CatalogueEntry) -> PathBuf {
    let candidates: Vec<PathBuf> = project_models_dir()
        .into_iter()
        .chain([home.models_dir()])
        .collect();
    candidates
        .iter()
        .find(|d| d.join(&entry.file).is_file())
        .or(candidates.first())
        .cloned()
        .unwrap_or_else(|| home.models_dir())
}

/// Fetches the catalogue model `id` (none: the default) into `dest`, or where
/// [`fetch_dir`] says; a file already there with the catalogue's size and sha256 is kept.
pub fn fetch(
    home: &BurrowHome,
    id: Option<&str>,
    dest: Option<&Path>,
    fetcher: &dyn Fetcher,
    on_event: &mut dyn FnMut(FetchEvent),
) -> Result<Fetched, ModelsError> {
    let entry = catalogue_entry(id)?;
    let dir = dest
        .map(Path::to_path_buf)
        .unwrap_or_else(|| fetch_dir(home, entry));
    Ok(fetch::fetch(entry, &dir, fetcher, on_event)?)
}

/// The embedding model `query` names (a path, or a catalogue id), or with none the
/// catalogue's embedding model, where `fetch_dir` puts it.
pub fn embedding_model(home: &BurrowHome, query: Option<&str>) -> Result<PathBuf, ModelsError> {
    if let Some(q) = query {
        let path = Path::new(q);
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
        // A path that is not a file is a mistyped path, not a catalogue id: said as such (it
        // was "the catalogue has no model …").
        if q.contains(std::path::MAIN_SEPARATOR) || q.contains('/') || q.ends_with(".gguf") {
            let reason = match std::fs::metadata(path) {
                Ok(m) if m.is_dir() => "it is a folder".to_string(),
                Ok(_) => "it is not a regular file".to_string(),
                Err(e) => e.to_string(),
            };
            return Err(ModelsError::NotAFile {
                path: path.to_path_buf(),
                reason,
            });
        }
    }
    let catalogue = Catalogue::builtin();
    let entry = match query {
        Some(id) => fetch::catalogue_entry(catalogue, id)?,
        None => catalogue
            .models
            .iter()
            .find(|m| m.purpose == library::Purpose::Embedding)
            .ok_or(ModelsError::NoDefault)?,
    };
    let path = fetch_dir(home, entry).join(&entry.file);
    if !path.is_file() {
        return Err(ModelsError::EmbeddingMissing {
            id: entry.id.clone(),
            name: entry.name.clone(),
            file: entry.file.clone(),
        });
    }
    Ok(path)
}

/// Loads `info` on `engine` with `options`, reporting progress from 0 to 1: the one way a
/// model is loaded, by the app and by the CLI.
pub fn load(
    engine: &LlamaEngine,
    info: ModelInfo,
    options: &LoadOptions,
    on_progress: &mut dyn FnMut(f32),
) -> Result<Arc<LoadedModel>, LlmError> {
    let mut handle = engine.load_info(info, options)?;
    loop {
        match handle.blocking_next() {
            Some(LoadEvent::Progress(p)) => on_progress(p),
            Some(LoadEvent::Loaded(m)) => return Ok(m),
            Some(LoadEvent::Failed(e)) => return Err(e),
            None => {
                return Err(LlmError::Worker(
                    "the loading thread ended without a result".into(),
                ))
            }
        }
    }
}

// ---- remote backends (issue 19) ----

/// A server named on the command line (`--backend URL`) or in the config (`-m NAME`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackendChoice {
    pub url: String,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub context_length: Option<usize>,
    /// A llama-server built with llguidance (see `RemoteOptions::llguidance`).
    pub llguidance: bool,
}

impl From<&RemoteBackend> for BackendChoice {
    fn from(b: &RemoteBackend) -> Self {
        BackendChoice {
            url: b.url.clone(),
            model: b.model.clone(),
            api_key_env: b.api_key_env.clone(),
            context_length: b.context_length,
            llguidance: b.llguidance,
        }
    }
}

impl BackendChoice {
    /// The options to connect with; the key is read from its variable now.
    pub fn options(&self) -> Result<RemoteOptions, LlmError> {
        let mut o = RemoteOptions::new(&self.url);
        o.model.clone_from(&self.model);
        o.context_length = self.context_length;
        o.llguidance = self.llguidance;
        if let Some(var) = &self.api_key_env {
            o.api_key = Some(ApiKey::from_env(var)?);
        }
        Ok(o)
    }

    pub fn connect(&self) -> Result<RemoteModel, ModelsError> {
        Ok(RemoteModel::connect(self.options()?)?)
    }
}

/// The remote backend the config calls `name`, if any.
pub fn find_remote(home: &BurrowHome, name: &str) -> Result<Option<RemoteBackend>, ModelsError> {
    Ok(home
        .load_config()?
        .remote_backends
        .into_iter()
        .find(|b| b.name == name))
}

/// A name for a backend the user did not name: the server's host and port.
fn default_remote_name(url: &str) -> String {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split('/')
        .next()
        .unwrap_or(url);
    host.replace(':', "-")
}

/// Adds (or replaces, by name) a remote backend in the config. The address is checked for its
/// form; whether the server answers now is for the caller to say (it may be off for now).
pub fn add_remote(
    home: &BurrowHome,
    url: &str,
    name: Option<&str>,
    model: Option<&str>,
    api_key_env: Option<&str>,
    llguidance: bool,
) -> Result<RemoteBackend, ModelsError> {
    let root = normalize_url(url)?;
    let name = name
        .map(str::to_string)
        .unwrap_or_else(|| default_remote_name(&root));
    let plain = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !plain {
        return Err(LlmError::InvalidLoadOption {
            option: "name",
            reason: format!(
                "{name:?}: a remote backend's name is 1-64 letters, digits, '-', '_' or '.'"
            ),
        }
        .into());
    }
    if let Some(var) = api_key_env {
        let ok = !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(LlmError::InvalidLoadOption {
                option: "api_key_env",
                reason: format!("{var:?} is not an environment variable's name"),
            }
            .into());
        }
    }
    let backend = RemoteBackend {
        name,
        url: root,
        model: model.map(str::to_string),
        api_key_env: api_key_env.map(str::to_string),
        context_length: None,
        llguidance,
    };
    let mut config = home.load_config()?;
    config.remote_backends.retain(|b| b.name != backend.name);
    config.remote_backends.push(backend.clone());
    config.save(&home.config_path())?;
    Ok(backend)
}

/// Removes the remote backend `name`; false if there was none.
pub fn remove_remote(home: &BurrowHome, name: &str) -> Result<bool, ModelsError> {
    let mut config = home.load_config()?;
    let before = config.remote_backends.len();
    config.remote_backends.retain(|b| b.name != name);
    let removed = config.remote_backends.len() != before;
    if removed {
        config.save(&home.config_path())?;
    }
    Ok(removed)
}

/// A configured remote backend and whether it answers now.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RemoteStatus {
    #[serde(flatten)]
    pub backend: RemoteBackend,
    pub reachable: bool,
    /// What the server said when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<RemoteInfo>,
    /// Why it could not be reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A remote backend and whether it answers now (connecting costs at most its connect
/// timeout).
pub fn probe(b: &RemoteBackend) -> RemoteStatus {
    match BackendChoice::from(b).connect() {
        Ok(m) => RemoteStatus {
            backend: b.clone(),
            reachable: true,
            info: Some(m.info().clone()),
            problem: None,
        },
        Err(e) => RemoteStatus {
            backend: b.clone(),
            reachable: false,
            info: None,
            problem: Some(e.to_string()),
        },
    }
}

/// Every configured remote backend, each probed (in parallel: an unreachable one costs its
/// connect timeout once, not once per backend).
pub fn remote_statuses(home: &BurrowHome) -> Result<Vec<RemoteStatus>, ModelsError> {
    let backends = home.load_config()?.remote_backends;
    Ok(std::thread::scope(|s| {
        let probes: Vec<_> = backends
            .iter()
            .map(|b| (b, s.spawn(move || probe(b))))
            .collect();
        probes
            .into_iter()
            .map(|(b, p)| {
                p.join().unwrap_or_else(|_| RemoteStatus {
                    backend: b.clone(),
                    reachable: false,
                    info: None,
                    problem: Some("the probe failed".into()),
                })
            })
            .collect()
    }))
}
