//! Fusion of rankings by reciprocal rank: the weights of the rankings a search fuses, the
//! rankings of files by their outlines, and the pull requests linked to the issues found.

use std::collections::HashMap;

use super::items::ItemKey;
use super::sql::{self, RawHit};
use super::{Kind, SearchQuery};
use crate::workspace::text::Role;
use crate::workspace::{db_err, Workspace, WorkspaceError};

/// Reciprocal rank fusion's constant: a unit's hybrid score is the sum over the rankings of
/// weight / (RRF_K + its rank). The paper's 60 (Cormack et al., 2009; GPT4All's too) makes
/// rank 1 and rank 5 nearly equal, and then an issue found first could not lift the pull
/// request that fixed it. Tuned on the dev questions (docs/measurements/search.md): 10 at first; 5 once words
/// ranked files by their outlines and searched for abbreviations (dev MRR@10 0.770 at 10,
/// 0.777 at 5, 0.768-0.775 at 2-8 but 6): a first place in one ranking is no longer outweighed
/// by units both rankings hold lower down.
pub const RRF_K: f64 = 5.0;

/// A query that asks for a kind: the weight of the ranking over every kind, beside the ranking
/// of that kind alone (1).
pub const ALL_KINDS_WEIGHT: f64 = 0.5;

/// The weight of "linked to an issue the query finds" beside the rankings by words and by
/// meaning, for a query asking for a pull request (tuned on the dev questions, docs/measurements/search.md).
pub const LINK_WEIGHT: f64 = 2.0;

/// The weight of the ranking of files' outlines by meaning in a search kept to code, beside
/// the parts' rankings by words and by meaning (1 each). Chosen on the dev split (25
/// questions): hybrid MRR@10 0.743 without the outlines' ranking, 0.743 at 0.5, 0.753 at 1
/// and at 2, recall@5 0.88 throughout; meaning alone 0.680 without, 0.685 at 1, 0.665 at 2.
pub const OUTLINE_WEIGHT: f64 = 1.0;

/// The weight of the ranking of files' outlines by words (the ranking by words kept to outlines
/// and files in one unit) in a search kept to code. Chosen on the dev split of the 68
/// questions: hybrid MRR@10 0.753 without it, 0.773 at 0.5 and 0.770 at 1 (recall@5 0.88 at
/// both), words alone (the questions that lean to code) 0.612 at 0.5 and 0.667 at 1.
pub const OUTLINE_WORDS_WEIGHT: f64 = 1.0;

/// The pull request units linked as fixing issue ?2 of repository ?1. Looked up by number
/// (`docs_number`): with no statistics SQLite chose the (repository, kind) index and read
/// every PR unit of the repository for each issue, 3 ms each, up to 330 ms a search; `+`
/// keeps it off that index.
pub(super) const FIXING_PRS: &str = "SELECT d.id FROM links l
     CROSS JOIN docs d ON d.repo_id = l.repo_id AND +d.kind = 'pr'
         AND d.number = l.pr AND d.comment_id IS NULL
     WHERE l.repo_id = ?1 AND l.issue = ?2 ORDER BY l.pr";

/// How deep each ranking is read for fusion.
pub const FUSE_DEPTH: usize = 100;

impl Workspace {
    /// The files' outlines among `order` (a ranking by words), in its order: the outline units,
    /// and the units that are their file's only one (each its own outline, as in the ranking
    /// by meaning).
    pub(super) fn outlines_by_words(
        order: &[(i64, f64)],
        rows: &HashMap<i64, RawHit>,
    ) -> Vec<(i64, f64)> {
        order
            .iter()
            .filter(|(id, _)| {
                rows.get(id)
                    .is_some_and(|r| r.kind == "code" && r.role != Role::Part)
            })
            .copied()
            .collect()
    }

    /// The pull requests linked as fixing the issues of `order` (their first units), each at
    /// the rank of the best issue it fixed, and their rows (filtered as `q` says).
    #[allow(clippy::type_complexity)]
    pub(super) fn fixing_prs(
        &self,
        order: &[(i64, f64)],
        rows: &HashMap<i64, RawHit>,
        depth: usize,
        q: &SearchQuery,
    ) -> Result<(Vec<(i64, usize)>, HashMap<i64, RawHit>), WorkspaceError> {
        let mut ids: Vec<(i64, usize)> = Vec::new();
        {
            let conn = self.conn();
            let mut st = conn
                .prepare_cached(FIXING_PRS)
                .map_err(db_err("reading links"))?;
            for (rank, (id, _)) in order.iter().take(depth).enumerate() {
                let Some(row) = rows.get(id) else { continue };
                let (Some(n), "issue") = (row.number, row.kind.as_str()) else {
                    continue;
                };
                let found = st
                    .query_map(rusqlite::params![row.repo_id, n], |r| r.get::<_, i64>(0))
                    .map_err(db_err("reading links"))?;
                for pr in found {
                    let pr = pr.map_err(db_err("reading links"))?;
                    if !ids.iter().any(|(seen, _)| *seen == pr) {
                        ids.push((pr, rank + 1));
                    }
                }
            }
        }
        let plain: Vec<i64> = ids.iter().map(|(id, _)| *id).collect();
        let found = sql::rows_by_ids(&self.conn(), &plain, q)?;
        ids.retain(|(id, _)| found.contains_key(id));
        Ok((ids, found))
    }
}

/// Whether the rankings kept to `q`'s kinds are fused with rankings of files by their outlines
/// (by meaning, and by words: so a search kept to code in words alone is fused too): a search
/// kept to code (and documents, as "where is …" leans) asks which file does something, which
/// the file's outline says better than any part of it. Beside other kinds it would favour code
/// over them.
pub(super) fn ranks_outlines(q: &SearchQuery) -> bool {
    q.kinds.contains(&Kind::Code) && q.kinds.iter().all(|k| matches!(k, Kind::Code | Kind::Doc))
}

/// The units of each file that the rankings `others` hold, for `to_files`.
pub(super) fn file_parts(
    others: [&Option<Vec<(i64, f64)>>; 2],
    rows: &HashMap<i64, RawHit>,
) -> HashMap<ItemKey, Vec<i64>> {
    let mut parts: HashMap<ItemKey, Vec<i64>> = HashMap::new();
    for &(id, _) in others.into_iter().flatten().flatten() {
        if let Some(r) = rows.get(&id) {
            let of_file = parts.entry(ItemKey::of(r)).or_default();
            if !of_file.contains(&id) {
                of_file.push(id);
            }
        }
    }
    parts
}

/// The ranking of outlines `outlines` given to their files: each outline's rank goes to it and
/// to every unit of its file in `parts` (`file_parts`), so that it adds to the file's best part
/// as it does to the one unit of a file that is its own outline (fusion adds up per unit).
pub(super) fn to_files(
    outlines: &[(i64, f64)],
    parts: &HashMap<ItemKey, Vec<i64>>,
    rows: &HashMap<i64, RawHit>,
) -> Vec<(i64, usize)> {
    let mut out = Vec::new();
    for (id, rank) in ranked(outlines) {
        out.push((id, rank));
        let file = rows.get(&id).and_then(|r| parts.get(&ItemKey::of(r)));
        out.extend(
            file.into_iter()
                .flatten()
                .filter(|&&p| p != id)
                .map(|&p| (p, rank)),
        );
    }
    out
}

/// Reciprocal rank fusion of weighted rankings (best first): each unit scores the sum over
/// the rankings that hold it of weight / (k + rank), rank counted from 1 (a ranking may give
/// several units one rank, or skip ranks). Best first; ties keep the
/// first ranking's order.
pub(super) fn fuse(rankings: &[(Vec<(i64, usize)>, f64)], k: f64) -> Vec<(i64, f64)> {
    let mut scores: Vec<(i64, f64)> = Vec::new();
    let mut at: HashMap<i64, usize> = HashMap::new();
    for (ranking, weight) in rankings {
        for &(id, rank) in ranking {
            let add = weight / (k + rank as f64);
            match at.get(&id) {
                Some(&i) => scores[i].1 += add,
                None => {
                    at.insert(id, scores.len());
                    scores.push((id, add));
                }
            }
        }
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    scores
}

/// A ranking's units with their ranks, counted from 1.
pub(super) fn ranked(order: &[(i64, f64)]) -> Vec<(i64, usize)> {
    order
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i + 1))
        .collect()
}
