//! The vectors in memory (`VectorIndex`) and the exact scan over them that ranks units by
//! their closeness to a query's vector.

use rusqlite::Connection;

use crate::workspace::search::Kind;
use crate::workspace::text::Role;
use crate::workspace::{db_err, WorkspaceError};

/// The dot product of two vectors of one length, in 16 independent lanes: a plain
/// `zip().map().sum()` is one chain of dependent additions (floats do not reassociate), which
/// the compiler cannot turn into SIMD, and the scan spent most of its time waiting on it.
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
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
    pub(super) stamp: (i64, bool),
    pub(crate) model: String,
    pub(crate) fingerprint: Option<String>,
    pub(super) dim: usize,
    pub(super) ids: Vec<i64>,
    pub(super) kinds: Vec<Kind>,
    pub(super) repos: Vec<i64>,
    /// What each unit stands for among a file's: the file as a whole or a part of it.
    pub(super) roles: Vec<Role>,
    pub(super) data: Vec<f32>,
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
    pub(super) fn read_stamp(conn: &Connection) -> Result<(i64, bool), WorkspaceError> {
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
