//! Search by meaning: a vector for each searchable unit, made by an embedding model the caller
//! brings (the workspace knows nothing of llama.cpp), kept in the workspace database beside the
//! full-text index, and scanned exactly in memory. Embedding is incremental: only units whose
//! text has no vector yet are embedded, page by page, each page committed on its own, so a
//! search sees vectors arrive and a killed pass loses at most one page. Another model's set is
//! made beside the workspace's and takes its place once whole (`choose_target`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::search::Kind;
use super::text::Role;
use super::{db, db_err, Workspace, WorkspaceError};

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

/// Units read, and embedded, per committed page.
const PAGE: usize = 64;

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
    /// Gives every unit without one a vector of `embedder`'s model (all of them again when the
    /// stored vectors are another model's: beside those, which searches keep until this
    /// model's set is whole and takes their place), reporting progress after each page.
    pub fn embed_pending(
        &self,
        embedder: &mut dyn Embedder,
        on_progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<EmbedReport, WorkspaceError> {
        let mut conn = db::open(self.db_path())?;
        let name = stored_name(&embedder.name());
        let dim = embedder.dimension();
        let fingerprint = embedder.fingerprint();
        let (target, replaced_model) =
            choose_target(&mut conn, &name, dim, fingerprint.as_deref())?;
        let mut report = EmbedReport {
            replaced_model,
            ..Default::default()
        };
        let count = |conn: &Connection, sql: &str| -> Result<usize, WorkspaceError> {
            conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n as usize)
                .map_err(db_err("counting vectors"))
        };
        report.total = count(
            &conn,
            &format!(
                "SELECT count(*) FROM docs WHERE role <> {}",
                Role::Changes.to_db()
            ),
        )?;
        let mut done = count(
            &conn,
            &format!("SELECT count(*) FROM {}", target.doc_vectors()),
        )?;
        on_progress(EmbedProgress {
            done,
            total: report.total,
        });
        // Each item's own units (files, commits, an issue's or pull request's title and body)
        // first, then the comments, half of a tracker's units: search by meaning reaches every
        // item early in a pass, where in the units' order it ranked the items embedded so far
        // above the rest (68 questions, half way through: hybrid MRR@10 0.70, below words
        // alone, against 0.78 in this order and 0.81 once all are embedded).
        let (mut comments, mut after) = (false, 0i64);
        // A set made beside the workspace's is checked whole before it takes their place:
        // units indexed behind the pass's position get a sweep more (then the next pass).
        let mut sweeps = 0;
        // Texts given a vector that is a number throughout, this pass.
        let mut usable = 0;
        loop {
            let page: Vec<(i64, String)> = {
                let mut st = conn
                    .prepare_cached(&format!(
                        "SELECT d.id, d.title, d.body FROM docs d
                         WHERE d.id > ?1 AND (d.comment_id IS NOT NULL) = ?3 AND d.role <> {}
                             AND NOT EXISTS
                             (SELECT 1 FROM {} v WHERE v.doc_id = d.id)
                         ORDER BY d.id LIMIT ?2",
                        Role::Changes.to_db(),
                        target.doc_vectors()
                    ))
                    .map_err(db_err("finding units to embed"))?;
                let rows = st
                    .query_map(params![after, PAGE as i64, comments], |r| {
                        let title: String = r.get(1)?;
                        let body: String = r.get(2)?;
                        Ok((r.get(0)?, embed_text(&title, &body)))
                    })
                    .map_err(db_err("finding units to embed"))?;
                rows.collect::<Result<_, _>>()
                    .map_err(db_err("finding units to embed"))?
            };
            let Some(last) = page.last() else {
                if !comments {
                    (comments, after) = (true, 0);
                    continue;
                }
                let missing: bool = conn
                    .query_row(
                        &format!(
                            "SELECT EXISTS (SELECT 1 FROM docs d WHERE d.role <> {} AND NOT EXISTS
                                 (SELECT 1 FROM {} v WHERE v.doc_id = d.id))",
                            Role::Changes.to_db(),
                            target.doc_vectors()
                        ),
                        [],
                        |r| r.get(0),
                    )
                    .map_err(db_err("finding units to embed"))?;
                if target == Target::Next && missing && sweeps == 0 {
                    sweeps += 1;
                    (comments, after) = (false, 0);
                    continue;
                }
                break;
            };
            after = last.0;
            let hashes: Vec<Vec<u8>> = page.iter().map(|(_, t)| text_hash(t)).collect();
            // Whether each text has its vector already, and whether that is one (an empty one
            // records that the model gives this text none).
            let mut known: Vec<Option<bool>> = Vec::with_capacity(page.len());
            {
                let mut st = conn
                    .prepare_cached(&format!(
                        "SELECT length(vec) > 0 FROM {} WHERE hash = ?1",
                        target.vectors()
                    ))
                    .map_err(db_err("looking up vectors"))?;
                for h in &hashes {
                    let found = st
                        .query_row([h], |r| r.get(0))
                        .optional()
                        .map_err(db_err("looking up vectors"))?;
                    known.push(found);
                }
            }
            // The same new text twice in a page is embedded once.
            let mut fresh: HashMap<&[u8], usize> = HashMap::new();
            let mut texts = Vec::new();
            for (i, ((_, text), h)) in page.iter().zip(&hashes).enumerate() {
                if known[i].is_none() && !fresh.contains_key(h.as_slice()) {
                    fresh.insert(h.as_slice(), texts.len());
                    texts.push(text.as_str());
                }
            }
            let vectors = if texts.is_empty() {
                Vec::new()
            } else {
                embedder.embed(&texts).map_err(WorkspaceError::Embed)?
            };
            if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != dim) {
                return Err(WorkspaceError::Embed(format!(
                    "the embedding model gave {} vectors for {} texts, not all of {dim} numbers",
                    vectors.len(),
                    texts.len()
                )));
            }
            // A vector that is not a number throughout (NaN or infinite) ranks nothing, and
            // stored it would take a good one's place. A model that gives one for a few texts
            // (an f16 overflow, which the same text and model give again) leaves those units
            // without a vector: an empty one is stored for the text, which the vector index
            // skips and no pass of this model embeds again. One that has given nothing else,
            // in this pass or before, is damaged, and the pass stops.
            let unusable: HashSet<usize> = vectors
                .iter()
                .enumerate()
                .filter(|(_, v)| v.iter().any(|x| !x.is_finite()))
                .map(|(i, _)| i)
                .collect();
            usable += vectors.len() - unusable.len();
            if usable == 0 && done == 0 && !unusable.is_empty() {
                return Err(WorkspaceError::Embed(format!(
                    "{name} gave vectors that are not a number throughout (NaN or infinite) \
                     for every text it was given ({}), and has no other in the workspace: are \
                     the model's weights damaged?",
                    unusable.len()
                )));
            }
            let tx = super::index::begin_write(&mut conn, "embeddings", &mut |_| {})?;
            // Another pass (the app's, beside a CLI's) may have switched the vectors to its
            // model meanwhile: this one's would then be stored as that model's.
            let current = model_row(&tx, target.model())?;
            let ours = current
                .as_ref()
                .is_some_and(|row| is_model(row, &name, dim, fingerprint.as_deref()));
            if !ours {
                // Another pass of this very model made the set and put it in place: done.
                if target == Target::Next
                    && model_row(&tx, "embedding_model")?
                        .is_some_and(|row| is_model(&row, &name, dim, fingerprint.as_deref()))
                {
                    return Ok(report);
                }
                let other = current.map_or_else(|| "none".to_string(), |(n, _, _)| n);
                return Err(WorkspaceError::Embed(format!(
                    "another embedding pass switched the workspace's vectors to {other} while \
                     this one embedded with {name}; this one stopped"
                )));
            }
            {
                let mut put_vec = tx
                    .prepare_cached(&format!(
                        "INSERT OR IGNORE INTO {} (hash, vec) VALUES (?1, ?2)",
                        target.vectors()
                    ))
                    .map_err(db_err("saving vectors"))?;
                for (h, at) in &fresh {
                    let vec = if unusable.contains(at) {
                        Vec::new()
                    } else {
                        to_blob(&vectors[*at])
                    };
                    put_vec
                        .execute(params![h, vec])
                        .map_err(db_err("saving vectors"))?;
                }
                // A unit the indexer removed meanwhile gets no vector; nor does one whose
                // vector, known when the page was read, another pass's cleanup removed since
                // (it stays to embed, where it would have pointed at nothing).
                let mut put_doc = tx
                    .prepare_cached(&format!(
                        "INSERT OR REPLACE INTO {d} (doc_id, hash)
                         SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM docs WHERE id = ?1)
                             AND EXISTS (SELECT 1 FROM {v} WHERE hash = ?2)",
                        d = target.doc_vectors(),
                        v = target.vectors()
                    ))
                    .map_err(db_err("saving vectors"))?;
                // A unit whose text changed since its page was read (indexed again meanwhile,
                // or removed and its id given to a new unit) is left to embed: given this
                // vector, it kept its old text's for good.
                let mut text_now = tx
                    .prepare_cached("SELECT title, body FROM docs WHERE id = ?1")
                    .map_err(db_err("saving vectors"))?;
                // Each row written moves `vector_changes` (a trigger), which tells searches to
                // reload their vectors.
                for ((id, _), h) in page.iter().zip(&hashes) {
                    let now: Option<(String, String)> = text_now
                        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                        .map_err(db_err("saving vectors"))?;
                    if now.is_none_or(|(title, body)| text_hash(&embed_text(&title, &body)) != *h) {
                        continue;
                    }
                    put_doc
                        .execute(params![id, h])
                        .map_err(db_err("saving vectors"))?;
                }
            }
            tx.commit().map_err(db_err("saving vectors"))?;
            // Units of texts the model gives no vector: found now, or before.
            let none: Vec<bool> = hashes
                .iter()
                .zip(&known)
                .map(|(h, k)| match k {
                    Some(usable) => !usable,
                    None => fresh
                        .get(h.as_slice())
                        .is_some_and(|at| unusable.contains(at)),
                })
                .collect();
            let embedded = none.iter().filter(|n| !**n).count();
            report.embedded += embedded;
            // Units given a vector made before (the same text elsewhere, or earlier in the page).
            report.reused += embedded - (fresh.len() - unusable.len());
            done += page.len();
            on_progress(EmbedProgress {
                done: done.min(report.total),
                total: report.total,
            });
        }
        if target == Target::Next {
            swap_in(&mut conn, &name, dim, fingerprint.as_deref())?;
        }
        report.unembeddable = units_with_vectors(&conn, false)?;
        // Vectors no unit uses any more (their text changed, or the unit went).
        conn.execute(
            "DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM doc_vectors)",
            [],
        )
        .map_err(db_err("removing unused vectors"))?;
        Ok(report)
    }

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

/// Where a pass writes its vectors: over the workspace's own (its model is theirs, or there
/// are none to keep), or beside them until it is complete (`Target::Next`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Main,
    Next,
}

impl Target {
    fn model(self) -> &'static str {
        match self {
            Target::Main => "embedding_model",
            Target::Next => "next_embedding_model",
        }
    }
    fn vectors(self) -> &'static str {
        match self {
            Target::Main => "vectors",
            Target::Next => "next_vectors",
        }
    }
    fn doc_vectors(self) -> &'static str {
        match self {
            Target::Main => "doc_vectors",
            Target::Next => "next_doc_vectors",
        }
    }
}

/// How many units have a vector of the workspace's model (`usable`), or the empty one that
/// records the model gives their text none.
fn units_with_vectors(conn: &Connection, usable: bool) -> Result<usize, WorkspaceError> {
    conn.query_row(
        "SELECT count(*) FROM doc_vectors dv JOIN vectors v ON v.hash = dv.hash
         WHERE (length(v.vec) > 0) = ?1",
        [usable],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as usize)
    .map_err(db_err("counting vectors"))
}

type ModelRow = (String, i64, Option<String>);

fn model_row(conn: &Connection, table: &str) -> Result<Option<ModelRow>, WorkspaceError> {
    conn.query_row(
        &format!("SELECT name, dimension, fingerprint FROM {table} WHERE id = 1"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .optional()
    .map_err(db_err("reading the embedding model"))
}

/// Whether `row` is the model named `name` of `dim` dimensions whose file holds
/// `fingerprint` (a row or a model that cannot say is taken at its name).
fn is_model(row: &ModelRow, name: &str, dim: usize, fingerprint: Option<&str>) -> bool {
    let (n, d, f) = row;
    n == name && *d as usize == dim && same_file(f.as_deref(), fingerprint)
}

/// Whether two fingerprints are of one file's content; one that is not known (vectors from
/// before fingerprints, a model that cannot say) is taken as the same.
fn same_file(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

fn put_model(
    tx: &rusqlite::Transaction<'_>,
    table: &str,
    name: &str,
    dim: usize,
    fingerprint: Option<&str>,
) -> Result<(), WorkspaceError> {
    tx.execute(
        &format!(
            "INSERT INTO {table} (id, name, dimension, fingerprint) VALUES (1, ?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET name = ?1, dimension = ?2, fingerprint = ?3"
        ),
        params![name, dim as i64, fingerprint],
    )
    .map_err(db_err("recording the embedding model"))?;
    Ok(())
}

/// Where a pass of the model `name` writes (`Target`), and the model whose vectors it will
/// replace, if any.
fn choose_target(
    conn: &mut Connection,
    name: &str,
    dim: usize,
    fingerprint: Option<&str>,
) -> Result<(Target, Option<String>), WorkspaceError> {
    let tx = super::index::begin_write(conn, "embeddings", &mut |_| {})?;
    let old = model_row(&tx, "embedding_model")?;
    let target = match &old {
        Some(row) if is_model(row, name, dim, fingerprint) => {
            // The same model's vectors kept from before fingerprints: it records its own.
            if row.2.is_none() && fingerprint.is_some() {
                tx.execute(
                    "UPDATE embedding_model SET fingerprint = ?1 WHERE id = 1",
                    params![fingerprint],
                )
                .map_err(db_err("recording the embedding model"))?;
            }
            (Target::Main, None)
        }
        _ => {
            let replaced = old.as_ref().map(|(n, d, _)| {
                if n == name && *d as usize == dim {
                    format!("{n} (another file of that name)")
                } else {
                    format!("{n} ({d} dimensions)")
                }
            });
            let kept: bool = tx
                .query_row("SELECT EXISTS (SELECT 1 FROM doc_vectors)", [], |r| {
                    r.get(0)
                })
                .map_err(db_err("counting vectors"))?;
            if kept {
                // Vectors to keep: searched as they are until this model's set is whole. A
                // set begun by this model before (a pass stopped half way) goes on.
                let next = model_row(&tx, "next_embedding_model")?;
                if !next.is_some_and(|row| is_model(&row, name, dim, fingerprint)) {
                    tx.execute_batch("DELETE FROM next_doc_vectors; DELETE FROM next_vectors;")
                        .map_err(db_err("clearing another model's vectors"))?;
                    put_model(&tx, "next_embedding_model", name, dim, fingerprint)?;
                }
                (Target::Next, replaced)
            } else {
                // Nothing to keep (a new workspace, or a model recorded before any vector):
                // this model's vectors go in place at once.
                tx.execute_batch("DELETE FROM doc_vectors; DELETE FROM vectors;")
                    .map_err(db_err("clearing another model's vectors"))?;
                // `generation` (migration 4) is no longer read: the triggers of migration 5
                // count the changes searches look for.
                put_model(&tx, "embedding_model", name, dim, fingerprint)?;
                (Target::Main, replaced)
            }
        }
    };
    if target.0 == Target::Main {
        // A set another model began and never finished is of no use now.
        tx.execute_batch(
            "DELETE FROM next_doc_vectors; DELETE FROM next_vectors;
             DELETE FROM next_embedding_model;",
        )
        .map_err(db_err("clearing another model's vectors"))?;
    }
    tx.commit()
        .map_err(db_err("recording the embedding model"))?;
    Ok(target)
}

/// Puts the set a pass of `name` completed in place of the workspace's vectors, in one
/// transaction.
fn swap_in(
    conn: &mut Connection,
    name: &str,
    dim: usize,
    fingerprint: Option<&str>,
) -> Result<(), WorkspaceError> {
    let tx = super::index::begin_write(conn, "embeddings", &mut |_| {})?;
    let next = model_row(&tx, "next_embedding_model")?;
    if !next
        .as_ref()
        .is_some_and(|row| is_model(row, name, dim, fingerprint))
    {
        // Another pass of this very model put the set in place first.
        if model_row(&tx, "embedding_model")?
            .is_some_and(|row| is_model(&row, name, dim, fingerprint))
        {
            return Ok(());
        }
        let other = next.map_or_else(|| "none".to_string(), |(n, _, _)| n);
        return Err(WorkspaceError::Embed(format!(
            "another embedding pass switched the workspace's vectors to {other} while this \
             one embedded with {name}; this one stopped"
        )));
    }
    tx.execute_batch(
        "DELETE FROM doc_vectors; DELETE FROM vectors;
         INSERT INTO vectors (hash, vec)
             SELECT hash, vec FROM next_vectors
             WHERE hash IN (SELECT hash FROM next_doc_vectors);
         INSERT INTO doc_vectors (doc_id, hash) SELECT doc_id, hash FROM next_doc_vectors;
         DELETE FROM next_doc_vectors; DELETE FROM next_vectors;
         DELETE FROM next_embedding_model;",
    )
    .map_err(db_err("putting the new model's vectors in place"))?;
    put_model(&tx, "embedding_model", name, dim, fingerprint)?;
    tx.commit()
        .map_err(db_err("putting the new model's vectors in place"))?;
    Ok(())
}

/// The dot product of two vectors of one length, in 16 independent lanes: a plain
/// `zip().map().sum()` is one chain of dependent additions (floats do not reassociate), which
/// the compiler cannot turn into SIMD, and the scan spent most of its time waiting on it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0f32; LANES];
    let (a_body, a_tail) = a.split_at(a.len() / LANES * LANES);
    let (b_body, b_tail) = b.split_at(a_body.len().min(b.len()));
    for (x, y) in a_body.chunks_exact(LANES).zip(b_body.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Every unit's vector, in memory for exact scans (a few megabytes for a workspace of tens of
/// thousands of units), reloaded when an embedding pass or the indexer changed them.
pub(crate) struct VectorIndex {
    stamp: (i64, bool),
    pub(crate) model: String,
    pub(crate) fingerprint: Option<String>,
    dim: usize,
    ids: Vec<i64>,
    kinds: Vec<Kind>,
    repos: Vec<i64>,
    /// What each unit stands for among a file's: the file as a whole or a part of it.
    roles: Vec<Role>,
    data: Vec<f32>,
}

/// A ranking asked of one scan of the vectors: the `n` units nearest the query among those of
/// `kinds` (all when empty): the parts, or the files as their outlines stand for them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ask<'a> {
    pub n: usize,
    pub kinds: &'a [Kind],
    pub outlines: bool,
}

impl Role {
    fn in_ask(self, outlines: bool) -> bool {
        match self {
            Role::Part => !outlines,
            Role::Outline => outlines,
            Role::Whole => true,
            Role::Changes => false,
        }
    }
}

impl VectorIndex {
    /// The database's stamp when this was loaded (`read_stamp`).
    pub(crate) fn stamp(&self) -> (i64, bool) {
        self.stamp
    }

    /// What changes whenever a vector or the model does (one row, kept by triggers), and
    /// whether any unit has a vector.
    fn read_stamp(conn: &Connection) -> Result<(i64, bool), WorkspaceError> {
        conn.query_row(
            "SELECT n, EXISTS (SELECT 1 FROM doc_vectors) FROM vector_changes WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(db_err("checking the vectors"))
    }

    /// The index as the database holds it now, reusing `old` when nothing changed. None when
    /// no unit has a vector.
    pub(crate) fn current(
        conn: &Connection,
        old: Option<VectorIndex>,
    ) -> Result<Option<VectorIndex>, WorkspaceError> {
        let stamp = Self::read_stamp(conn)?;
        if let Some(old) = old {
            if old.stamp == stamp {
                return Ok(Some(old));
            }
        }
        // The stamp, the model and the vectors read in one snapshot: read one by one, a pass
        // that put another model's set in place between them gave an index named for the old
        // model holding the new one's vectors.
        let snapshot = conn
            .unchecked_transaction()
            .map_err(db_err("reading vectors"))?;
        let stamp = Self::read_stamp(&snapshot)?;
        if !stamp.1 {
            return Ok(None);
        }
        let (model, dim, fingerprint): (String, i64, Option<String>) = snapshot
            .query_row(
                "SELECT name, dimension, fingerprint FROM embedding_model WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(db_err("reading the embedding model"))?;
        let dim = dim as usize;
        let mut index = VectorIndex {
            stamp,
            model,
            fingerprint,
            dim,
            ids: Vec::new(),
            kinds: Vec::new(),
            repos: Vec::new(),
            roles: Vec::new(),
            data: Vec::new(),
        };
        let mut st = snapshot
            .prepare(
                "SELECT dv.doc_id, d.kind, d.repo_id, v.vec, d.role
                 FROM doc_vectors dv
                 JOIN docs d ON d.id = dv.doc_id JOIN vectors v ON v.hash = dv.hash",
            )
            .map_err(db_err("reading vectors"))?;
        let mut rows = st.query([]).map_err(db_err("reading vectors"))?;
        while let Some(r) = rows.next().map_err(db_err("reading vectors"))? {
            let bytes: Vec<u8> = r.get(3).map_err(db_err("reading vectors"))?;
            if bytes.len() != dim * 4 {
                continue;
            }
            let kind: String = r.get(1).map_err(db_err("reading vectors"))?;
            let Ok(kind) = Kind::parse(&kind) else {
                continue;
            };
            index.ids.push(r.get(0).map_err(db_err("reading vectors"))?);
            index.kinds.push(kind);
            index
                .repos
                .push(r.get(2).map_err(db_err("reading vectors"))?);
            index
                .roles
                .push(Role::from_db(r.get(4).map_err(db_err("reading vectors"))?));
            index.data.extend(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        Ok(Some(index))
    }

    /// For each of `asks`, its units closest to `query` (cosine: every vector is unit length),
    /// best first, among those of `repo`.
    /// Each unit's score is computed once for them all: the scan is bound by reading the
    /// vectors, and a question that leans to a kind asks for up to five rankings (every kind,
    /// its kind, issues, and the outlines of the two first when kept to code).
    pub(crate) fn nearest_each(
        &self,
        query: &[f32],
        asks: &[Ask],
        repo: Option<i64>,
    ) -> Result<Vec<Vec<(i64, f32)>>, WorkspaceError> {
        if query.len() != self.dim {
            return Err(WorkspaceError::BadQuery(format!(
                "the query's vector has {} numbers but the stored vectors have {} (model {}): \
                 embed the workspace again with the model in use",
                query.len(),
                self.dim,
                self.model
            )));
        }
        let wanted = |i: usize| repo.is_none_or(|r| r == self.repos[i]);
        let scores = score_rows(&self.data, self.dim, query, wanted);
        Ok(asks
            .iter()
            .map(|ask| {
                let scored = scores
                    .iter()
                    .filter(|&&(_, i)| {
                        (ask.kinds.is_empty() || ask.kinds.contains(&self.kinds[i]))
                            && self.roles[i].in_ask(ask.outlines)
                    })
                    .copied()
                    .collect();
                best_of(scored, ask.n)
                    .into_iter()
                    .map(|(i, s)| (self.ids[i], s))
                    .collect()
            })
            .collect())
    }
}

/// The exact scan behind search by meaning (public for the benchmark that compares it with
/// sqlite-vec): the `n` rows of `data` (row-major, `dim` wide, unit length) with the largest
/// dot product with `query`, among those `keep` accepts, best first, as (row, score).
pub fn nearest_in(
    data: &[f32],
    dim: usize,
    query: &[f32],
    n: usize,
    keep: impl Fn(usize) -> bool,
) -> Vec<(usize, f32)> {
    best_of(score_rows(data, dim, query, keep), n)
}

/// (score, row) for the rows of `data` that `keep` accepts, in row order.
fn score_rows(
    data: &[f32],
    dim: usize,
    query: &[f32],
    keep: impl Fn(usize) -> bool,
) -> Vec<(f32, usize)> {
    if dim == 0 || query.len() != dim {
        return Vec::new();
    }
    let mut scored: Vec<(f32, usize)> = Vec::with_capacity(data.len() / dim);
    for (i, v) in data.chunks_exact(dim).enumerate() {
        if keep(i) {
            scored.push((dot(v, query), i));
        }
    }
    scored
}

/// The `n` best of `scored`, best first, as (row, score).
fn best_of(mut scored: Vec<(f32, usize)>, n: usize) -> Vec<(usize, f32)> {
    let n = n.min(scored.len());
    if n == 0 {
        return Vec::new();
    }
    scored.select_nth_unstable_by(n - 1, |a, b| b.0.total_cmp(&a.0));
    scored.truncate(n);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(s, i)| (i, s)).collect()
}

#[cfg(test)]
mod tests {
    use super::{dot, nearest_in, Ask, Kind, Role, VectorIndex};

    /// The stamp that tells a search its vectors changed must move when a unit's vector goes
    /// with the unit (a foreign-key cascade, as when re-indexing removes a file), not only
    /// when a pass writes vectors.
    #[test]
    fn the_vectors_stamp_moves_when_a_unit_and_its_vector_are_deleted() {
        let conn = crate::workspace::db::open_in_memory().unwrap();
        conn.execute_batch(
            "INSERT INTO repos (id, name, added_at) VALUES (1, 'r', 0);
             INSERT INTO docs (id, repo_id, kind, source, source_id, title, body, terms)
             VALUES (1, 1, 'issue', 'issue', 1, 't', 'b', ''),
                    (2, 1, 'issue', 'issue', 2, 't', 'b', '');
             INSERT INTO embedding_model (id, name, dimension) VALUES (1, 'm', 2);
             INSERT INTO vectors (hash, vec) VALUES (x'01', zeroblob(8));
             INSERT INTO doc_vectors (doc_id, hash) VALUES (1, x'01'), (2, x'01');",
        )
        .unwrap();
        let before = VectorIndex::read_stamp(&conn).unwrap();
        assert!(before.1);
        conn.execute("DELETE FROM docs WHERE id = 2", []).unwrap();
        let after = VectorIndex::read_stamp(&conn).unwrap();
        assert_ne!(before, after);
        conn.execute("DELETE FROM repos", []).unwrap();
        let none = VectorIndex::read_stamp(&conn).unwrap();
        assert!(none.0 > after.0 && !none.1);
    }

    /// The rankings a leaning question asks for (every kind, its kind, issues, its kind's
    /// outlines) come from one pass over the vectors: each must be what a scan of its own
    /// gives, kinds, outlines and repository kept to.
    #[test]
    fn rankings_from_one_scan_are_those_of_a_scan_each() {
        let dim = 8;
        let n = 60;
        let kinds = [Kind::Issue, Kind::Pr, Kind::Commit, Kind::Code];
        let mut index = VectorIndex {
            stamp: (0, true),
            model: "m".into(),
            fingerprint: None,
            dim,
            ids: (0..n).map(|i| 1000 + i as i64).collect(),
            kinds: (0..n).map(|i| kinds[i % 4]).collect(),
            repos: (0..n).map(|i| (i % 3) as i64).collect(),
            roles: (0..n)
                .map(|i| [Role::Part, Role::Outline, Role::Whole][i % 5 % 3])
                .collect(),
            data: Vec::new(),
        };
        for i in 0..n {
            let v: Vec<f32> = (0..dim).map(|d| ((i * 7 + d * 3) as f32).sin()).collect();
            let norm = dot(&v, &v).sqrt();
            index.data.extend(v.iter().map(|x| x / norm));
        }
        let query: Vec<f32> = (0..dim).map(|d| (d as f32 * 0.9).cos()).collect();
        let all: &[Kind] = &[];
        let prs: &[Kind] = &[Kind::Pr];
        let issues: &[Kind] = &[Kind::Issue, Kind::Commit];
        let code: &[Kind] = &[Kind::Code, Kind::Doc];
        let ask = |n, kinds, outlines| Ask { n, kinds, outlines };
        for repo in [None, Some(1)] {
            let asks = [
                ask(10, all, false),
                ask(5, prs, false),
                ask(40, issues, false),
                ask(4, code, true),
            ];
            let got = index.nearest_each(&query, &asks, repo).unwrap();
            assert_eq!(got.len(), 4);
            let kept = |a: &Ask, i: usize| {
                (a.kinds.is_empty() || a.kinds.contains(&index.kinds[i]))
                    && match index.roles[i] {
                        Role::Part => !a.outlines,
                        Role::Outline => a.outlines,
                        Role::Whole => true,
                        Role::Changes => false,
                    }
                    && repo.is_none_or(|r| r == index.repos[i])
            };
            for (a, ranking) in asks.iter().zip(&got) {
                let alone: Vec<(i64, f32)> =
                    nearest_in(&index.data, dim, &query, a.n, |i| kept(a, i))
                        .into_iter()
                        .map(|(i, s)| (index.ids[i], s))
                        .collect();
                assert_eq!(ranking, &alone);
                assert!(!ranking.is_empty() && ranking.len() <= a.n);
                assert!(ranking.iter().all(|(id, _)| kept(a, (id - 1000) as usize)));
            }
        }
        assert!(index
            .nearest_each(&[1.0], &[ask(3, all, false)], None)
            .is_err());
    }

    #[test]
    fn dot_in_lanes_is_the_plain_dot_product_for_any_length() {
        for n in [0, 1, 15, 16, 17, 384, 390] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!((dot(&a, &b) as f64 - plain).abs() < 1e-4, "length {n}");
        }
    }
}
