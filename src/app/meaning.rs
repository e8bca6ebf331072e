//! Search by meaning, put together: the embedding model (llama.cpp) behind the workspace's
//! `Embedder`, the workspace embedded with it, and queries given their vector. Both shells use
//! this; the workspace itself knows nothing of models.

use std::path::Path;
use std::sync::Arc;

use super::AppError;
use crate::config::BurrowHome;
use crate::llm::embed::{EmbedError, EmbeddingModel, DEFAULT_BATCH_TOKENS};
use crate::workspace::{Embedder, QueryEmbedder, SearchMode, Workspace};

/// The embedding model as the workspace sees it.
pub struct ModelEmbedder {
    model: EmbeddingModel,
    name: String,
}

impl std::fmt::Debug for ModelEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelEmbedder")
            .field("name", &self.name)
            .finish()
    }
}

impl ModelEmbedder {
    /// Loads the embedding model `query` names (a path or a catalogue id; the catalogue's
    /// default when None).
    pub fn load(home: &BurrowHome, query: Option<&str>, threads: u32) -> Result<Self, AppError> {
        let path = super::models::embedding_model(home, query)?;
        Self::load_path(&path, threads)
    }

    pub fn path(&self) -> &Path {
        self.model.path()
    }

    pub fn load_path(path: &Path, threads: u32) -> Result<Self, AppError> {
        let model = EmbeddingModel::load(path, threads).map_err(embed_err)?;
        // The file's name says which model made a vector: another file is another model.
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Ok(ModelEmbedder { model, name })
    }
}

fn embed_err(e: EmbedError) -> AppError {
    AppError::Embedding(e.to_string())
}

/// Embedding passes borrow the model, so the one loaded also serves queries meanwhile.
impl Embedder for &ModelEmbedder {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn dimension(&self) -> usize {
        self.model.dimension()
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.model
            .session(DEFAULT_BATCH_TOKENS)
            .and_then(|mut s| s.embed(texts))
            .map_err(|e| e.to_string())
    }
}

impl QueryEmbedder for ModelEmbedder {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
        // A query takes one window: a context that size is the cheapest to set up. One thread:
        // the query is embedded while its words rank on the other core, and two threads
        // fighting the ranking were slower (68 questions: p95 118 ms against 78 ms).
        let mut v = self
            .model
            .session_with_threads(0, 1)
            .and_then(|mut s| s.embed(&[text]))
            .map_err(|e| e.to_string())?;
        v.pop()
            .ok_or_else(|| "the model gave no vector".to_string())
    }
}

/// Where a `mode` search ranks by words only because the workspace cannot rank by meaning
/// now, the note that says why (a search by meaning fails with the same reason).
pub fn words_only_note(ws: &Workspace, mode: SearchMode) -> Result<Option<String>, AppError> {
    if mode != SearchMode::Hybrid {
        return Ok(None);
    }
    Ok(ws
        .meaning_unavailable()?
        .map(|why| format!("ranked by words only: {why}")))
}

/// Loads the embedding model for searches, when the workspace has vectors of it to compare
/// queries with (else nothing is loaded: the model would go unused). Installed in `ws`, so
/// every search, the agent's tools' too, ranks by meaning as well.
pub fn attach_for_search(
    home: &BurrowHome,
    ws: &Workspace,
    query: Option<&str>,
    threads: u32,
) -> Result<bool, AppError> {
    if ws.vectors_status()?.is_none_or(|(_, _, n)| n == 0) {
        return Ok(false);
    }
    let embedder = ModelEmbedder::load(home, query, threads)?;
    ws.set_query_embedder(Some(Arc::new(embedder)));
    Ok(true)
}
