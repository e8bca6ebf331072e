//! Search: BM25-ranked full-text search over every kind of unit (code, documents, commits,
//! issues, pull requests and their comments), with filters, highlighted snippets and precise
//! locations.
//!
//! This module owns the search's course, from what the user typed to a page of hits; `types`
//! holds what is asked and what comes back. The parts: `query` turns the text and filters into
//! FTS5 phrases, `plan` chooses which matches to rank (so that no search ranks too many), `sql`
//! runs the counting and ranking statements, and `snippet` locates and marks the words in each
//! hit's text. `words` ranks by words (with what `added` searches for beside them), `meaning`
//! by meaning, `fusion` fuses rankings, and `items` folds units into items and makes the page.

mod added;
mod compound;
mod fusion;
mod intent;
mod items;
mod meaning;
mod plan;
pub(crate) mod query;
mod snippet;
mod sql;
#[cfg(test)]
mod tests;
mod types;
mod words;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::vectors::QueryEmbedder;
use super::{Workspace, WorkspaceError};
use fusion::{file_parts, fuse, ranked, ranks_outlines, to_files};
use items::{fold_items, ItemKey};
use meaning::{meaning_scans, scan_depth};
use query::words;
use sql::RawHit;
use words::WordsRanking;

pub use fusion::{
    ALL_KINDS_WEIGHT, FUSE_DEPTH, LINK_WEIGHT, OUTLINE_WEIGHT, OUTLINE_WORDS_WEIGHT, RRF_K,
};
pub use intent::{asked_kinds, leaned_kinds};
pub(crate) use plan::{PhraseRows, RANK_ROWS};
pub(crate) use query::facet_token;
pub use query::fts_expression;
pub use types::{
    day_start, Kind, SearchHit, SearchMode, SearchPage, SearchQuery, MAX_LIMIT, MAX_OFFSET,
    MAX_QUERY_WORDS,
};

/// Each ranking's scan of the vectors, then its outlines' (`meaning_scans`); None when no unit
/// has a vector.
type Scans = Result<Option<Vec<Vec<(i64, f32)>>>, WorkspaceError>;

/// The query's vector, made while the words rank, with the scans of the vectors as last loaded
/// and the stamp they had (None: none were loaded); or why it could not be made.
type Made = Result<(Vec<f32>, Option<((i64, bool), Scans)>), String>;

impl Workspace {
    pub fn search(&self, q: &SearchQuery) -> Result<SearchPage, WorkspaceError> {
        let unblanked = without_blank_filters(q);
        let q = unblanked.as_ref().unwrap_or(q);
        let limit = page_limit(q)?;
        let (embedder, words_only) = self.embedder_for(q)?;
        let by_meaning = q.mode != SearchMode::Words && (q.vector.is_some() || embedder.is_some());
        let (leaning, keep) = leaning(q);
        // Asked for pull requests, or kept to them by a filter (the agent's first search is),
        // the issues the query finds are evidence for the pull requests that fixed them.
        let wants_pr = leaning.contains(&Kind::Pr) || q.kinds.contains(&Kind::Pr);
        // Kept to code, the words of the files' outlines make a ranking of their own (below).
        if !by_meaning && leaning.is_empty() && !wants_pr && !ranks_outlines(q) {
            let (rows, note) = self.words_items(q, limit)?;
            return self.page(q, rows, limit, join_notes(words_only, note));
        }
        // Every page starts from the same depth, whatever its offset and size (see below).
        let depth = FUSE_DEPTH;
        let k = q.fusion_k.unwrap_or(RRF_K);
        let leans = !leaning.is_empty();
        let subs = rankings_to_fuse(q, &keep, leaning, wants_pr);
        let repo_id = self.repo_id_of(q)?;
        let (made, words) = self.first_rankings(q, embedder.as_ref(), &subs, depth, repo_id);
        let mut words = words?;
        let mut note = join_notes(words_only, words.first_mut().and_then(|w| w.2.take()));
        let (vector, mut first_scans) = self.query_vector(q, made, &mut note)?;
        // Folded into items, the parts of a few long files or threads can fill the rankings
        // and leave the page short of items: then the rankings are read deeper. What a deeper
        // fusion adds comes after what the shallower one ranked, which stays as it was: fused
        // deeper, the same items come in another order, and pages read at different depths
        // repeated some items and skipped others.
        let needed = q.offset + limit + 1;
        let mut depth = depth;
        let mut shown: Vec<RawHit> = Vec::new();
        let mut held: HashSet<ItemKey> = HashSet::new();
        let mut first_words = Some(words);
        loop {
            let words = match first_words.take() {
                Some(w) => w,
                None if q.mode == SearchMode::Meaning => Vec::new(),
                None => self.words_rankings(&subs, depth)?,
            };
            let scans = match (&vector, first_scans.take()) {
                (None, _) => None,
                (Some(_), Some(scans)) => scans?,
                (Some(v), None) => {
                    self.with_vectors(|ix| meaning_scans(ix, &subs, v, depth, repo_id))??
                }
            };
            let mut rows: HashMap<i64, RawHit> = HashMap::new();
            let (orders, full) = self.sub_orders(&subs, words, scans, depth, k, &mut rows)?;
            let order = self.fuse_subs(q, orders, leans, depth, k, &mut rows)?;
            let units = order
                .into_iter()
                .filter_map(|(id, score)| {
                    rows.remove(&id).map(|mut r| {
                        // Higher is better here; `page` reports words' BM25 negated.
                        r.score = -score;
                        r
                    })
                })
                .filter(|r| {
                    keep.as_ref()
                        .is_none_or(|kinds| kinds.iter().any(|k| k.as_str() == r.kind))
                });
            for item in fold_items(units) {
                if held.insert(ItemKey::of(&item)) {
                    shown.push(item);
                }
            }
            if shown.len() >= needed || !full || depth > RANK_ROWS {
                let page: Vec<RawHit> = shown.into_iter().skip(q.offset).take(limit + 1).collect();
                return self.page(q, page, limit, note);
            }
            depth *= 4;
        }
    }

    /// What gives the query its vector while the words rank: none where the query has one or
    /// ranks by words alone; else the loaded model, unless the search cannot rank by meaning
    /// now. A hybrid search that cannot comes with the note that says why.
    #[allow(clippy::type_complexity)]
    fn embedder_for(
        &self,
        q: &SearchQuery,
    ) -> Result<(Option<Arc<dyn QueryEmbedder>>, Option<String>), WorkspaceError> {
        // The query's vector is given, or made by the loaded model while the words rank.
        // A hybrid search that cannot rank by meaning says why: the vectors re-made with
        // another model under a running `burrow mcp` left its searches ranked by words, and
        // worse, with nothing said.
        let mut words_only = None;
        let embedder = match (q.mode, &q.vector) {
            (SearchMode::Words, _) | (_, Some(_)) => None,
            // Without a model, hybrid is words: the vectors need not even be loaded.
            (SearchMode::Hybrid, None) if self.query_embedder().is_none() => None,
            (mode, None) => match self.meaning_unavailable()? {
                None => self.query_embedder(),
                Some(why) if mode == SearchMode::Meaning => {
                    return Err(WorkspaceError::BadQuery(format!(
                        "cannot search by meaning: {why}"
                    )))
                }
                Some(why) => {
                    words_only = Some(format!("ranked by words only: {why}"));
                    None
                }
            },
        };
        Ok((embedder, words_only))
    }

    /// The first rankings by words of `subs`, `depth` deep, and the query's vector made by
    /// `embedder` meanwhile, with the scans of the vectors made from it (`Made`).
    fn first_rankings(
        &self,
        q: &SearchQuery,
        embedder: Option<&Arc<dyn QueryEmbedder>>,
        subs: &[SearchQuery],
        depth: usize,
        repo_id: Option<i64>,
    ) -> (Option<Made>, Result<Vec<WordsRanking>, WorkspaceError>) {
        // Embedding the query (a paragraph: 25-40 ms on one core) overlaps ranking by words,
        // and so do the scans of the vectors that follow it (2-3 ms over all of them, bound by
        // memory). The ranking by words may still hold the connection, so the scans read the
        // vectors as last loaded, and the stamp they had is checked against the database's
        // once both are done: changed meanwhile, they are scanned again.
        std::thread::scope(|s| {
            let job = embedder.map(|e| {
                s.spawn(|| {
                    e.embed_query(&q.text).map(|v| {
                        let scans = self.with_loaded_vectors(|ix| {
                            ix.map(|ix| {
                                (
                                    ix.stamp(),
                                    meaning_scans(Some(ix), subs, &v, depth, repo_id),
                                )
                            })
                        });
                        (v, scans)
                    })
                })
            });
            let words: Result<Vec<_>, WorkspaceError> = if q.mode == SearchMode::Meaning {
                Ok(Vec::new())
            } else {
                self.words_rankings(subs, depth)
            };
            let made = job.map(|j| {
                j.join()
                    .unwrap_or_else(|_| Err("the embedding model stopped".to_string()))
            });
            (made, words)
        })
    }

    /// The query's vector: as made while the words ranked (with the scans made from it, where
    /// the vectors are still those they read), or as given. A hybrid search whose query could
    /// not be embedded ranks by words, and `note` says why.
    fn query_vector(
        &self,
        q: &SearchQuery,
        made: Option<Made>,
        note: &mut Option<String>,
    ) -> Result<(Option<Vec<f32>>, Option<Scans>), WorkspaceError> {
        let mut first_scans = None;
        let vector = match made {
            Some(Ok((v, scans))) => {
                if let Some((stamp, scans)) = scans {
                    if self.vectors_stamp()? == Some(stamp) {
                        first_scans = Some(scans);
                    }
                }
                Some(v)
            }
            Some(Err(e)) if q.mode == SearchMode::Meaning => {
                return Err(WorkspaceError::BadQuery(format!(
                    "cannot search by meaning: the query could not be embedded: {e}"
                )))
            }
            Some(Err(e)) => {
                *note = join_notes(
                    Some(format!(
                        "ranked by words only: the query could not be embedded: {e}"
                    )),
                    note.take(),
                );
                None
            }
            None => q.vector.clone().filter(|_| q.mode != SearchMode::Words),
        };
        Ok((vector, first_scans))
    }

    /// Each of `subs`' order at `depth`: its rankings by words (`words`) and by meaning (from
    /// `scans`), and, kept to code, by its files' outlines, fused. The units' rows go into
    /// `rows`. Whether any ranking read as deep as it was asked (else all hold every match).
    #[allow(clippy::type_complexity)]
    fn sub_orders(
        &self,
        subs: &[SearchQuery],
        words: Vec<WordsRanking>,
        scans: Option<Vec<Vec<(i64, f32)>>>,
        depth: usize,
        k: f64,
        rows: &mut HashMap<i64, RawHit>,
    ) -> Result<(Vec<Vec<(i64, f64)>>, bool), WorkspaceError> {
        // The subs' own scans, then their outlines' (`meaning_scans`).
        let (mut scans, mut outline_scans) = match scans {
            Some(mut own) => {
                let outlines = own.split_off(subs.len().min(own.len()));
                (Some(own.into_iter()), Some(outlines.into_iter()))
            }
            None => (None, None),
        };
        let mut orders: Vec<Vec<(i64, f64)>> = Vec::with_capacity(subs.len());
        // A ranking shorter than its depth holds every match it has.
        let mut full = false;
        let mut words = words.into_iter();
        for sub in subs {
            let by_words = words.next().map(|(order, found, _)| {
                rows.extend(found);
                order
            });
            let by_meaning = match scans.as_mut().and_then(Iterator::next) {
                Some(near) => {
                    // Filtered, the scan reads further than the depth and the filters
                    // drop units after it: whether it stopped short is its own count's
                    // to say (judged after the filters, a filtered search by meaning
                    // never read deeper and lost what lay past the first scan).
                    full |= near.len() >= scan_depth(sub, depth);
                    Some(self.meaning_ranking(sub, near, depth, rows)?)
                }
                None => None,
            };
            let by_outline = match ranks_outlines(sub)
                .then(|| outline_scans.as_mut().and_then(Iterator::next))
                .flatten()
            {
                Some(near) => Some(self.meaning_ranking(sub, near, depth, rows)?),
                None => None,
            };
            full |= by_words.as_ref().is_some_and(|o| o.len() >= depth)
                || by_meaning.as_ref().is_some_and(|o| o.len() >= depth);
            let words_outline = match (ranks_outlines(sub), &by_words) {
                (true, Some(order)) => Some(Self::outlines_by_words(order, rows)),
                _ => None,
            }
            .filter(|o| !o.is_empty());
            let (by_outline, words_outline) = if by_outline.is_some() || words_outline.is_some() {
                let parts = file_parts([&by_words, &by_meaning], rows);
                (
                    by_outline.map(|o| to_files(&o, &parts, rows)),
                    words_outline.map(|o| to_files(&o, &parts, rows)),
                )
            } else {
                (None, None)
            };
            // Words and meaning (and, kept to code, the outlines), fused; one alone as it
            // ranks.
            let rankings: Vec<(Vec<(i64, usize)>, f64)> = by_words
                .iter()
                .chain(&by_meaning)
                .map(|o| (ranked(o), 1.0))
                .chain(by_outline.map(|o| (o, OUTLINE_WEIGHT)))
                .chain(words_outline.map(|o| (o, OUTLINE_WORDS_WEIGHT)))
                .collect();
            orders.push(match rankings.len() {
                0 => {
                    return Err(WorkspaceError::BadQuery(
                        "no unit of the workspace has a vector yet: run `burrow workspace embed`"
                            .into(),
                    ))
                }
                // Each outlines' ranking comes with the ranking it was taken from, so
                // one ranking alone is words' or meaning's.
                1 => by_words.or(by_meaning).unwrap_or_default(),
                _ => fuse(&rankings, k),
            });
        }
        Ok((orders, full))
    }

    /// The subs' orders (`sub_orders`) fused into the search's: the query's own, beside the
    /// order of the kinds it leans to where it `leans`, and the pull requests linked to the
    /// issues of the last order, if there is one (their rows go into `rows`).
    fn fuse_subs(
        &self,
        q: &SearchQuery,
        orders: Vec<Vec<(i64, f64)>>,
        leans: bool,
        depth: usize,
        k: f64,
        rows: &mut HashMap<i64, RawHit>,
    ) -> Result<Vec<(i64, f64)>, WorkspaceError> {
        let mut orders = orders.into_iter();
        let mut order = orders.next().unwrap_or_default();
        let mut rankings = Vec::new();
        if leans {
            let kind_order = orders.next().unwrap_or_default();
            rankings.push((ranked(&order), ALL_KINDS_WEIGHT));
            rankings.push((ranked(&kind_order), 1.0));
        } else {
            rankings.push((ranked(&order), 1.0));
        }
        // Asked for a pull request, people describe the problem it fixed: the issue that
        // reported it is found by those words, and the pull requests linked to the issues
        // found rank where those issues rank, with the weight of that evidence.
        if let Some(issue_order) = orders.next() {
            let (fixing, fixing_rows) = self.fixing_prs(&issue_order, rows, depth, q)?;
            rankings.push((fixing, LINK_WEIGHT));
            for (id, r) in fixing_rows {
                rows.entry(id).or_insert(r);
            }
        }
        if rankings.len() > 1 {
            order = fuse(&rankings, k);
        }
        Ok(order)
    }

    /// The id of the repository `q` keeps to, if it names one.
    fn repo_id_of(&self, q: &SearchQuery) -> Result<Option<i64>, WorkspaceError> {
        Ok(q.repo
            .as_deref()
            .map(|r| self.repo(r))
            .transpose()?
            .map(|r| r.id))
    }
}

/// `q` without its blank filters, if it has any.
fn without_blank_filters(q: &SearchQuery) -> Option<SearchQuery> {
    // A blank filter ("" where a model fills every field of the search tool) filters
    // nothing: taken as given, a blank state, label or author matched no row, and a blank
    // path, as the glob `*`, every file and no issue, so the page said "No results".
    let blank = |v: &Option<String>| v.as_deref().is_some_and(|s| s.trim().is_empty());
    let given = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
    [&q.repo, &q.state, &q.label, &q.author, &q.path]
        .into_iter()
        .any(blank)
        .then(|| SearchQuery {
            repo: given(&q.repo),
            state: given(&q.state),
            label: given(&q.label),
            author: given(&q.author),
            path: given(&q.path),
            ..q.clone()
        })
}

/// How many hits `q`'s page holds, once its offset and its words are found fit to search.
fn page_limit(q: &SearchQuery) -> Result<usize, WorkspaceError> {
    let limit = q.limit.clamp(1, MAX_LIMIT);
    if q.offset > MAX_OFFSET {
        return Err(WorkspaceError::BadQuery(format!(
            "offset {} is past the furthest a page can start ({MAX_OFFSET})",
            q.offset
        )));
    }
    // As a search by words refuses it: by meaning alone, an empty query ("", "!!!") was
    // embedded and ranked every unit against the vector of nothing.
    if q.mode == SearchMode::Meaning && q.vector.is_none() && words(&q.text).is_empty() {
        return Err(WorkspaceError::BadQuery(
            "the query has no words to search for".into(),
        ));
    }
    Ok(limit)
}

/// The kinds `q` leans to, and the kinds its page keeps to (None: those its filter gives).
fn leaning(q: &SearchQuery) -> (Vec<Kind>, Option<Vec<Kind>>) {
    // A query that says what kind of item it wants leans to that kind (unless it filters
    // kinds itself): its ranking among that kind alone is fused with the ranking over all.
    // Kept by a filter to the very kinds its words ask for (the agent's first search is),
    // it ranks as the lean does and keeps those kinds' items: the agent and the search box
    // put the same item first (kept to pull requests, the first search put #813 first
    // where `burrow search` had the one asked for, gui-pr-07).
    match leaned_kinds(&q.text) {
        lean if q.kinds.is_empty() => (lean, None),
        lean if !lean.is_empty()
            && lean.iter().all(|k| q.kinds.contains(k))
            && q.kinds.iter().all(|k| lean.contains(k)) =>
        {
            (lean, Some(q.kinds.clone()))
        }
        _ => (Vec::new(), None),
    }
}

/// The rankings a search fuses (each `q` kept to some kinds): the query's own (over every kind
/// where its page `keep`s to kinds); that of the kinds it is `leaning` to; and, where it
/// `wants_pr`, the issues'.
fn rankings_to_fuse(
    q: &SearchQuery,
    keep: &Option<Vec<Kind>>,
    leaning: Vec<Kind>,
    wants_pr: bool,
) -> Vec<SearchQuery> {
    let base = match keep {
        Some(_) => SearchQuery {
            kinds: Vec::new(),
            ..q.clone()
        },
        None => q.clone(),
    };
    // The rankings to fuse: the query's own; that of the kinds it asks for; and, for pull
    // requests, the issues' (see below).
    let mut subs = vec![base.clone()];
    if !leaning.is_empty() {
        subs.push(SearchQuery {
            kinds: leaning,
            ..base.clone()
        });
    }
    if wants_pr {
        // Without the filters of state, label, author and dates, which are the pull
        // requests' (`fixing_prs` applies them to those): no issue is "merged", and the
        // issue's reporter is rarely the author of the fix, so with them the evidence was
        // gone and `--kind pr --state merged` ranked by words alone. This ranking comes
        // last, so its rows, read through fewer filters, are never taken as having passed
        // another ranking's (`meaning_ranking`); it only ranks pull requests.
        subs.push(SearchQuery {
            kinds: vec![Kind::Issue],
            state: None,
            label: None,
            author: None,
            since: None,
            until: None,
            ..q.clone()
        });
    }
    subs
}

fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}
