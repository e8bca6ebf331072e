//! What a search by words also searches for beside the words typed: the abbreviations the
//! workspace defines (and their long forms), and its names written as one word.

use std::collections::HashSet;

use super::query::{runs, tokens, Clause, Phrase};
use super::{compound, plan};
use crate::workspace::{Workspace, WorkspaceError};

/// The abbreviations (or long forms) searched for at most for one long form (or
/// abbreviation) of a query.
const MAX_ABBREVIATIONS: usize = 3;

/// The abbreviations and long forms searched for at most for one query.
const MAX_ADDED: usize = 8;

/// An abbreviation (or long form) held by more than one unit in this many (and by more than
/// `COMMON_ABBREVIATION_ROWS`) is not searched for beside the words typed
/// (`Workspace::abbreviated`).
const COMMON_ABBREVIATION: f64 = 10.0;

/// Rows under which an abbreviation is never too common to search for.
const COMMON_ABBREVIATION_ROWS: f64 = 1_000.0;

impl Workspace {
    /// What `text` also searches for: the abbreviations the workspace defines for long forms
    /// it writes ("byte-order mark": BOM), and the long forms of the abbreviations it writes,
    /// each with what was typed for it and how many rows hold it. People ask in words, and
    /// trackers and code write the abbreviations, or the other way round.
    pub(super) fn abbreviations_for(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
    ) -> Result<Vec<Abbreviated>, WorkspaceError> {
        let defined = cache.abbreviations(conn)?;
        let mut out: Vec<Abbreviated> = Vec::new();
        if defined.by_long.is_empty() {
            return Ok(out);
        }
        // A word in a tenth of the units or more weighs little in the ranking (BM25's IDF),
        // and in thousands of them it widens what is ranked: "PR" for "pull request" in a
        // tracker (a search's time; in a small workspace nothing is common).
        let common = Self::most_rows_added(conn, cache)?;
        // Each distinct once, and looked up in sets: a query that repeats a word thousands of
        // times costs what its distinct words and runs cost.
        let mut seen = HashSet::new();
        let runs: Vec<String> = runs(text)
            .into_iter()
            .filter(|r| seen.insert(r.clone()))
            .collect();
        let typed: Vec<String> = tokens(text).filter(|w| seen.insert(w.clone())).collect();
        let typed_set: HashSet<&String> = typed.iter().collect();
        let runs_set: HashSet<&String> = runs.iter().collect();
        let forward = runs.iter().flat_map(|run| {
            let abbrs = defined
                .by_long
                .get(run)
                .or_else(|| defined.by_long.get(&format!("{run}s")))
                .or_else(|| run.strip_suffix('s').and_then(|r| defined.by_long.get(r)));
            abbrs
                .into_iter()
                .flatten()
                .take(MAX_ABBREVIATIONS)
                .map(move |a| (run, a, true))
        });
        let back = typed.iter().flat_map(|word| {
            let longs = defined
                .by_abbr
                .get(word)
                .or_else(|| word.strip_suffix('s').and_then(|w| defined.by_abbr.get(w)));
            longs
                .into_iter()
                .flatten()
                .take(MAX_ABBREVIATIONS)
                .map(move |l| (word, l, false))
        });
        let mut tried: HashSet<&String> = HashSet::new();
        for (typed_as, added, is_abbr) in forward.chain(back) {
            let already = if is_abbr {
                typed_set.contains(added)
            } else {
                runs_set.contains(added)
            };
            if already || !tried.insert(added) {
                continue;
            }
            if out.len() == MAX_ADDED {
                break;
            }
            let rows = cache.get(conn, added)?;
            if rows <= common {
                out.push(Abbreviated {
                    typed: typed_as.clone(),
                    added: added.clone(),
                    rows,
                    abbreviation: is_abbr,
                });
            }
        }
        Ok(out)
    }

    /// Adds to `clauses` what the query also searches for (`abbreviations_for`), and says so.
    pub(super) fn abbreviated(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
        clauses: &mut Vec<Clause>,
    ) -> Result<Option<String>, WorkspaceError> {
        let added = Self::abbreviations_for(conn, cache, text)?;
        let mut said: Vec<String> = Vec::new();
        for a in &added {
            let (word, typed) = if a.abbreviation {
                (a.added.to_uppercase(), format!("\"{}\"", a.typed))
            } else {
                (format!("\"{}\"", a.added), a.typed.to_uppercase())
            };
            let said_as = format!("{word} for {typed}");
            if add_clause(clauses, word, &a.added, a.rows) {
                said.push(said_as);
            }
        }
        Ok((!said.is_empty()).then(|| {
            format!(
                "also searched for {} (abbreviations this workspace defines)",
                said.join(", ")
            )
        }))
    }

    /// The most rows a term searched for beside the words typed (an abbreviation, a name
    /// written as one word) may be in: one in ten units, and never fewer than a thousand.
    fn most_rows_added(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
    ) -> Result<f64, WorkspaceError> {
        Ok((cache.units(conn)? / COMMON_ABBREVIATION).max(COMMON_ABBREVIATION_ROWS))
    }

    /// The workspace's names written as one word from the words of `text`
    /// (`compound::compounds`), as common as an abbreviation searched for may be.
    pub(super) fn compounds_for(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
    ) -> Result<std::sync::Arc<Vec<compound::Compound>>, WorkspaceError> {
        let common = Self::most_rows_added(conn, cache)?;
        compound::compounds(conn, cache, text, common)
    }

    /// Adds to `clauses` the workspace's names written as one word from the query's words
    /// (`compound::compounds`), and says so.
    pub(super) fn compounded(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
        clauses: &mut Vec<Clause>,
    ) -> Result<Option<String>, WorkspaceError> {
        let mut said: Vec<String> = Vec::new();
        for c in Self::compounds_for(conn, cache, text)?.iter() {
            if add_clause(clauses, format!("\"{}\"", c.joined), &c.joined, c.rows) {
                said.push(format!("{} for {}", c.joined, c.parts.join(" + ")));
            }
        }
        Ok((!said.is_empty()).then(|| {
            format!(
                "also searched for {} (names this workspace writes as one word)",
                said.join(", ")
            )
        }))
    }
}

/// One thing a query also searches for (`Workspace::abbreviations_for`).
pub(super) struct Abbreviated {
    /// What was typed for it: a long form, or an abbreviation, lowercase.
    typed: String,
    /// What is searched for as well: the abbreviation, or the long form.
    pub(super) added: String,
    /// How many rows hold `added`.
    rows: f64,
    /// Whether `added` is the abbreviation (of a long form typed).
    abbreviation: bool,
}

/// Adds the clause `word` searching for `phrase` (held by `rows` rows) beside the words typed,
/// unless a clause searches for that phrase already; whether it did.
fn add_clause(clauses: &mut Vec<Clause>, word: String, phrase: &str, rows: f64) -> bool {
    let quoted = format!("\"{phrase}\"");
    if clauses
        .iter()
        .any(|c| c.phrases.iter().any(|p| p.quoted == quoted))
    {
        return false;
    }
    clauses.push(Clause {
        word,
        phrases: vec![Phrase { quoted, rows }],
        added: true,
    });
    true
}
