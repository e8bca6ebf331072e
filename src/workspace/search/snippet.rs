//! Where a hit's words are in its text: the query's words as needles (with crude stems), the
//! line of the first match, and snippets with the matches marked « ».

use super::query::STOP_WORDS;
use crate::workspace::text::identifier_parts;

/// The words of a query, lowercased, to locate and mark the matches in a unit's text; with
/// crude stems, so `crashes` also marks `crashed` (the index matches on porter stems).
pub(super) fn needles(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.len() < 2 || STOP_WORDS.contains(&word.to_lowercase().as_str()) {
            continue;
        }
        let lower = word.to_lowercase();
        if let Some(stem) = ["ing", "ed", "es", "s"]
            .iter()
            .find_map(|s| lower.strip_suffix(s))
            .filter(|stem| stem.chars().count() >= 4)
        {
            out.push(stem.to_string());
        }
        out.push(lower);
        for p in identifier_parts(word) {
            if p.len() >= 3 {
                out.push(p);
            }
        }
    }
    out.sort();
    out.dedup();
    // Whole words first: a line with `parse_args` beats one with `args`.
    out.sort_by_key(|w| std::cmp::Reverse(w.len()));
    out
}

pub(super) const SNIPPET_WORDS: usize = 24;

/// About `n` words of `body` around the first needle (a few words of context before it), on one
/// line, with the needles marked and elisions shown as `…`. From the start when no needle is in
/// the body (the match was in the title).
pub(super) fn words_snippet(body: &str, needles: &[String], n: usize) -> String {
    let words: Vec<&str> = body.split_whitespace().collect();
    let first = words
        .iter()
        .position(|w| {
            let w = w.to_lowercase();
            needles.iter().any(|n| find_word(&w, n, 0).is_some())
        })
        .unwrap_or(0);
    let start = first.saturating_sub(4);
    let end = (start + n).min(words.len());
    let mut out = String::new();
    if start > 0 {
        out.push_str("… ");
    }
    out.push_str(&highlight(&words[start..end].join(" "), needles));
    if end < words.len() {
        out.push_str(" …");
    }
    out
}

/// Up to three lines of `body` from line `idx`, dedented, with the needles marked.
pub(super) fn line_snippet(body: &str, idx: usize, needles: &[String]) -> String {
    let lines: Vec<&str> = body.lines().skip(idx).take(3).map(str::trim_end).collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| highlight(l.get(indent..).unwrap_or(l.trim_start()), needles))
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

/// Marks case-insensitive occurrences of the needles with « ». The text's own « and » become
/// ‹ and ›, so that every « » in a snippet is a mark: the UI and the model read them so, and a
/// file or an issue quoting with guillemets showed false marks. A snippet is a preview; the
/// item opened shows its text as written.
fn highlight(line: &str, needles: &[String]) -> String {
    let own;
    let line = if line.contains(['«', '»']) {
        own = line.replace('«', "‹").replace('»', "›");
        own.as_str()
    } else {
        line
    };
    let lower = line.to_lowercase();
    // Byte ranges to mark, from the lowercase copy; only used when lowercasing kept the lengths.
    if lower.len() != line.len() {
        return line.to_string();
    }
    let mut marks = vec![false; line.len()];
    for n in needles {
        let mut from = 0;
        while let Some(start) = find_word(&lower, n, from) {
            for m in &mut marks[start..start + n.len()] {
                *m = true;
            }
            from = start + n.len();
        }
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut inside = false;
    for (i, c) in line.char_indices() {
        if marks[i] && !inside {
            out.push('«');
            inside = true;
        } else if !marks[i] && inside {
            out.push('»');
            inside = false;
        }
        out.push(c);
    }
    if inside {
        out.push('»');
    }
    out
}

/// The next place from `from` in `lower` where `needle` starts a word (`args` in `parse_args`,
/// `crash` in `crashed`); a needle shorter than four characters must be the whole word, so
/// that `no` does not mark `not`.
fn find_word(lower: &str, needle: &str, from: usize) -> Option<usize> {
    let is_word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut at = from;
    while let Some(pos) = lower.get(at..)?.find(needle) {
        let start = at + pos;
        let end = start + needle.len();
        let starts_word = !is_word(lower[..start].chars().next_back());
        let ends_word = needle.chars().count() >= 4 || !is_word(lower[end..].chars().next());
        if starts_word && ends_word {
            return Some(start);
        }
        at = start + needle.chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Index (0-based) of the first line of `body` that contains one of `needles`
/// (case-insensitive), or 0.
pub(super) fn first_matching_line(body: &str, needles: &[String]) -> usize {
    for needle in needles {
        for (i, line) in body.lines().enumerate() {
            if find_word(&line.to_lowercase(), needle, 0).is_some() {
                return i;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_mark_the_words() {
        let body = "x\n    // Reuse the KV cache\n        here();\n    done\n    more";
        let n = needles("kv cache");
        assert_eq!(
            line_snippet(body, 1, &n),
            "// Reuse the «KV» «cache»\n    here();\ndone"
        );
        let body = "One two three four five six seven crashed eight\nnine ten eleven";
        assert_eq!(
            words_snippet(body, &needles("crashes"), 5),
            "… four five six seven «crash»ed …"
        );
        assert_eq!(words_snippet("a b c", &needles("zzz"), 2), "a b …");
        assert_eq!(
            highlight("no, not now: parse_args(NoArgs)", &needles("no args")),
            "«no», not now: parse_«args»(NoArgs)"
        );
    }

    /// A snippet of text that quotes with guillemets (« and », as French text and some docs do)
    /// showed marks that were no matches: the UI and the model read every « » as a mark.
    #[test]
    fn the_texts_own_guillemets_are_not_read_as_marks() {
        let body = "Le mot «cache» est cité, puis le cache lui-même.";
        let s = words_snippet(body, &needles("cache"), 24);
        assert_eq!(s, "Le mot ‹«cache»› est cité, puis le «cache» lui-même.");
        // Where lowercasing changes lengths nothing is marked, and still nothing is mistaken.
        let s = line_snippet("İstanbul «cache» »", 0, &needles("cache"));
        assert_eq!(s, "İstanbul ‹cache› ›");
    }

    #[test]
    fn the_matching_line_is_found() {
        let body = "fn main() {\n    let a = 1;\n    parse_args(a);\n}";
        assert_eq!(first_matching_line(body, &needles("parse_args")), 2);
        assert_eq!(first_matching_line(body, &needles("nothing")), 0);
    }
}
