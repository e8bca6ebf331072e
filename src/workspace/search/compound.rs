//! Names written as one word from words a query has apart: `.agignore` for "ignore files of
//! ag", `-debuglogfile` for "the debug log file", `getblocktemplate` for "get block template".
//! Configuration keys, command-line options, RPC names and file names are written so, and
//! the index holds them whole (no case or separator shows where their words meet), while
//! people ask in words. The workspace's own vocabulary says which such names exist: each is
//! searched for beside the words typed, as an abbreviation is.

use std::collections::HashSet;
use std::sync::Arc;

use rusqlite::Connection;

use super::plan::PhraseRows;
use super::query::{tokens, STOP_WORDS};
use crate::workspace::rank::query_tokens;
use crate::workspace::{db_err, WorkspaceError};

/// A name of the workspace made of words of the query.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Compound {
    /// The name as the query's words spell it (`agignore`); the index stems it as it stems
    /// the name.
    pub(super) joined: String,
    /// The query's words it is made of, in order.
    pub(super) parts: Vec<String>,
    /// How many rows hold it.
    pub(super) rows: f64,
}

/// Words of a query a name is looked for from at most: a question has far fewer, and a
/// pasted page costs no more than this.
const MAX_STARTS: usize = 32;

/// Words of the query the parts are taken from at most.
const MAX_PARTS: usize = 200;

/// Vocabulary terms read at most for one starting word: those beginning with it, in order.
/// A common start ("set") begins a few hundred terms in a large workspace.
const MAX_TERMS_READ: usize = 2_000;

/// Rows of the vocabulary read at most for one query (a term has one per column it is in):
/// a pasted paragraph of short common words costs no more than this.
const MAX_ROWS_READ: usize = 8_000;

/// The longest name considered, in bytes.
const MAX_NAME: usize = 48;

/// Names searched for at most for one query.
pub(super) const MAX_COMPOUNDS: usize = 4;

/// Candidate names checked with the index's tokenizer at most for one query.
const MAX_CHECKED: usize = 256;

/// The workspace's names written as one word from two or more of `text`'s words (none of them
/// a stop word: "bitcointhe" is a typo, "into" a word), held by `common` rows at most; those
/// of the most parts, then the rarest, first.
pub(super) fn compounds(
    conn: &Connection,
    cache: &mut PhraseRows,
    text: &str,
    common: f64,
) -> Result<Arc<Vec<Compound>>, WorkspaceError> {
    if let Some(found) = cache.compounds_of(conn, text)? {
        return Ok(found);
    }
    let stamp = cache.stamp();
    let found = Arc::new(find(conn, cache, text, common)?);
    // Kept only for the units they were found among: an index change meanwhile moved the
    // cache on, and these may be of the vocabulary before it.
    if cache.stamp() == stamp {
        cache.keep_compounds(text, Arc::clone(&found));
    }
    Ok(found)
}

fn find(
    conn: &Connection,
    cache: &mut PhraseRows,
    text: &str,
    common: f64,
) -> Result<Vec<Compound>, WorkspaceError> {
    let mut seen = HashSet::new();
    let parts: Vec<String> = tokens(text)
        .filter(|w| w.len() >= 2 && !w.bytes().all(|b| b.is_ascii_digit()))
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .filter(|w| seen.insert(w.clone()))
        .take(MAX_PARTS)
        .collect();
    if parts.len() < 2 {
        return Ok(Vec::new());
    }
    // What the words typed are searched for as already: a name that is one of them is no
    // addition.
    let typed: HashSet<String> = query_tokens(conn, &parts.join(" "))?.into_iter().collect();
    let mut found: Vec<Compound> = Vec::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut checked = 0;
    let mut read = 0;
    // Names written as one word in the text: a term the `terms` column holds in as many rows
    // is mostly an identifier's parts joined (`BinaryDetection`, `compressed_gzip`), and
    // those parts match already.
    let mut st = conn
        .prepare_cached("SELECT term, col, doc FROM docs_vocab_col WHERE term >= ?1")
        .map_err(db_err("reading the vocabulary"))?;
    'starts: for start in parts.iter().take(MAX_STARTS) {
        let mut terms: Vec<(String, i64, i64)> = Vec::new();
        {
            // From just past the word itself: the vocabulary counts each term's rows as it
            // reads it, and the word is usually the most common term that begins so.
            let mut rows = st
                .query([format!("{start}\u{1}")])
                .map_err(db_err("reading the vocabulary"))?;
            while let Some(row) = rows.next().map_err(db_err("reading the vocabulary"))? {
                read += 1;
                if read > MAX_ROWS_READ {
                    break;
                }
                let term: String = row.get(0).map_err(db_err("reading the vocabulary"))?;
                if !term.starts_with(start.as_str()) {
                    break;
                }
                let col: String = row.get(1).map_err(db_err("reading the vocabulary"))?;
                let docs: i64 = row.get(2).map_err(db_err("reading the vocabulary"))?;
                if terms.last().is_none_or(|(t, _, _)| *t != term) {
                    if terms.len() == MAX_TERMS_READ {
                        break;
                    }
                    terms.push((term, 0, 0));
                }
                if let Some(last) = terms.last_mut() {
                    match col.as_str() {
                        "title" | "body" => last.1 += docs,
                        "terms" => last.2 += docs,
                        _ => {}
                    }
                }
            }
        }
        for (term, text_rows, identifier_rows) in terms {
            if text_rows <= identifier_rows
                || term.len() > MAX_NAME
                || term.len() < start.len() + 2
                || typed.contains(&term)
                || !done.insert(term.clone())
            {
                continue;
            }
            for (joined, made_of) in spellings(&term, &parts) {
                if checked == MAX_CHECKED {
                    break 'starts;
                }
                checked += 1;
                // The index stems a name as a whole ("debuglogfile": "debuglogfil"), so the
                // spelling is right when it stems to the term.
                if query_tokens(conn, &joined)? == [term.as_str()] {
                    let rows = cache.get(conn, &joined)?;
                    if rows > common {
                        break;
                    }
                    found.push(Compound {
                        joined,
                        parts: made_of,
                        rows,
                    });
                    break;
                }
            }
        }
    }
    found.sort_by(|a, b| {
        b.parts
            .len()
            .cmp(&a.parts.len())
            .then(a.rows.total_cmp(&b.rows))
            .then_with(|| a.joined.cmp(&b.joined))
    });
    found.truncate(MAX_COMPOUNDS);
    Ok(found)
}

/// The ways `term` (a stemmed vocabulary term) may be the query's words written as one: whole
/// words from its start, then a last word whose stem ends it (`agignor`: `ag` + `ignore`).
/// Each with the words, to be checked against the index's tokenizer.
fn spellings(term: &str, parts: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    let mut budget = SPELLING_STEPS;
    spell(term, 0, parts, &mut path, &mut out, &mut budget);
    out
}

/// Steps tried at most to spell one term: words that begin one another ("aa", "aaa", …) and
/// a term of them would otherwise be split in millions of ways.
const SPELLING_STEPS: usize = 1_000;

fn spell(
    term: &str,
    at: usize,
    parts: &[String],
    path: &mut Vec<String>,
    out: &mut Vec<(String, Vec<String>)>,
    budget: &mut usize,
) {
    // A handful of ways at most: a name is a few words long.
    if out.len() >= 4 || path.len() >= 6 || *budget == 0 {
        return;
    }
    *budget -= 1;
    let rest = &term[at..];
    if !path.is_empty() {
        for last in parts {
            if out.len() < 4 && is_stem_of(rest, last) {
                let mut words = path.clone();
                words.push(last.clone());
                out.push((format!("{}{last}", &term[..at]), words));
            }
        }
    }
    for part in parts {
        if rest.len() > part.len() && rest.starts_with(part.as_str()) {
            path.push(part.clone());
            spell(term, at + part.len(), parts, path, out, budget);
            path.pop();
        }
    }
}

/// Whether `end` may be what stemming leaves of `word` at the end of a name: the word itself,
/// or it with a few of its last letters removed or changed (`ignor`, `copi`).
fn is_stem_of(end: &str, word: &str) -> bool {
    if end == word {
        return true;
    }
    let common = end
        .bytes()
        .zip(word.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    common >= 2 && common + 3 >= word.len() && common + 2 >= end.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_term_is_spelt_from_whole_words_then_a_stemmed_last_one() {
        let parts = words(&["ignore", "files", "ag", "debug", "log", "file"]);
        assert_eq!(
            spellings("agignor", &parts),
            vec![("agignore".to_string(), words(&["ag", "ignore"]))]
        );
        let s = spellings("debuglogfil", &parts);
        assert!(
            s.contains(&("debuglogfile".to_string(), words(&["debug", "log", "file"]))),
            "{s:?}"
        );
        // Not made of the words: nothing.
        assert!(spellings("agent", &parts).is_empty());
        assert!(spellings("logic", &parts).is_empty());
        // One word alone is no compound.
        assert!(spellings("ignor", &parts).is_empty());
    }

    #[test]
    fn words_that_begin_one_another_are_split_in_bounded_steps() {
        let parts: Vec<String> = (2..40).map(|n| "a".repeat(n)).collect();
        let term = format!("{}zzzz", "a".repeat(44));
        // Over a million ways to split 44 letters: the steps run out first.
        let (mut out, mut path, mut budget) = (Vec::new(), Vec::new(), SPELLING_STEPS);
        spell(&term, 0, &parts, &mut path, &mut out, &mut budget);
        assert_eq!((out.len(), budget), (0, 0));
        // A term with few ways is spelt within them.
        let (mut out, mut budget) = (Vec::new(), SPELLING_STEPS);
        spell("aaazzzz", 0, &parts, &mut path, &mut out, &mut budget);
        assert!(out.is_empty() && budget > 0);
    }

    #[test]
    fn a_stem_keeps_the_words_start() {
        assert!(is_stem_of("ignor", "ignore"));
        assert!(is_stem_of("copi", "copy"));
        assert!(is_stem_of("log", "log"));
        assert!(!is_stem_of("ignoring", "ig"));
        assert!(!is_stem_of("x", "xz"));
    }
}
