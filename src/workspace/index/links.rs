//! Which pull request fixed which issue, where the data says so: a merged pull request's title
//! or text says "fixes #N" (GitHub's closing keywords, outside code), or the issue was closed by
//! the pull request's merge commit. Recomputed for a repository after each import of it (the pull
//! request and its issue may come in different imports).

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;
use rusqlite::{params, Transaction};

use crate::workspace::{db_err, WorkspaceError};

/// GitHub's closing keywords, then `#N`, `owner/repo#N` or an issue's URL.
fn closing_ref() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+(?:https://github\.com/([\w.-]+/[\w.-]+)/issues/|([\w.-]+/[\w.-]+)?#)(\d+)\b",
        )
        .ok()
    })
    .as_ref()
}

/// `text` without its code: fenced blocks and inline code spans, where GitHub reads no
/// closing keyword (a pasted `git commit -m "fixes #12"` linked #12).
fn without_code(text: &str) -> String {
    static SPAN: OnceLock<Option<Regex>> = OnceLock::new();
    let span = SPAN
        .get_or_init(|| Regex::new(r"``[^\n]*?``|`[^`\n]*`").ok())
        .as_ref();
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let start = line.trim_start();
        // A backtick fence's info string has no backtick (CommonMark): "```make check```
        // passes" is a code span, and as a fence it hid every keyword after it.
        let marker = ["```", "~~~"].into_iter().find(|m| {
            start.starts_with(m) && (*m == "~~~" || !start.trim_start_matches('`').contains('`'))
        });
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (Some(_), _) => {}
            (None, None) => {
                match span {
                    Some(re) => out.push_str(&re.replace_all(line, " ")),
                    None => out.push_str(line),
                }
                out.push('\n');
            }
        }
    }
    out
}

/// The issue numbers `text` says it closes, in `remote` (`owner/name`; references to other
/// repositories are not links here), outside its code.
pub(crate) fn closing_refs(text: &str, remote: Option<&str>) -> Vec<i64> {
    let Some(re) = closing_ref() else {
        return Vec::new();
    };
    re.captures_iter(&without_code(text))
        .filter(|c| {
            let repo = c.get(1).or_else(|| c.get(2)).map(|m| m.as_str());
            repo.is_none_or(|r| remote.is_some_and(|own| own.eq_ignore_ascii_case(r)))
        })
        .filter_map(|c| c.get(3).and_then(|m| m.as_str().parse().ok()))
        .collect()
}

/// Recomputes the links of one repository. How many there are.
pub(super) fn relink(
    tx: &Transaction<'_>,
    repo_id: i64,
    remote: Option<&str>,
) -> Result<usize, WorkspaceError> {
    tx.execute("DELETE FROM links WHERE repo_id = ?1", [repo_id])
        .map_err(db_err("removing old links"))?;
    let issues: HashSet<i64> = {
        let mut st = tx
            .prepare_cached("SELECT number FROM issues WHERE repo_id = ?1 AND is_pr = 0")
            .map_err(db_err("reading issues to link"))?;
        let rows = st
            .query_map([repo_id], |r| r.get(0))
            .map_err(db_err("reading issues to link"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading issues to link"))?
    };
    // Data that never says a pull request was merged (an older export of the issues endpoint,
    // without `merged_at`) cannot say one was not: there, every closed one counts.
    let says_merged: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM issues WHERE repo_id = ?1 AND is_pr = 1
                 AND (state = 'merged' OR merged_at IS NOT NULL))",
            [repo_id],
            |r| r.get(0),
        )
        .map_err(db_err("reading pull requests to link"))?;
    let mut fixes: Vec<(i64, i64)> = Vec::new();
    {
        let mut st = tx
            // Merged ones: a pull request closed unmerged, or still open, fixed nothing yet,
            // and showed as "Fixed by" on an issue still open (#38 on bitcoin-core/gui#31).
            .prepare_cached(
                "SELECT number, title, body FROM issues WHERE repo_id = ?1 AND is_pr = 1
                     AND (state = 'merged' OR merged_at IS NOT NULL
                          OR (NOT ?2 AND state <> 'open'))",
            )
            .map_err(db_err("reading pull requests to link"))?;
        let mut rows = st
            .query(params![repo_id, says_merged])
            .map_err(db_err("reading pull requests to link"))?;
        while let Some(r) = rows
            .next()
            .map_err(db_err("reading pull requests to link"))?
        {
            let pr: i64 = r.get(0).map_err(db_err("reading pull requests to link"))?;
            let title: String = r.get(1).map_err(db_err("reading pull requests to link"))?;
            let body: String = r.get(2).map_err(db_err("reading pull requests to link"))?;
            for text in [&title, &body] {
                for issue in closing_refs(text, remote) {
                    if issues.contains(&issue) {
                        fixes.push((issue, pr));
                    }
                }
            }
        }
    }
    {
        let mut put = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO links (repo_id, issue, pr, how) VALUES (?1, ?2, ?3, 'fixes')",
            )
            .map_err(db_err("saving links"))?;
        for (issue, pr) in fixes {
            put.execute(params![repo_id, issue, pr])
                .map_err(db_err("saving links"))?;
        }
    }
    tx.execute(
        "INSERT OR IGNORE INTO links (repo_id, issue, pr, how)
         SELECT i.repo_id, i.number, p.number, 'merge'
         FROM issues i JOIN issues p
             ON p.repo_id = i.repo_id AND p.merge_commit = i.closed_by AND p.is_pr = 1
         WHERE i.repo_id = ?1 AND i.is_pr = 0 AND i.closed_by IS NOT NULL",
        [repo_id],
    )
    .map_err(db_err("linking merge commits"))?;
    tx.query_row(
        "SELECT count(*) FROM links WHERE repo_id = ?1",
        [repo_id],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as usize)
    .map_err(db_err("counting links"))
}

#[cfg(test)]
mod tests {
    use super::closing_refs;

    /// A one-line span in triple backticks is inline code, no fence (CommonMark: a
    /// fence's info string has no backtick); the keywords after it are links, as on GitHub.
    #[test]
    fn keywords_after_a_one_line_triple_backtick_span_link() {
        let refs = |t: &str| closing_refs(t, Some("bitcoin-core/gui"));
        assert_eq!(refs("```make check``` passes now.\n\nFixes #725."), [725]);
    }

    #[test]
    fn closing_keywords_name_the_issues_a_pull_request_fixes() {
        let refs = |t: &str| closing_refs(t, Some("bitcoin-core/gui"));
        assert_eq!(
            refs("This PR is a follow up of bitcoin/bitcoin#27217.\n\nFixes #725."),
            [725]
        );
        assert_eq!(
            refs("closes: #12, resolved #13 and fixed bitcoin-core/gui#14"),
            [12, 13, 14]
        );
        assert_eq!(
            refs("Fix https://github.com/bitcoin-core/gui/issues/88 for good"),
            [88]
        );
        // Another repository's issue, or a mention without a closing keyword, is no link.
        assert!(refs("Fixes bitcoin/bitcoin#27217").is_empty());
        assert!(refs("See #725; related to #726. Prefix #9").is_empty());
        assert!(refs("suffixes #3").is_empty());
    }

    /// GitHub does not read closing keywords inside code (a fenced block or an
    /// inline code span): the text there is not a link (found in review).
    #[test]
    fn closing_keywords_in_code_are_no_link() {
        let refs = |t: &str| closing_refs(t, Some("bitcoin-core/gui"));
        assert_eq!(
            refs("To reproduce:\n\n```\n$ git commit -m \"fixes #12\"\n```\n"),
            Vec::<i64>::new(),
            "fenced code block"
        );
    }

    /// nor inside an inline code span.
    #[test]
    fn closing_keywords_in_inline_code_are_no_link() {
        let refs = |t: &str| closing_refs(t, Some("bitcoin-core/gui"));
        assert_eq!(
            refs("The template says to write `Fixes #13` here."),
            Vec::<i64>::new(),
            "inline code span"
        );
    }
}
