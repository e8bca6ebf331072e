//! Search by meaning, put together: the embedding model (llama.cpp) behind the workspace's
//! `Embedder`, the workspace embedded with it, and queries given their vector. Both shells use
//! this; the workspace itself knows nothing of models.

use std::path::Path;

use super::AppError;
use crate::config::BurrowHome;
use crate::llm::embed::{EmbedError, EmbeddingModel, DEFAULT_BATCH_TOKENS};
use crate::workspace::vectors::stored_name;
use crate::workspace::{Embedder, SearchMode, SearchQuery, Workspace};

/// The embedding model as the workspace sees it.
pub struct ModelEmbedder {
    model: EmbeddingModel,
    name: String,
}

impl ModelEmbedder {
    /// Loads the embedding model `query` names (a path or a catalogue id; the catalogue's
    /// default when None).
    pub fn load(home: &BurrowHome, query: Option<&str>, threads: u32) -> Result<Self, AppError> {
        let path = super::models::embedding_model(home, query)?;
        Self::load_path(&path, threads)
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

    /// The vector of one query.
    pub fn query_vector(&self, text: &str) -> Result<Vec<f32>, AppError> {
        let mut v = self.model.embed(&[text]).map_err(embed_err)?;
        Ok(v.pop().unwrap_or_default())
    }
}

fn embed_err(e: EmbedError) -> AppError {
    AppError::Embedding(e.to_string())
}

impl Embedder for ModelEmbedder {
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

/// Gives `q` the vector its mode needs, when the workspace has vectors of `embedder`'s model.
/// Otherwise the search ranks by words, and the reason is returned (for a hybrid search; a
/// search by meaning without vectors is an error).
pub fn prepare_query(
    ws: &Workspace,
    embedder: Option<&ModelEmbedder>,
    q: &mut SearchQuery,
) -> Result<Option<String>, AppError> {
    if q.mode == SearchMode::Words {
        return Ok(None);
    }
    let why_not = match (ws.vectors_status()?, embedder) {
        (None, _) | (Some((_, _, 0)), _) => {
            "no vectors yet: run `burrow workspace embed` to search by meaning too".to_string()
        }
        (Some(_), None) => "the embedding model is not loaded".to_string(),
        (Some((stored, _, _)), Some(e)) if stored != stored_name(&e.name) => format!(
            "the workspace's vectors are from {stored}, not {}: run `burrow workspace embed`",
            e.name
        ),
        (Some(_), Some(e)) => {
            q.vector = Some(e.query_vector(&q.text)?);
            return Ok(None);
        }
    };
    if q.mode == SearchMode::Meaning {
        return Err(AppError::Embedding(format!(
            "cannot search by meaning: {why_not}"
        )));
    }
    Ok(Some(format!("ranked by words only: {why_not}")))
}
