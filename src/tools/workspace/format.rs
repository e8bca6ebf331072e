//! What the workspace tools share: dates, limits and clipping, and search results as the model
//! reads them (an empty result says what was searched).

use std::fmt::Write as _;

use crate::tools::{Locator, ToolError, ToolOutput};
use crate::workspace::{day_start, Kind, SearchHit, SearchQuery, Workspace};

pub(super) fn date(t: Option<i64>) -> String {
    t.and_then(|t| chrono::DateTime::from_timestamp(t, 0))
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "?".into())
}

pub(super) fn parse_date(field: &str, s: &Option<String>) -> Result<Option<i64>, ToolError> {
    match s {
        // Blank, as a model that fills every field writes it: no date asked for.
        None => Ok(None),
        Some(s) if s.trim().is_empty() => Ok(None),
        Some(s) => day_start(s).map(Some).ok_or_else(|| {
            ToolError::InvalidArguments(format!("{field} {s:?} is not a date like 2024-05-31"))
        }),
    }
}

pub(super) fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}… [{} more characters]", s.chars().count() - max)
}

pub(super) fn limit(l: Option<usize>, default: usize) -> usize {
    l.unwrap_or(default).clamp(1, 50)
}

/// Search results as the model reads them. Nothing invites paging: small models paged one
/// query to its end instead of searching with other words (Qwen2.5-Coder-1.5B spent whole
/// runs so); `offset` stays among the tools' parameters.
/// A page of hits, numbered from `offset + 1`: a model that asked for the next page and saw
/// "1." again could not tell the new results from the first ones.
/// Whether `line` is the header `hits_text` writes above a page of results: Burrow's framing,
/// not something a result says.
pub fn is_results_header(line: &str) -> bool {
    let line = line.trim_start();
    let (lead, rest) = line.split_once(' ').unwrap_or((line, ""));
    let counted = lead.chars().all(|c| c.is_ascii_digit())
        && (rest.starts_with("result for ") || rest.starts_with("results for "));
    counted || (lead == "Results" && rest.contains(" for ") && rest.ends_with(':'))
}

/// `text` (a page of results as `hits_text` writes it, in whatever frame) with each result's
/// head line, without the snippet lines under it or the count of its other matches.
pub fn without_snippets(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_hit = false;
    for line in text.lines() {
        if is_hit_head(line) {
            in_hit = true;
            out.push(shortened_head(&without_also_note(line)));
            continue;
        } else if in_hit && line.starts_with(SNIPPET_INDENT) {
            continue;
        } else {
            in_hit = false;
        }
        out.push(line.to_string());
    }
    out.join("\n")
}

/// Characters of a head line shown without its snippets: the number, kind, place and the
/// title's start, enough to tell the results apart.
const SHORT_HEAD_CHARS: usize = 100;

fn shortened_head(head: &str) -> String {
    if head.chars().count() <= SHORT_HEAD_CHARS {
        return head.to_string();
    }
    let cut: String = head.chars().take(SHORT_HEAD_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// A head line without its ` (N more matches in this …)`.
fn without_also_note(head: &str) -> String {
    let Some(at) = head.find(" more match") else {
        return head.to_string();
    };
    let open = head[..at].rfind(" (");
    let close = head[at..].find(')').map(|c| at + c + 1);
    match (open, close) {
        (Some(o), Some(c)) if head[o + 2..at].chars().all(|ch| ch.is_ascii_digit()) => {
            format!("{}{}", &head[..o], &head[c..])
        }
        _ => head.to_string(),
    }
}

/// What `hits_text` writes before each of a result's snippet lines.
const SNIPPET_INDENT: &str = "   ";

/// `1. [code] …`: a result's head line.
fn is_hit_head(line: &str) -> bool {
    let Some((n, rest)) = line.split_once(". [") else {
        return false;
    };
    !n.is_empty()
        && n.chars().all(|c| c.is_ascii_digit())
        && rest
            .split_once("] ")
            .is_some_and(|(kind, _)| kind.chars().all(|c| c.is_ascii_lowercase()))
}

fn hits_text(what: &str, hits: &[SearchHit], offset: usize) -> String {
    let mut out = String::new();
    if offset == 0 {
        let _ = writeln!(
            out,
            "{} result{} for {what}:",
            hits.len(),
            if hits.len() == 1 { "" } else { "s" }
        );
    } else {
        let _ = writeln!(
            out,
            "Results {} to {} for {what}:",
            offset + 1,
            offset + hits.len()
        );
    }
    for (i, h) in hits.iter().enumerate() {
        let mut head = format!("{}. [{}] ", offset + i + 1, h.kind);
        match h.kind {
            Kind::Code | Kind::Doc => head.push_str(&h.location()),
            Kind::Commit => {
                let _ = write!(
                    head,
                    "{} {} ({}, {})",
                    h.location(),
                    h.title,
                    h.author.as_deref().unwrap_or("?"),
                    date(h.time)
                );
            }
            Kind::Issue | Kind::Pr => {
                let _ = write!(
                    head,
                    "{} {} [{}]",
                    h.location(),
                    h.title
                        .trim_start_matches(&format!("#{} ", h.number.unwrap_or(0))),
                    h.state.as_deref().unwrap_or("?")
                );
            }
        }
        if matches!(h.kind, Kind::Doc) && h.title != h.path.clone().unwrap_or_default() {
            let _ = write!(head, " — {}", h.title);
        }
        if let Some(also) = h.also_note() {
            let _ = write!(head, " ({also})");
        }
        let _ = writeln!(out, "{head}  (repo {})", h.repo);
        for line in h.snippet.lines().take(3) {
            let _ = writeln!(out, "{SNIPPET_INDENT}{line}");
        }
    }
    out
}

fn no_hits(what: &str, offset: usize) -> String {
    if offset > 0 {
        // Past the last page: the words found what they found, nothing to change in them.
        return format!("No more results for {what} past the first {offset}.");
    }
    format!("No results for {what}. Try fewer or different words, or another kind.")
}

/// Characters of a query its results repeat. A longer one (a whole question) is not
/// repeated: the model reads it in the call just above, and small models copied the repeated
/// text into their next query.
const QUERY_ECHO: usize = 60;

fn describe_query(q: &SearchQuery) -> String {
    let mut s = if q.text.chars().count() > QUERY_ECHO {
        "the query".to_string()
    } else {
        format!("{:?}", q.text)
    };
    if !q.kinds.is_empty() {
        let kinds: Vec<&str> = q.kinds.iter().map(|k| k.as_str()).collect();
        let _ = write!(s, " in {}", kinds.join("/"));
    }
    for (label, v) in [
        ("repo", &q.repo),
        ("state", &q.state),
        ("label", &q.label),
        ("author", &q.author),
        ("path", &q.path),
    ] {
        // Blank, it filters nothing (`Workspace::search`), and is not said.
        if let Some(v) = v.as_deref().filter(|v| !v.trim().is_empty()) {
            let _ = write!(s, ", {label} {v}");
        }
    }
    s
}

/// `run_search` keeping only the hits `keep` takes (a filter the search itself has not), read
/// from the first page of the most results a search gives; `said` is added to what was
/// searched.
pub(super) fn run_search_kept(
    ws: &Workspace,
    q: SearchQuery,
    keep: impl Fn(&SearchHit) -> bool,
    said: &str,
) -> Result<ToolOutput, ToolError> {
    let what = format!("{}{said}", describe_query(&q));
    let want = q.limit;
    let mut page = ws.search(&SearchQuery {
        limit: crate::workspace::search::MAX_LIMIT,
        offset: 0,
        ..q
    })?;
    page.hits.retain(|h| keep(h));
    page.hits.truncate(want);
    let mut text = if page.hits.is_empty() {
        no_hits(&what, 0)
    } else {
        hits_text(&what, &page.hits, 0)
    };
    if let Some(note) = &page.note {
        let _ = writeln!(text, "Note: {note}.");
    }
    let items = page.hits.iter().filter_map(Locator::of_hit);
    Ok(ToolOutput::new(text, &page).with_items(items))
}

pub(super) fn run_search(ws: &Workspace, q: SearchQuery) -> Result<ToolOutput, ToolError> {
    let what = describe_query(&q);
    let page = ws.search(&q)?;
    let mut text = if page.hits.is_empty() {
        no_hits(&what, q.offset)
    } else {
        hits_text(&what, &page.hits, q.offset)
    };
    if let Some(note) = &page.note {
        let _ = writeln!(text, "Note: {note}.");
    }
    let items = page.hits.iter().filter_map(Locator::of_hit);
    Ok(ToolOutput::new(text, &page).with_items(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = concat!(
        "Observation:\n2 results for the query in code:\n",
        "1. [code] crates/a.rs:3 (2 more matches in this file)  (repo r)\n",
        "   let x = «limit»;\n",
        "   y();\n",
        "2. [issue] #7 Crash [open]  (repo o/r)\n",
        "   It «crashes».\n",
        "Plan: [ ] 1: Search"
    );

    #[test]
    fn a_page_without_snippets_keeps_each_results_head_and_the_frame_but_no_match_counts() {
        assert_eq!(
            without_snippets(PAGE),
            "Observation:\n2 results for the query in code:\n\
1. [code] crates/a.rs:3  (repo r)\n\
2. [issue] #7 Crash [open]  (repo o/r)\n\
Plan: [ ] 1: Search"
        );
        // A long head keeps its start.
        let long = format!("1. [issue] #7 {}  (repo o/r)", "Crash ".repeat(30));
        let short = without_snippets(&long);
        assert!(short.starts_with("1. [issue] #7 Crash Crash"), "{short}");
        assert!(
            short.chars().count() <= 100 && short.ends_with('…'),
            "{short}"
        );
        // Text that is no page of results is left as it is.
        let file = "src/a.rs (lines 1-2 of 2):\n1  fn a() {\n2     }";
        assert_eq!(without_snippets(file), file);
    }

    #[test]
    fn a_results_header_is_told_from_a_result() {
        assert!(is_results_header("5 results for the query in commit:"));
        assert!(is_results_header("1 result for the query:"));
        assert!(is_results_header("Results 6 to 10 for the query:"));
        assert!(!is_results_header("1. [code] crates/a.rs:3"));
        assert!(!is_results_header(
            "25 issues labelled Wallet, opened by sjors."
        ));
    }
}
