//! What the user typed, as FTS5 sees it: the words (common ones dropped), each spelled as the
//! phrases the index holds for it, and the filter values as the index's facet tokens.

use crate::workspace::text::identifier_parts;

pub(super) const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where",
    "which", "who", "why", "with", "can", "there", "any", "we", "you", "my", "our",
];

/// A phrase of the FTS5 expression (quoted, so nothing in it is query syntax) and how many
/// rows hold it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Phrase {
    pub(super) quoted: String,
    pub(super) rows: f64,
}

/// One word of a query: a compound identifier is two phrases, its words (`"parse args"`) and
/// joined (`"parseargs"`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Clause {
    pub(super) word: String,
    pub(super) phrases: Vec<Phrase>,
    /// Searched for beside the words typed (an abbreviation, a name written as one word),
    /// not typed: it ranks, but never alone decides which rows are ranked.
    pub(super) added: bool,
}

impl Clause {
    /// Rows holding the word: at most the sum over its phrases.
    pub(super) fn rows(&self) -> f64 {
        self.phrases.iter().map(|p| p.rows).sum()
    }
}

/// The words of what the user typed, common words dropped, each spelled as phrases.
pub(super) fn words(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.')) {
        let word = word.trim_matches(|c: char| c == '.' || c == '-');
        if word.is_empty() {
            continue;
        }
        let parts = identifier_parts(word);
        let phrases = match parts.as_slice() {
            [] => continue,
            [p] if STOP_WORDS.contains(&p.as_str()) => continue,
            [p] => vec![p.clone()],
            _ => vec![parts.join(" "), parts.concat()],
        };
        if !out.iter().any(|(_, p)| *p == phrases) {
            out.push((word.to_string(), phrases));
        }
    }
    out
}

/// The most words a long form is looked up with: an abbreviation's 8 letters and three
/// linking words (`text::abbreviations`).
const MAX_RUN_WORDS: usize = 11;

/// The words of `text` as the index splits them (at every character that is not a letter or
/// digit), lowercase: what a long form or an abbreviation in a query is made of.
pub(super) fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

/// The words of a query its runs are taken from at most: a question is far shorter, and a
/// pasted page costs no more than this.
const MAX_RUN_TOKENS: usize = 1_000;

/// The runs of 2 to 11 consecutive words of what the user typed (its first 1,000 words),
/// lowercase, joined by spaces: where a long form the workspace abbreviates may be. Words are
/// split as the index splits them.
pub(super) fn runs(text: &str) -> Vec<String> {
    let tokens: Vec<String> = tokens(text).take(MAX_RUN_TOKENS).collect();
    let mut out = Vec::new();
    for start in 0..tokens.len() {
        for len in 2..=MAX_RUN_WORDS {
            match tokens.get(start..start + len) {
                Some(run) => out.push(run.join(" ")),
                None => break,
            }
        }
    }
    out
}

/// What the user typed as an FTS5 expression: its words OR-ed, so that BM25 ranks the units
/// that match more of them first.
pub fn fts_expression(text: &str) -> Option<String> {
    let w = words(text);
    (!w.is_empty()).then(|| {
        w.iter()
            .map(|(_, phrases)| group(phrases.iter().map(|p| format!("\"{p}\""))))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

/// Phrases OR-ed, in parentheses when there are several.
pub(super) fn group(quoted: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = quoted.collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        format!("({})", parts.join(" OR "))
    }
}

/// A filter value as the token the index's `facets` column holds for it: the hex of its
/// lowercase bytes, A and E written Q and Z, after a one-letter prefix naming the filter.
/// Migration 2 in db.rs spells the same tokens in SQL; SQLite's `lower()` folds ASCII only, and
/// so does this.
pub(crate) fn facet_token(prefix: char, value: &str) -> String {
    let mut s = String::with_capacity(1 + 2 * value.len());
    s.push(prefix);
    for b in value.to_ascii_lowercase().bytes() {
        for nibble in [b >> 4, b & 15] {
            s.push(match nibble {
                10 => 'q',
                14 => 'z',
                n => char::from_digit(u32::from(n), 16).unwrap_or('0'),
            });
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_safe_fts_expressions() {
        assert_eq!(
            fts_expression("parse_args").unwrap(),
            r#"("parse args" OR "parseargs")"#
        );
        assert_eq!(
            fts_expression("How does ParseArgs handle -x?").unwrap(),
            r#"("parse args" OR "parseargs") OR "handle" OR "x""#
        );
        // Query syntax in the input stays text.
        assert_eq!(
            fts_expression("a\" OR NOT (b*)").unwrap(),
            r#""not" OR "b""#
        );
        assert_eq!(fts_expression("the of ..."), None);
    }

    #[test]
    fn runs_are_the_words_a_long_form_may_be() {
        let got = runs("A UTF-8 byte-order mark.");
        assert_eq!(
            got,
            [
                "a utf",
                "a utf 8",
                "a utf 8 byte",
                "a utf 8 byte order",
                "a utf 8 byte order mark",
                "utf 8",
                "utf 8 byte",
                "utf 8 byte order",
                "utf 8 byte order mark",
                "8 byte",
                "8 byte order",
                "8 byte order mark",
                "byte order",
                "byte order mark",
                "order mark",
            ]
        );
        assert!(runs("one").is_empty());
        assert_eq!(
            runs(&"w ".repeat(20))
                .iter()
                .map(|r| r.split(' ').count())
                .max(),
            Some(11)
        );
    }

    #[test]
    fn facet_tokens_match_the_sql_spelling_and_survive_stemming() {
        assert_eq!(facet_token('k', "Issue"), "k6973737565");
        // Every A and E nibble is spelled Q and Z: no vowel for the stemmer to act on.
        assert_eq!(facet_token('h', "ed"), "h6564");
        assert_eq!(facet_token('g', "j"), "g6q");
        assert_eq!(facet_token('t', "n"), "t6z");
        let conn = crate::workspace::db::open_in_memory().unwrap();
        for v in [
            "Issue",
            "jo",
            "joed",
            "jos",
            "bug fix",
            "ÄÖ–ü",
            "ed",
            "e",
            "a-b_c",
        ] {
            let sql: String = conn
                .query_row(
                    "SELECT 'x' || replace(replace(hex(lower(?1)), 'A', 'Q'), 'E', 'Z')",
                    [v],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(sql.to_lowercase(), facet_token('x', v), "{v}");
        }
    }
}
