//! Search by meaning: a vector for each searchable unit, made by an embedding model the caller
//! brings (the workspace knows nothing of llama.cpp), kept in the workspace database beside the
//! full-text index, and scanned exactly in memory. Embedding is incremental: only units whose
//! text has no vector yet are embedded, page by page, each page committed on its own, so a
//! search sees vectors arrive and a killed pass loses at most one page. Another model's set is
//! made beside the workspace's and takes its place once whole (`choose_target`).

mod embed;
mod models;
mod scan;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::text::Role;
use super::{db_err, Workspace, WorkspaceError};
use models::{model_row, same_file, units_with_vectors};
pub use scan::nearest_in;
pub(crate) use scan::{Ask, VectorIndex};

/// What turns texts into vectors (the embedding model, or a fake in tests).
pub trait Embedder {
    /// Names the model, so vectors from another model are never compared with its own.
    fn name(&self) -> String;
    /// What the model's file holds, in short: another file of the same name is another model.
    /// None where it cannot say (the name alone decides).
    fn fingerprint(&self) -> Option<String> {
        None
    }
    fn dimension(&self) -> usize;
    /// One unit vector per text, in order, made from the text's start alone: its first
    /// [`MAX_EMBED_TOKENS`] tokens at most. A vector that is not a number throughout is
    /// returned as it is: the pass leaves that text's units without one.
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
}

/// What gives a query its vector while searching: the embedding model the app or the CLI keeps
/// loaded. Shared by every search (the agent's tools included), so it embeds through `&self`.
pub trait QueryEmbedder: Send + Sync {
    /// The model's name, as its [`Embedder::name`] says it: vectors stored under another name
    /// are not compared with its queries.
    fn name(&self) -> String;
    /// As [`Embedder::fingerprint`].
    fn fingerprint(&self) -> Option<String> {
        None
    }
    /// The query's unit vector.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, String>;
}

/// The most characters of a unit that are embedded: a title and the start of its text say
/// what it is about, and the cost of embedding grows with every character (a long issue body
/// would take many windows of the model for little gain).
pub const MAX_EMBED_CHARS: usize = 1_000;

/// The most tokens of a unit that are embedded, from its start: the window all-MiniLM-L6-v2
/// reads. A unit past it was read in a second, mostly short window whose vector was averaged
/// in: 12.5% of a whole-workspace pass's tokens, for ranks no better (68 questions, hybrid
/// recall@5 0.926 either way, MRR@10 0.814 and 0.812; 30 fresh ones, 0.742 and 0.749). Half
/// as many, 128, ranked worse (fresh hybrid MRR@10 0.718).
pub const MAX_EMBED_TOKENS: usize = 256;

/// How an embedding pass is going.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EmbedProgress {
    /// Units this model's pass has done (given a vector, or found to have none), of all units.
    pub done: usize,
    pub total: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EmbedReport {
    /// Units given a vector this pass.
    pub embedded: usize,
    /// Of those, units whose text already had a vector (the same text elsewhere, or before a
    /// re-index).
    pub reused: usize,
    pub total: usize,
    /// The model the vectors were made with before, when it was another one (this one's, a
    /// vector for every unit, replaced them at the end of the pass).
    pub replaced_model: Option<String>,
    /// Units without a vector because the model gives their text one that is not a number
    /// throughout (NaN or infinite), now that the pass is over: this model's passes do not try
    /// those texts again (another text, or another model, is embedded).
    pub unembeddable: usize,
}

/// The text of a unit that is embedded.
pub(crate) fn embed_text(title: &str, body: &str) -> String {
    title
        .chars()
        .chain(std::iter::once('\n'))
        .chain(body.chars())
        .take(MAX_EMBED_CHARS)
        .collect()
}

/// The name vectors of the model named `model` are stored under: the model and how a unit's
/// text is made for it (`embed_text` and the limits above). Vectors made another way are
/// another model's, so a change of either embeds everything again.
pub fn stored_name(model: &str) -> String {
    format!(
        "{model} (title and body, first {MAX_EMBED_CHARS} characters, {MAX_EMBED_TOKENS} tokens)"
    )
}

/// Gives each unit of repository `repo_id` that has no vector the one its text has already
/// (the same text indexed before, in this unit's place or another's), without the model. An
/// item imported again, or a file indexed again, is new units: the whole of a backup's issues
/// lost their vectors at each import, and search by meaning found none of them until `burrow
/// workspace embed` ran. How many units got one.
pub(crate) fn keep_vectors(tx: &Connection, repo_id: i64) -> Result<usize, WorkspaceError> {
    let any: bool = tx
        .query_row("SELECT EXISTS (SELECT 1 FROM vectors)", [], |r| r.get(0))
        .map_err(db_err("looking up vectors"))?;
    if !any {
        return Ok(0);
    }
    let units: Vec<(i64, Vec<u8>)> = {
        let mut st = tx
            .prepare_cached(&format!(
                "SELECT d.id, d.title, d.body FROM docs d
                 WHERE d.repo_id = ?1 AND d.role <> {}
                     AND NOT EXISTS (SELECT 1 FROM doc_vectors v WHERE v.doc_id = d.id)",
                Role::Changes.to_db()
            ))
            .map_err(db_err("finding units without a vector"))?;
        let rows = st
            .query_map([repo_id], |r| {
                let title: String = r.get(1)?;
                let body: String = r.get(2)?;
                Ok((r.get(0)?, text_hash(&embed_text(&title, &body))))
            })
            .map_err(db_err("finding units without a vector"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("finding units without a vector"))?
    };
    let mut put = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO doc_vectors (doc_id, hash)
             SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM vectors WHERE hash = ?2)",
        )
        .map_err(db_err("keeping vectors"))?;
    let mut kept = 0;
    for (id, hash) in units {
        kept += put
            .execute(params![id, hash])
            .map_err(db_err("keeping vectors"))?;
    }
    Ok(kept)
}

/// Vectors are kept by their text's hash; each table only ever holds one model's (see
/// `choose_target`).
fn text_hash(text: &str) -> Vec<u8> {
    Sha256::digest(text.as_bytes())[..16].to_vec()
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Workspace {
    /// Whether the vectors of the model stored as `name` are being made beside the
    /// workspace's (a pass of it began and has not finished).
    fn being_made(&self, name: &str) -> Result<bool, WorkspaceError> {
        let next = model_row(&self.conn(), "next_embedding_model")?;
        Ok(next.is_some_and(|(n, _, _)| n == name))
    }

    /// Whether the workspace's vectors are of `e`'s model (false when it has none).
    pub fn vectors_are_of(&self, e: &dyn QueryEmbedder) -> Result<bool, WorkspaceError> {
        let name = stored_name(&e.name());
        let fingerprint = e.fingerprint();
        self.with_vectors(|ix| {
            ix.is_some_and(|ix| {
                ix.model == name && same_file(ix.fingerprint.as_deref(), fingerprint.as_deref())
            })
        })
    }

    /// Sets what gives searches their query's vector (None: searches rank by words alone).
    pub fn set_query_embedder(&self, embedder: Option<Arc<dyn QueryEmbedder>>) {
        *self
            .query_embedder
            .write()
            .unwrap_or_else(|e| e.into_inner()) = embedder;
    }

    pub(crate) fn query_embedder(&self) -> Option<Arc<dyn QueryEmbedder>> {
        self.query_embedder
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Why a search cannot rank by meaning now (None: it can): no vectors, no embedding
    /// model loaded, or vectors of another model than the one loaded.
    pub fn meaning_unavailable(&self) -> Result<Option<String>, WorkspaceError> {
        let stored =
            self.with_vectors(|ix| ix.map(|ix| (ix.model.clone(), ix.fingerprint.clone())))?;
        let loaded = self
            .query_embedder()
            .map(|e| (stored_name(&e.name()), e.fingerprint()));
        Ok(match (stored, loaded) {
            (None, _) => {
                Some("no vectors yet: run `burrow workspace embed` to search by meaning".into())
            }
            (Some(_), None) => Some("the embedding model is not loaded".into()),
            (Some((stored, _)), Some((loaded, _))) if stored != loaded => {
                Some(if self.being_made(&loaded)? {
                    format!(
                        "the workspace's vectors are from {stored}; those of {loaded} are being \
                         made beside them and replace them once all are made (`burrow \
                         workspace embed` goes on with them)"
                    )
                } else {
                    format!(
                        "the workspace's vectors are from {stored}, not {loaded}: embed the \
                         workspace again (`burrow workspace embed`)"
                    )
                })
            }
            (Some((stored, a)), Some((_, b))) if !same_file(a.as_deref(), b.as_deref()) => {
                Some(format!(
                    "the workspace's vectors are from another file named as the model loaded \
                 ({stored}): embed the workspace again (`burrow workspace embed`)"
                ))
            }
            _ => None,
        })
    }

    /// Runs `f` on the vector index as the database holds it now (reloaded if the vectors
    /// changed; None when no unit has one).
    pub(crate) fn with_vectors<T>(
        &self,
        f: impl FnOnce(Option<&VectorIndex>) -> T,
    ) -> Result<T, WorkspaceError> {
        let mut guard = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
        let old = guard.take();
        *guard = VectorIndex::current(&self.conn(), old)?;
        Ok(f(guard.as_ref()))
    }

    /// Runs `f` on the vector index as last loaded, without asking the database whether it
    /// changed: for a search that must not wait for the connection another part of it holds,
    /// and checks the index's stamp against the database's afterwards (`vectors_stamp`).
    pub(crate) fn with_loaded_vectors<T>(&self, f: impl FnOnce(Option<&VectorIndex>) -> T) -> T {
        let guard = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
        f(guard.as_ref())
    }

    /// The stamp of the vectors the database holds now (None: no unit has one), the index
    /// reloaded if they changed.
    pub(crate) fn vectors_stamp(&self) -> Result<Option<(i64, bool)>, WorkspaceError> {
        self.with_vectors(|ix| ix.map(VectorIndex::stamp))
    }

    /// The model the stored vectors were made with, and how many units have one.
    pub fn vectors_status(&self) -> Result<Option<(String, usize, usize)>, WorkspaceError> {
        let conn = self.conn();
        let model: Option<(String, i64)> = conn
            .query_row(
                "SELECT name, dimension FROM embedding_model WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(db_err("reading the embedding model"))?;
        let Some((name, dim)) = model else {
            return Ok(None);
        };
        // Not the units whose text the model gives no vector (an empty one).
        let n = units_with_vectors(&conn, true)?;
        Ok(Some((name, dim as usize, n)))
    }
}
