//! Search by meaning, put together: the embedding model (llama.cpp) behind the workspace's
//! `Embedder`, the workspace embedded with it, and queries given their vector. Both shells use
//! this; the workspace itself knows nothing of models.

use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};

use super::AppError;
use crate::config::BurrowHome;
use crate::llm::embed::{EmbedError, EmbeddingModel, DEFAULT_BATCH_TOKENS};
use crate::workspace::{Embedder, QueryEmbedder, SearchMode, Workspace};

/// The embedding model as the workspace sees it.
pub struct ModelEmbedder {
    model: Arc<EmbeddingModel>,
    name: String,
    /// The thread that embeds queries, in one context kept from query to query: making a
    /// context took 3-10 ms of a long question's 40 ms, on the path of every search by meaning.
    /// Started by the first query; it ends when this is dropped.
    queries: Mutex<Option<mpsc::Sender<QueryJob>>>,
}

/// A query to embed, and where its vector goes.
type QueryJob = (String, mpsc::SyncSender<Result<Vec<f32>, String>>);

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
        Ok(ModelEmbedder {
            model: Arc::new(model),
            name,
            queries: Mutex::new(None),
        })
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
        let (reply, vector) = mpsc::sync_channel(1);
        {
            let mut worker = self.queries.lock().unwrap_or_else(|e| e.into_inner());
            let sender = match worker.as_ref() {
                Some(s) => s.clone(),
                None => {
                    let s = spawn_query_worker(Arc::clone(&self.model))?;
                    *worker = Some(s.clone());
                    s
                }
            };
            if sender.send((text.to_string(), reply)).is_err() {
                // The worker is gone (it panicked): the next query starts another.
                *worker = None;
                return Err("the query embedder stopped".to_string());
            }
        }
        vector
            .recv()
            .map_err(|_| "the query embedder stopped".to_string())?
    }
}

/// Starts the thread that embeds queries one at a time, in a context it keeps. One thread: the
/// query is embedded while its words rank on the other core, and two threads fighting the
/// ranking were slower (68 questions: p95 118 ms against 78 ms). A context that failed is
/// made again for the next query.
fn spawn_query_worker(model: Arc<EmbeddingModel>) -> Result<mpsc::Sender<QueryJob>, String> {
    let (jobs, queue) = mpsc::channel::<QueryJob>();
    std::thread::Builder::new()
        .name("query-embedder".into())
        .spawn(move || {
            // Made on the first query, not here: a worker whose context failed makes another.
            let mut session = None;
            for (text, reply) in queue {
                if session.is_none() {
                    // A query takes one window: a context that size is the cheapest to keep.
                    match model.session_with_threads(0, 1) {
                        Ok(s) => session = Some(s),
                        Err(e) => {
                            let _ = reply.send(Err(e.to_string()));
                            continue;
                        }
                    }
                }
                let Some(s) = session.as_mut() else { continue };
                let result = s
                    .embed(&[text.as_str()])
                    .map_err(|e| e.to_string())
                    .and_then(|mut v| {
                        v.pop()
                            .ok_or_else(|| "the model gave no vector".to_string())
                    });
                if result.is_err() {
                    session = None;
                }
                let _ = reply.send(result);
            }
        })
        .map_err(|e| format!("could not start the query embedder: {e}"))?;
    Ok(jobs)
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
