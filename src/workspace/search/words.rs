//! Ranking by words (BM25): the plan of a search by words, its reads from the first unit,
//! and the rankings of a query and of the kinds it leans to, from one pass where they can.

use std::collections::{HashMap, HashSet};

use super::items::{fold_items, UNITS_PER_ITEM};
use super::plan::{plan, Expr, Scope};
use super::query::{words, Clause, Phrase};
use super::sql::{self, rank_page, PostFilter, RawHit};
use super::{facet_token, join_notes, Kind, SearchQuery, MAX_QUERY_WORDS, RANK_ROWS};
use crate::workspace::{Workspace, WorkspaceError};

impl Workspace {
    /// The rankings by words of `subs` (one query, each of its rankings kept to some kinds):
    /// from one ranking of every match where the query ranks them all, else one by one.
    pub(super) fn words_rankings(
        &self,
        subs: &[SearchQuery],
        depth: usize,
    ) -> Result<Vec<WordsRanking>, WorkspaceError> {
        // One ranking serves them all only where they differ in kinds alone.
        let same_filters = subs.iter().all(|s| {
            subs.first().is_some_and(|f| {
                (
                    &s.repo, &s.state, &s.label, &s.author, &s.path, s.since, s.until,
                ) == (
                    &f.repo, &f.state, &f.label, &f.author, &f.path, f.since, f.until,
                )
            })
        });
        if subs.len() > 1 && same_filters {
            if let Some(shared) = self.words_rankings_shared(subs, depth)? {
                return Ok(shared);
            }
        }
        subs.iter()
            .map(|sub| self.words_ranking(sub, depth))
            .collect()
    }

    /// `words_rankings` from one pass: the query's matches over the kinds of all of `subs`,
    /// each scored once, then each ranking's kinds taken from that list. A row scores the same
    /// whichever kinds a ranking keeps to (the kind is a facet, of weight 0), so this is each
    /// ranking as it would come alone, less the index walks of all but one (a third of a
    /// search asking for a pull request). None where the query ranks only a part of its
    /// matches (`Scope` other than whole): the parts would differ by kind.
    pub(super) fn words_rankings_shared(
        &self,
        subs: &[SearchQuery],
        depth: usize,
    ) -> Result<Option<Vec<WordsRanking>>, WorkspaceError> {
        let Some(first) = subs.first() else {
            return Ok(Some(Vec::new()));
        };
        let mut kinds: Vec<Kind> = Vec::new();
        if subs.iter().all(|s| !s.kinds.is_empty()) {
            for k in subs.iter().flat_map(|s| s.kinds.iter()) {
                if !kinds.contains(k) {
                    kinds.push(*k);
                }
            }
        }
        let shared = SearchQuery {
            kinds,
            ..first.clone()
        };
        let plan = self.words_plan(&shared)?;
        if plan.scope != Scope::Whole {
            return Ok(None);
        }
        let conn = self.conn();
        let all = match plan.scored {
            Some(mut scored) => {
                sql::sort_ranked(&mut scored);
                scored
            }
            None => sql::rank_all(&conn, &plan.expr, &plan.post)?,
        };
        // A kind's rows come from its facet's list in the index: reading each match's kind
        // from its row made the searches that lean to no kind 1.19-1.26x slower (README).
        let mut of_kind = HashMap::new();
        {
            let mut cache = self.phrase_rows.lock().unwrap_or_else(|e| e.into_inner());
            for k in subs.iter().flat_map(|s| s.kinds.iter()) {
                if !of_kind.contains_key(k) {
                    of_kind.insert(*k, cache.facet(&conn, &facet_token('k', k.as_str()))?);
                }
            }
        }
        let orders: Vec<Vec<(i64, f64)>> = subs
            .iter()
            .map(|sub| {
                all.iter()
                    .filter(|(id, _)| {
                        sub.kinds.is_empty()
                            || sub
                                .kinds
                                .iter()
                                .any(|k| of_kind.get(k).is_some_and(|s| s.contains(id)))
                    })
                    // As many as a ranking of its own reads (`words_ranking`).
                    .take(depth + 1)
                    .map(|&(id, bm25)| (id, -bm25))
                    .collect()
            })
            .collect();
        let mut ids: Vec<i64> = orders.iter().flatten().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut rows = sql::rows_by_ids(&conn, &ids, &shared)?;
        drop(conn);
        for (id, score) in orders.iter().flatten() {
            if let Some(r) = rows.get_mut(id) {
                r.score = -score;
            }
        }
        // The rows go with the first ranking only: the caller keeps them all in one map.
        let mut rows = Some(rows);
        let out = orders
            .into_iter()
            .enumerate()
            .map(|(i, order)| {
                let note = if i == 0 { plan.cut.clone() } else { None };
                (order, rows.take().unwrap_or_default(), note)
            })
            .collect();
        Ok(Some(out))
    }

    /// The first `depth` units for `q` by words, best first with their scores (higher is
    /// better), their rows, and the ranking's note.
    pub(super) fn words_ranking(
        &self,
        q: &SearchQuery,
        depth: usize,
    ) -> Result<WordsRanking, WorkspaceError> {
        let read = self.words_read(q, depth, depth + 1)?;
        let note = read.note(read.rows.len() <= depth);
        let rows = read.rows;
        let order = rows.iter().map(|r| (r.id, -r.score)).collect();
        Ok((order, rows.into_iter().map(|r| (r.id, r)).collect(), note))
    }

    /// A page of items by words: units read from the first, enough for the page once folded
    /// into items (more if the first read falls short), and the page's part of them.
    pub(super) fn words_items(
        &self,
        q: &SearchQuery,
        limit: usize,
    ) -> Result<(Vec<RawHit>, Option<String>), WorkspaceError> {
        let needed = q.offset + limit + 1;
        let mut units = needed * UNITS_PER_ITEM;
        loop {
            let mut read = self.words_read(q, units, needed)?;
            let rows = std::mem::take(&mut read.rows);
            let read_all = rows.len() <= units;
            let items = fold_items(rows);
            // A ranking holds at most RANK_ROWS units: past that, reading more finds no more.
            if items.len() >= needed || read_all || units > RANK_ROWS {
                let note = read.note(items.len() <= q.offset + limit);
                let page = items.into_iter().skip(q.offset).take(limit + 1).collect();
                return Ok((page, note));
            }
            units *= 4;
        }
    }

    /// What a search by words ranks: its expression and scope, its filters, the window, and
    /// the note of a query cut to its rarest words.
    pub(super) fn words_plan(&self, q: &SearchQuery) -> Result<WordsPlan, WorkspaceError> {
        let words = words(&q.text);
        if words.is_empty() {
            return Err(WorkspaceError::BadQuery(
                "the query has no words to search for".into(),
            ));
        }
        let repo_id = self.repo_id_of(q)?;
        let conn = self.conn();
        let mut cache = self.phrase_rows.lock().unwrap_or_else(|e| e.into_inner());
        let mut facet = |token: String| -> Result<Phrase, WorkspaceError> {
            let rows = cache.get(&conn, &token)?;
            Ok(Phrase {
                quoted: format!("\"{token}\""),
                rows,
            })
        };
        let mut facets: Vec<Vec<Phrase>> = Vec::new();
        if let Some(id) = repo_id {
            facets.push(vec![facet(format!("r{id}"))?]);
        }
        if !q.kinds.is_empty() {
            let kinds = q.kinds.iter().map(|k| facet(facet_token('k', k.as_str())));
            facets.push(kinds.collect::<Result<_, _>>()?);
        }
        for (prefix, value) in [('t', &q.state), ('g', &q.label), ('h', &q.author)] {
            if let Some(v) = value {
                facets.push(vec![facet(facet_token(prefix, v))?]);
            }
        }
        let mut clauses = Vec::with_capacity(words.len());
        for (word, phrases) in words {
            let mut ps = Vec::with_capacity(phrases.len());
            for p in phrases {
                ps.push(Phrase {
                    rows: cache.get(&conn, &p)?,
                    quoted: format!("\"{p}\""),
                });
            }
            clauses.push(Clause {
                word,
                phrases: ps,
                added: false,
            });
        }
        // Cut to the words typed first: what is added for them never displaces one.
        let cut = cut_to_rarest(&mut clauses, MAX_QUERY_WORDS);
        let also = Self::abbreviated(&conn, &mut cache, &q.text, &mut clauses)?;
        let cut = join_notes(also, cut);
        let joined = Self::compounded(&conn, &mut cache, &q.text, &mut clauses)?;
        let cut = join_notes(joined, cut);
        let post = PostFilter::from_query(q);
        let window = self.rank_rows.load(std::sync::atomic::Ordering::Relaxed);
        let planned = plan(&conn, &clauses, &facets, &post, window, &mut || {
            cache.units(&conn)
        })?;
        Ok(WordsPlan {
            clauses,
            facets,
            post,
            window,
            expr: planned.expr,
            scope: planned.scope,
            scored: planned.scored,
            cut,
        })
    }

    /// Up to `read + 1` units ranked by words from the first, for a caller that needs
    /// `needed` results of them (the page's items, or a ranking's depth): where too few rows
    /// hold every word for that, the newest with any of them rank instead.
    fn words_read(
        &self,
        q: &SearchQuery,
        read: usize,
        needed: usize,
    ) -> Result<WordsRead, WorkspaceError> {
        let WordsPlan {
            clauses,
            facets,
            post,
            window,
            expr,
            mut scope,
            scored,
            cut,
        } = self.words_plan(q)?;
        let conn = self.conn();
        let windowed = matches!(
            scope,
            Scope::Every { .. } | Scope::Newest { .. } | Scope::EveryThenNewest { .. }
        );
        let from_scored = match scored {
            Some(mut scored) => {
                sql::sort_ranked(&mut scored);
                let rows = sql::page_of_ranked(&conn, &scored, q, read + 1, 0)?;
                // A row the indexer removed after it was scored (the connection was let go
                // in between) would cut the page short: then the statement ranks them again.
                (rows.len() == scored.len().min(read + 1)).then_some(rows)
            }
            None => None,
        };
        let (mut rows, mut ranked) = match from_scored {
            Some(rows) => (rows, None),
            None => rank_page(&conn, &expr, &post, windowed.then_some(window), read + 1, 0)?,
        };
        if let Scope::Every { common } = &scope {
            let every = ranked.unwrap_or(0);
            if every < needed {
                // Too few rows have every word to fill what is asked: the newest with any of
                // them come after those (all of which are read: `every < needed <= read + 1`).
                // After, not instead: instead, a page reaching past them ranked other rows
                // than the page before it, and pages read one after another skipped some.
                let all: Vec<&Clause> = clauses.iter().collect();
                let any = Expr::new(&all, " OR ", &facets);
                let (more, any_ranked) = rank_page(&conn, &any, &post, Some(window), read + 1, 0)?;
                let held: HashSet<i64> = rows.iter().map(|r| r.id).collect();
                rows.extend(more.into_iter().filter(|r| !held.contains(&r.id)));
                rows.truncate(read + 1);
                scope = Scope::EveryThenNewest {
                    common: common.clone(),
                    every,
                };
                ranked = any_ranked;
            }
        }
        Ok(WordsRead {
            rows,
            cut,
            scope,
            ranked: ranked.unwrap_or(0),
            window,
        })
    }
}

/// Units read by words, with what the ranking's note needs.
struct WordsRead {
    rows: Vec<RawHit>,
    cut: Option<String>,
    scope: Scope,
    ranked: usize,
    window: usize,
}

impl WordsRead {
    /// The note for a page, `last` when no results come after it.
    fn note(&self, last: bool) -> Option<String> {
        join_notes(
            self.cut.clone(),
            self.scope.note(self.ranked, self.window, last),
        )
    }
}

/// A ranking by words: units best first with their scores (higher is better), their rows
/// (those of several rankings may all come with the first), and the ranking's note.
pub(super) type WordsRanking = (Vec<(i64, f64)>, HashMap<i64, RawHit>, Option<String>);

/// A search by words, planned (`Workspace::words_plan`).
pub(super) struct WordsPlan {
    clauses: Vec<Clause>,
    facets: Vec<Vec<Phrase>>,
    post: PostFilter,
    window: usize,
    expr: Expr,
    scope: Scope,
    /// Every match, scored, where planning had to walk them (`Planned::scored`).
    pub(super) scored: Option<Vec<(i64, f64)>>,
    /// Set when the query was cut to its rarest words, or searched for abbreviations too.
    cut: Option<String>,
}

/// Keeps the `max` rarest words of a long query, in the query's order (words the index does
/// not hold are left out first: they rank nothing), and says so.
fn cut_to_rarest(clauses: &mut Vec<Clause>, max: usize) -> Option<String> {
    if clauses.len() <= max {
        return None;
    }
    let total = clauses.len();
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (clauses[a].rows(), clauses[b].rows());
        (ra == 0.0).cmp(&(rb == 0.0)).then(ra.total_cmp(&rb))
    });
    let keep: std::collections::HashSet<usize> = order.into_iter().take(max).collect();
    let mut i = 0;
    clauses.retain(|_| {
        i += 1;
        keep.contains(&(i - 1))
    });
    Some(format!(
        "the query has {total} words: ranked by its {max} rarest ({})",
        clauses
            .iter()
            .map(|c| c.word.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    ))
}
