//! Which matches a search ranks: all of them when they are few, and otherwise a part chosen
//! from how many rows hold each word (counted once per database state), which the page then
//! names.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use super::query::{group, Clause, Phrase};
use super::sql::{count_upto, score_upto, PostFilter};
use crate::workspace::rank;
use crate::workspace::text::is_plain_definition;
use crate::workspace::{db_err, WorkspaceError};

/// How many matching rows one search ranks at most. Ranking costs about a microsecond and a
/// half per row here, so a search stays within a few tens of milliseconds however common its
/// words are; most searches match fewer rows and rank them all.
pub(crate) const RANK_ROWS: usize = 12_000;

/// Given to `burrow_rank` for a phrase that only narrows the matches: it weighs nothing.
const WEIGHS_NOTHING: f64 = 1e18;

/// An FTS5 expression with the row count of each of its phrases, in order, for `burrow_rank`.
#[derive(Debug, Clone)]
pub(super) struct Expr {
    pub(super) text: String,
    pub(super) rows: Vec<f64>,
}

impl Expr {
    /// The words joined by `op`, looked for in the text columns only (never among the facets),
    /// and every facet group required.
    pub(super) fn new(clauses: &[&Clause], op: &str, facets: &[Vec<Phrase>]) -> Self {
        let mut rows = Vec::new();
        let words: Vec<String> = clauses
            .iter()
            .map(|c| {
                rows.extend(c.phrases.iter().map(|p| p.rows));
                group(c.phrases.iter().map(|p| p.quoted.clone()))
            })
            .collect();
        let mut text = format!("{{title body terms}} : ({})", words.join(op));
        for f in facets {
            rows.extend(f.iter().map(|p| p.rows));
            text.push_str(" AND ");
            text.push_str(&group(f.iter().map(|p| format!("facets : {}", p.quoted))));
        }
        Expr { text, rows }
    }

    /// Only the rows with at least one of `narrow`, ranked by all of `clauses` (the narrowing
    /// phrases weigh nothing, so each word counts once).
    fn narrowed(narrow: &[&Clause], clauses: &[&Clause], facets: &[Vec<Phrase>]) -> Self {
        let inner = Expr::new(clauses, " OR ", &[]);
        let mut rows: Vec<f64> = narrow
            .iter()
            .flat_map(|c| c.phrases.iter().map(|_| WEIGHS_NOTHING))
            .collect();
        rows.extend(inner.rows);
        let narrow_words: Vec<String> = narrow
            .iter()
            .map(|c| group(c.phrases.iter().map(|p| p.quoted.clone())))
            .collect();
        let mut text = format!(
            "{{title body terms}} : (({}) AND ({}))",
            narrow_words.join(" OR "),
            clauses
                .iter()
                .map(|c| group(c.phrases.iter().map(|p| p.quoted.clone())))
                .collect::<Vec<_>>()
                .join(" OR ")
        );
        for f in facets {
            rows.extend(f.iter().map(|p| p.rows));
            text.push_str(" AND ");
            text.push_str(&group(f.iter().map(|p| format!("facets : {}", p.quoted))));
        }
        Expr { text, rows }
    }
}

/// Which matches a search ranks, and so what the page tells the user.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Scope {
    /// All of them (fewer than `RANK_ROWS`).
    Whole,
    /// Those with at least one of the rarer words (`rare`); a match with only the very common
    /// ones cannot rank high.
    Narrowed {
        rare: Vec<String>,
        common: Vec<String>,
    },
    /// Those with every word, all of which are very common (`common` names them).
    Every { common: Vec<String> },
    /// The newest `RANK_ROWS`.
    Newest { common: Vec<String> },
    /// Those with every word, all of which are very common, then, where they are few, the
    /// newest with any of them.
    EveryThenNewest { common: Vec<String>, every: usize },
}

impl Scope {
    /// What to tell the user, given how many matches were ranked, the window, and whether
    /// this is the last page.
    pub(super) fn note(&self, ranked: usize, window: usize, last_page: bool) -> Option<String> {
        match self {
            Scope::Whole => None,
            // Said once the results with the rarer words run out, where the user would
            // otherwise expect the rest.
            Scope::Narrowed { rare, common } => last_page.then(|| {
                format!(
                    "only results with {} are ranked: {} alone match too many to rank",
                    rare.join(" or "),
                    common.join(", ")
                )
            }),
            Scope::Every { common } => Some(format!(
                "every word is very common ({}): ranked only {}results that have all of them",
                common.join(", "),
                if ranked >= window {
                    format!("the newest {window} ")
                } else {
                    String::new()
                }
            )),
            Scope::Newest { common } => Some(format!(
                "the words are very common ({}): ranked only the newest {window} matches; \
                 add rarer words or filters to reach older ones",
                common.join(", ")
            )),
            Scope::EveryThenNewest { common, every } => Some(format!(
                "every word is very common ({}): the {every} result{} with all of them come{} \
                 first, then the newest {window} matches with any of them; add rarer words or \
                 filters to reach older ones",
                common.join(", "),
                if *every == 1 { "" } else { "s" },
                if *every == 1 { "s" } else { "" },
            )),
        }
    }
}

/// Row counts of phrases, and the rows of facets, kept while the database is unchanged. FTS5
/// stores no document frequencies: the vocabulary table counts a word's rows by walking its
/// whole list, several milliseconds for a word in most of 100,000 issues, and the words people
/// search for repeat; a kind's rows are read whole (100,000 issues: about 15 ms).
#[derive(Debug, Default)]
pub(crate) struct PhraseRows {
    /// The state of the units the counts hold for: `docs_changes`, which triggers move on
    /// every change to `docs` (a commit elsewhere that leaves the units alone keeps the counts).
    /// Nothing is kept before the first check, so its starting value matches nothing stale.
    stamp: i64,
    rows: HashMap<String, f64>,
    facets: HashMap<String, Arc<HashSet<i64>>>,
    /// How many units the index holds.
    units: Option<f64>,
    /// The abbreviations the units define.
    abbreviations: Option<Arc<Abbreviations>>,
    /// The last query's names written as one word (`compound::compounds`): its ranking and
    /// its page's snippets both ask, and the search box asks again as typing pauses.
    compounds: Option<(String, Arc<Vec<super::compound::Compound>>)>,
}

/// The abbreviations the workspace's units define (`text::abbreviations`), both ways.
#[derive(Debug, Default)]
pub(super) struct Abbreviations {
    /// A long form's abbreviations.
    pub(super) by_long: HashMap<String, Vec<String>>,
    /// An abbreviation's long forms, the most often defined first.
    pub(super) by_abbr: HashMap<String, Vec<String>>,
}

/// The definitions read at most (distinct pairs, the most often written first), so that a
/// workspace full of them costs a bounded load per change.
const ABBREVIATIONS_READ: usize = 50_000;

/// Phrases remembered at most; past that the cache starts again.
const PHRASE_CACHE: usize = 4096;

impl PhraseRows {
    /// Forgets what the database no longer holds.
    fn check(&mut self, conn: &Connection) -> Result<(), WorkspaceError> {
        let stamp: i64 = conn
            .prepare_cached("SELECT n FROM docs_changes WHERE id = 1")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .map_err(db_err("reading the count of changes to the index"))?;
        if stamp != self.stamp || self.rows.len() >= PHRASE_CACHE {
            self.rows.clear();
            self.facets.clear();
            self.units = None;
            self.abbreviations = None;
            self.compounds = None;
            self.stamp = stamp;
        }
        Ok(())
    }

    /// The rows that hold the facet `token` (a kind).
    pub(super) fn facet(
        &mut self,
        conn: &Connection,
        token: &str,
    ) -> Result<Arc<HashSet<i64>>, WorkspaceError> {
        self.check(conn)?;
        if let Some(rows) = self.facets.get(token) {
            return Ok(Arc::clone(rows));
        }
        let rows = Arc::new(super::sql::facet_rows(conn, token)?);
        self.facets.insert(token.to_string(), Arc::clone(&rows));
        Ok(rows)
    }

    /// The abbreviations the units define, read again after a change to the units (or when
    /// the cache starts again). A pair is taken only as the indexer writes it (letters and
    /// digits without capitals, words joined by single spaces): the table is the workspace's,
    /// but what goes into a query must be plain words.
    pub(super) fn abbreviations(
        &mut self,
        conn: &Connection,
    ) -> Result<Arc<Abbreviations>, WorkspaceError> {
        self.check(conn)?;
        if let Some(a) = &self.abbreviations {
            return Ok(Arc::clone(a));
        }
        let mut a = Abbreviations::default();
        let mut st = conn
            .prepare_cached(
                "SELECT abbr, long FROM abbreviations GROUP BY abbr, long \
                 ORDER BY count(*) DESC, abbr, long LIMIT ?1",
            )
            .map_err(db_err("reading the abbreviations"))?;
        let rows = st
            .query_map([ABBREVIATIONS_READ as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db_err("reading the abbreviations"))?;
        for row in rows {
            let (abbr, long) = row.map_err(db_err("reading the abbreviations"))?;
            if is_plain_definition(&abbr, &long) {
                a.by_long
                    .entry(long.clone())
                    .or_default()
                    .push(abbr.clone());
                a.by_abbr.entry(abbr).or_default().push(long);
            }
        }
        let a = Arc::new(a);
        self.abbreviations = Some(Arc::clone(&a));
        Ok(a)
    }

    /// The names written as one word found for `text` last, if it was the last query.
    pub(super) fn compounds_of(
        &mut self,
        conn: &Connection,
        text: &str,
    ) -> Result<Option<Arc<Vec<super::compound::Compound>>>, WorkspaceError> {
        self.check(conn)?;
        Ok(self
            .compounds
            .as_ref()
            .filter(|(t, _)| t == text)
            .map(|(_, c)| Arc::clone(c)))
    }

    /// The state of the units what is cached holds for.
    pub(super) fn stamp(&self) -> i64 {
        self.stamp
    }

    pub(super) fn keep_compounds(
        &mut self,
        text: &str,
        found: Arc<Vec<super::compound::Compound>>,
    ) {
        self.compounds = Some((text.to_string(), found));
    }

    /// How many units the index holds.
    pub(super) fn units(&mut self, conn: &Connection) -> Result<f64, WorkspaceError> {
        self.check(conn)?;
        if let Some(n) = self.units {
            return Ok(n);
        }
        let n: i64 = conn
            .prepare_cached("SELECT count(*) FROM docs")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .map_err(db_err("counting the units"))?;
        self.units = Some(n as f64);
        Ok(n as f64)
    }

    pub(super) fn get(&mut self, conn: &Connection, phrase: &str) -> Result<f64, WorkspaceError> {
        self.check(conn)?;
        if let Some(&n) = self.rows.get(phrase) {
            return Ok(n);
        }
        let n = phrase_rows(conn, phrase)?;
        self.rows.insert(phrase.to_string(), n);
        Ok(n)
    }
}

/// How many rows hold each phrase, from the index's vocabulary. A phrase of several words is
/// counted when its rarest word is rare enough to make that cheap, and otherwise taken to be
/// as common as that word (an upper bound).
fn phrase_rows(conn: &Connection, phrase: &str) -> Result<f64, WorkspaceError> {
    let mut rarest: Option<i64> = None;
    for token in rank::query_tokens(conn, phrase)? {
        let n: i64 = conn
            .prepare_cached("SELECT doc FROM docs_vocab WHERE term = ?1")
            .and_then(|mut st| st.query_row([&token], |r| r.get(0)).optional())
            .map_err(db_err("reading the vocabulary"))?
            .unwrap_or(0);
        rarest = Some(rarest.map_or(n, |r| r.min(n)));
    }
    let rarest = rarest.unwrap_or(0);
    if phrase.contains(' ') && (rarest as usize) <= RANK_ROWS {
        let expr = Expr {
            text: format!("{{title body terms}} : \"{phrase}\""),
            rows: Vec::new(),
        };
        return Ok(count_upto(conn, &expr, &PostFilter::default(), RANK_ROWS + 1)? as f64);
    }
    Ok(rarest as f64)
}

/// Chooses what to rank so that no query, however common its words, ranks more than
/// `RANK_ROWS` rows. Most queries match fewer and are ranked whole. Otherwise, as Lucene's
/// common-terms query does: the rows with at least one of the rarer words are ranked by all the
/// words (a row with only very common words cannot score high); when every word is common, the
/// rows with all of them; and when even those are too many, the newest matches, which the page
/// says.
///
/// Where it had to walk the matches to know whether they are few, it scored them on the way,
/// and returns them, unordered, with `Scope::Whole`.
pub(super) fn plan(
    conn: &Connection,
    clauses: &[Clause],
    facets: &[Vec<Phrase>],
    post: &PostFilter,
    window: usize,
    units: &mut dyn FnMut() -> Result<f64, WorkspaceError>,
) -> Result<Planned, WorkspaceError> {
    let all: Vec<&Clause> = clauses.iter().collect();
    let any = Expr::new(&all, " OR ", facets);
    let whole = |expr: Expr, scored| Planned {
        expr,
        scope: Scope::Whole,
        scored,
    };
    // Bounds from the vocabulary first: no query at all for most searches.
    let words_bound: f64 = clauses.iter().map(Clause::rows).sum();
    let facet_bound = facets
        .iter()
        .map(|f| f.iter().map(|p| p.rows).sum::<f64>())
        .fold(f64::INFINITY, f64::min);
    if words_bound.min(facet_bound) <= window as f64 {
        return Ok(whole(any, None));
    }
    // Unfiltered, one word alone in too many rows settles it (a one-word phrase's count is
    // exact); filtered, count.
    let surely_many = facets.is_empty()
        && post.is_empty()
        && clauses.iter().any(|c| {
            c.phrases
                .iter()
                .any(|p| !p.quoted.contains(' ') && p.rows >= window as f64)
        });
    if !surely_many {
        // Counting the matches and then ranking them walked the same lists twice (a third of
        // a paragraph-long question's ranking by words): where the matches are likely few,
        // they are scored as they are counted, and only counted where they are likely many
        // (scoring a match costs several times counting it).
        if likely_fewer(clauses, facets, units()?, window) {
            let scored = score_upto(conn, &any, post, window)?;
            if scored.len() < window {
                return Ok(whole(any, Some(scored)));
            }
        } else if count_upto(conn, &any, post, window)? < window {
            return Ok(whole(any, None));
        }
    }

    let mut by_rows = all.clone();
    by_rows.sort_by(|a, b| a.rows().total_cmp(&b.rows()));
    let mut rare = rarest(&by_rows, window);
    // What was added to the words typed narrows beside one of them, never alone: a query of
    // common words would otherwise rank only the rows of a name it never typed.
    let typed: Vec<&Clause> = by_rows.iter().copied().filter(|c| !c.added).collect();
    if rare.iter().all(|c| c.added) {
        rare = rarest(&typed, window);
    }
    let common: Vec<String> = typed
        .iter()
        .filter(|c| !rare.contains(c))
        .map(|c| c.word.clone())
        .collect();
    if !rare.is_empty() {
        return Ok(Planned {
            expr: Expr::narrowed(&rare, &all, facets),
            scope: Scope::Narrowed {
                rare: rare.iter().map(|c| c.word.clone()).collect(),
                common,
            },
            scored: None,
        });
    }
    if typed.len() > 1 {
        return Ok(Planned {
            expr: Expr::new(&typed, " AND ", facets),
            scope: Scope::Every { common },
            scored: None,
        });
    }
    Ok(Planned {
        expr: any,
        scope: Scope::Newest { common },
        scored: None,
    })
}

/// The rarest of `clauses` (ordered by their rows) whose rows together fit in `window`.
fn rarest<'a>(clauses: &[&'a Clause], window: usize) -> Vec<&'a Clause> {
    let mut rare = Vec::new();
    let mut total = 0.0;
    for c in clauses {
        if total + c.rows() > window as f64 {
            break;
        }
        total += c.rows();
        rare.push(*c);
    }
    rare
}

/// What `plan` chose to rank, and the matches it scored on the way, if it did.
pub(super) struct Planned {
    pub(super) expr: Expr,
    pub(super) scope: Scope,
    /// Every match with its BM25, unordered: the scope is `Whole`.
    pub(super) scored: Option<Vec<(i64, f64)>>,
}

/// Whether the rows holding any of the words (and every facet) are likely fewer than
/// `window`, out of `units` rows: their counts combined as if the words fell in rows
/// independently. The words of one query tend to share rows, so there are fewer still.
pub(super) fn likely_fewer(
    clauses: &[Clause],
    facets: &[Vec<Phrase>],
    units: f64,
    window: usize,
) -> bool {
    if units <= 0.0 {
        return true;
    }
    let share = |rows: f64| (rows / units).clamp(0.0, 1.0);
    let in_none: f64 = clauses.iter().map(|c| 1.0 - share(c.rows())).product();
    let in_facets: f64 = facets
        .iter()
        .map(|f| share(f.iter().map(|p| p.rows).sum()))
        .product();
    units * (1.0 - in_none) * in_facets < window as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clause(word: &str, rows: f64) -> Clause {
        Clause {
            word: word.into(),
            phrases: vec![Phrase {
                quoted: format!("\"{word}\""),
                rows,
            }],
            added: false,
        }
    }

    /// The estimate that decides whether matches are scored as they are counted: words taken
    /// as falling in rows independently, and a facet's share of the rows applied to them.
    #[test]
    fn matches_are_likely_fewer_by_the_words_share_of_rows_taken_as_independent() {
        let words = [clause("alpha", 30.0), clause("beta", 30.0)];
        // 60 rows: 60 * (1 - 1/2 * 1/2) = 45.
        assert!(likely_fewer(&words, &[], 60.0, 46));
        assert!(!likely_fewer(&words, &[], 60.0, 45));
        // A facet in a third of the rows: 15.
        let third = vec![vec![Phrase {
            quoted: "\"kpr\"".into(),
            rows: 20.0,
        }]];
        assert!(likely_fewer(&words, &third, 60.0, 16));
        assert!(!likely_fewer(&words, &third, 60.0, 15));
        // A word in every row: all of them.
        assert!(!likely_fewer(&[clause("wallet", 60.0)], &[], 60.0, 60));
        // Counts from a vocabulary larger than the rows (stale): still at most every row.
        assert!(likely_fewer(&[clause("wallet", 90.0)], &[], 60.0, 61));
    }
}
