//! The embedding pass: `Workspace::embed_pending` gives each unit without one a vector of the
//! model the caller brings, page by page, each page committed on its own.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension};

use super::models::{choose_target, is_model, model_row, swap_in, units_with_vectors, Target};
use super::{embed_text, stored_name, text_hash, to_blob, EmbedProgress, EmbedReport, Embedder};
use crate::workspace::text::Role;
use crate::workspace::{db, db_err, Workspace, WorkspaceError};

/// Units read, and embedded, per committed page.
const PAGE: usize = 64;

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
            let tx = crate::workspace::index::begin_write(&mut conn, "embeddings", &mut |_| {})?;
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
}
