//! Finding models: discovery over the standard places, and resolving what a user typed (a
//! catalogue id, a name, a file name or a path) to one model. Shared by the CLI and the app.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{BurrowHome, Config, ConfigError};
use crate::llm::library::fetch::{self, FetchError, FetchEvent, Fetched, Fetcher};
use crate::llm::library::{
    self, Catalogue, CatalogueEntry, Discovery, ModelInfo, ModelSource, ResolvedModel,
};
use crate::llm::llama::{LlamaEngine, LoadEvent, LoadOptions, LoadedModel};
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
