//! Burrow's own words inside what the model and the user read: the marks where it cut a text
//! or a listing, and the notes that guide the model through a run. Each is built here and
//! nowhere else, so that an answer which copied one can be recognised here too
//! (`cut_marks`, `GUIDANCE`).

use std::sync::OnceLock;

use regex::Regex;

// ---- marks where a text was cut ----

/// A text cut to its first `kept` of `total` characters.
pub fn cut_chars(kept: usize, total: usize) -> String {
    format!("[cut: {kept} of {total} characters shown]")
}

/// A file read cut after `line` of `total` lines; the next read starts at `line + 1`.
pub fn cut_at_line(line: usize, total: usize) -> String {
    format!(
        "[cut at line {line} of {total}; read on with start_line {}]",
        line + 1
    )
}

/// An issue's or pull request's text cut on import to its first `kept` of `total` characters.
pub fn cut_on_import(kept: usize, total: usize) -> String {
    format!("[cut by Burrow on import: the first {kept} of {total} characters are kept]")
}

/// A listing that shows `shown` of `total` `things` (entries, files); `hint` says where to
/// find the rest, after a `; `.
pub fn listed(shown: usize, total: usize, things: &str, hint: Option<&str>) -> String {
    match hint {
        Some(hint) => format!("[{shown} of {total} {things} listed; {hint}]"),
        None => format!("[{shown} of {total} {things} listed]"),
    }
}

/// Every mark above, whole, with the space before it: any `[cut: ` up to a `]` would take a
/// slice `data[cut: cut + n]` out of an answer's code.
const CUT_MARKS: &str = r"\s*\[(?:cut(?:: \d+ of \d+ characters shown| at line \d+ of \d+; read on with start_line \d+| by Burrow on import: the first \d+ of \d+ characters are kept)|\d+ of \d+ (?:entries|files) listed[^\]\n]*)\]";

/// The marks' pattern (`None` only if it failed to compile, which a test rules out).
pub fn cut_marks() -> Option<&'static Regex> {
    static MARKS: OnceLock<Option<Regex>> = OnceLock::new();
    MARKS.get_or_init(|| Regex::new(CUT_MARKS).ok()).as_ref()
}

// ---- marks of a search's matches ----

/// What marks a match in a search's snippets (`«word»`); the text's own « and » are shown as
/// ‹ and › there, so every one in a snippet is a mark (`workspace/search/snippet.rs`).
pub const MATCH_MARKS: [char; 2] = ['«', '»'];

/// `text` without the match marks a model copied from a snippet: `«search»es` reads
/// `searches`, and `NAME_«PART»_REST` is the identifier again.
pub fn without_match_marks(text: &str) -> String {
    text.replace(MATCH_MARKS, "")
}

// ---- notes that guide the model ----

/// After Burrow's first search: what the model can do next, in a line.
pub const AFTER_SEARCH: &str =
    "These are the workspace's best matches for the task. If one answers it, \
     answer and cite it; to check one, open it; else search with other words or another kind.";

/// After the model's route to a list, a count, a history or a definition: its next step
/// answers from it (see `Agent::routed_answer_due`).
pub const AFTER_ROUTE: &str =
    "Answer the task from this now: give each part it asks for, and name only the items that answer it.";

/// After a check the model said yes to.
pub fn answer_citing(cite: &str) -> String {
    format!("Then give the final answer, citing {cite}.")
}

/// After a check the model said no to, when Burrow opens another match.
pub const NEXT_MATCH: &str = "Then the next match.";

/// After a check the model said no to, when no leading match is left to open.
pub const NO_LEADING_MATCH: &str =
    "None of the leading matches answers the task. Search with other words or another kind, \
     open another result, or answer that the workspace does not hold it.";

/// After a call that opened one item: small models otherwise open it again and again.
pub fn answer_if_it_answers(cite: &str) -> String {
    format!("If this answers the task, give the final answer now and cite {cite}.")
}

/// After a plan change that leaves nothing to do.
pub const PLAN_DONE: &str = "Nothing in the plan is left to do: give the final answer now.";

/// How the notes above start, lowercased: a sentence of an answer that starts so repeats
/// Burrow, not the workspace. A sentence's start, not any place in it: "It finds the first
/// match, then the next match." is an answer; and `NO_LEADING_MATCH` is left alone, since it
/// is what an answer that the workspace does not hold it may say.
pub const GUIDANCE: &[&str] = &[
    "if one answers it,",
    "if this answers the task,",
    "then give the final answer",
    "then the next match.",
    "these are the workspace's best matches",
    "the workspace's best matches for the task.",
    "nothing in the plan is left to do",
    "answer the task from this now",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cut_mark_is_recognised_whole() {
        let re = cut_marks().expect("the pattern compiles");
        for mark in [
            cut_chars(1200, 1348),
            cut_at_line(40, 310),
            cut_on_import(60000, 81234),
            listed(200, 4000, "entries", Some("find the others with search")),
            listed(100, 2500, "files", None),
        ] {
            let text = format!("before {mark} after");
            assert_eq!(re.replace_all(&text, ""), "before after", "{mark}");
        }
        assert!(!re.is_match("rows = data[cut: cut + n]"));
    }

    #[test]
    fn every_note_to_the_model_is_recognised_as_guidance() {
        let starts = |note: &str| {
            let lower = note.to_lowercase();
            GUIDANCE.iter().any(|g| lower.starts_with(g))
        };
        for note in [
            AFTER_SEARCH.to_string(),
            answer_citing("o/r#1"),
            NEXT_MATCH.to_string(),
            answer_if_it_answers("o/r#1"),
            PLAN_DONE.to_string(),
            AFTER_ROUTE.to_string(),
        ] {
            assert!(starts(&note), "{note}");
        }
        assert!(!starts(NO_LEADING_MATCH));
    }
}
