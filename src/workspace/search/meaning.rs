//! Ranking by meaning: the scans of the vectors for a query's rankings, and each ranking's
//! units that pass its filters.

use std::collections::HashMap;

use super::fusion::ranks_outlines;
use super::sql::{self, RawHit};
use super::SearchQuery;
use crate::workspace::vectors::{Ask, VectorIndex};
use crate::workspace::{Workspace, WorkspaceError};

impl Workspace {
    /// The first `depth` units for `q` of `near` (its scan of the vectors, best first with
    /// their similarity) that pass its filters, adding their rows to `rows`.
    pub(super) fn meaning_ranking(
        &self,
        q: &SearchQuery,
        near: Vec<(i64, f32)>,
        depth: usize,
        rows: &mut HashMap<i64, RawHit>,
    ) -> Result<Vec<(i64, f64)>, WorkspaceError> {
        let ids: Vec<i64> = near
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !rows.contains_key(id))
            .collect();
        let found = sql::rows_by_ids(&self.conn(), &ids, q)?;
        rows.extend(found);
        // Rows already read passed the same filters (the rankings of one search differ only
        // in kinds, which the scan applies), so only the others are read, through the filters.
        Ok(near
            .into_iter()
            .filter(|(id, _)| rows.contains_key(id))
            .take(depth)
            .map(|(id, s)| (id, f64::from(s)))
            .collect())
    }
}

/// Each of `subs`' scan of the vectors `ix` holds for `vector`: the units nearest it among
/// the kinds the ranking keeps to (and `repo`), deeper than `depth` where filters the scan
/// cannot apply will drop some; then, for each sub that `ranks_outlines`, the files' outlines
/// nearest it. None when no unit has a vector.
#[allow(clippy::type_complexity)]
pub(super) fn meaning_scans<'a>(
    ix: Option<&VectorIndex>,
    subs: &'a [SearchQuery],
    vector: &[f32],
    depth: usize,
    repo: Option<i64>,
) -> Result<Option<Vec<Vec<(i64, f32)>>>, WorkspaceError> {
    let Some(ix) = ix else { return Ok(None) };
    let ask = |q: &'a SearchQuery, outlines| Ask {
        n: scan_depth(q, depth),
        kinds: q.kinds.as_slice(),
        outlines,
    };
    let asks: Vec<Ask> = subs
        .iter()
        .map(|q| ask(q, false))
        .chain(
            subs.iter()
                .filter(|q| ranks_outlines(q))
                .map(|q| ask(q, true)),
        )
        .collect();
    ix.nearest_each(vector, &asks, repo).map(Some)
}

/// How many units a scan of the vectors reads for a ranking `depth` deep: the filters other
/// than kinds and repository are applied to the rows after it, so a filtered one reads more.
pub(super) fn scan_depth(q: &SearchQuery, depth: usize) -> usize {
    let filtered = q.state.is_some()
        || q.label.is_some()
        || q.author.is_some()
        || q.path.is_some()
        || q.since.is_some()
        || q.until.is_some();
    depth * if filtered { 10 } else { 1 }
}
