//! The tools over issues and pull requests: searching them, and reading one with its comments
//! and reviews.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{clip, date, limit, parse_date, run_search, run_search_kept};
use crate::tools::{Locator, Opens, OpensItems, Tool, ToolError, ToolOutput};
use crate::workspace::queries::IssueFilter;
use crate::workspace::{Kind, SearchQuery, Workspace};

/// Comments shown with an issue at most.
const MAX_COMMENTS: usize = 30;
/// Characters of one comment or body shown at most.
const MAX_BODY_CHARS: usize = 1_500;

/// Search issues (and their comments) by words, or list and count them by their fields.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchIssuesInput {
    /// A few words to look for (omit to list).
    #[serde(default)]
    #[schemars(length(max = 80))]
    pub query: Option<String>,
    #[serde(default)]
    pub repo: Option<String>,
    /// open, closed or not_planned.
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// Only issues opened by this login.
    #[serde(default)]
    pub author: Option<String>,
    /// Opened on or after this date, like 2022-01-01.
    #[serde(default)]
    pub since: Option<String>,
    /// Opened before this date.
    #[serde(default)]
    pub until: Option<String>,
    /// How many (default 8, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub offset: Option<usize>,
}

/// The fields both searches take, whichever kind they search.
struct IssueQuery {
    query: Option<String>,
    repo: Option<String>,
    state: Option<String>,
    label: Option<String>,
    author: Option<String>,
    merged_by: Option<String>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
}

fn issue_search(ws: &Workspace, kind: Kind, i: IssueQuery) -> Result<ToolOutput, ToolError> {
    let since = parse_date("since", &i.since)?;
    let until = parse_date("until", &i.until)?;
    let blank = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let Some(text) = blank(i.query) else {
        return issue_list(
            ws,
            IssueFilter {
                repo: i.repo,
                is_pr: kind == Kind::Pr,
                state: blank(i.state),
                label: blank(i.label),
                author: blank(i.author),
                merged_by: blank(i.merged_by),
                since,
                until,
                limit: limit(i.limit, 8),
                offset: i.offset.unwrap_or(0),
            },
        );
    };
    // Words find the items that mention them; who merged one is not in its words: the list
    // keeps to those the merger merged.
    if let Some(merger) = blank(i.merged_by) {
        let merged: std::collections::HashSet<(String, i64)> = ws
            .list_issues(&IssueFilter {
                repo: i.repo.clone(),
                is_pr: true,
                merged_by: Some(merger.clone()),
                since,
                until,
                limit: usize::MAX >> 2,
                ..Default::default()
            })?
            .items
            .into_iter()
            .map(|s| (s.repo, s.number))
            .collect();
        return run_search_kept(
            ws,
            SearchQuery {
                text,
                kinds: vec![kind],
                repo: i.repo,
                state: i.state,
                label: i.label,
                author: i.author,
                limit: limit(i.limit, 8),
                ..Default::default()
            },
            |h| {
                h.number
                    .is_some_and(|n| merged.contains(&(h.repo.clone(), n)))
            },
            &format!(", merged by {merger}"),
        );
    }
    run_search(
        ws,
        SearchQuery {
            text,
            kinds: vec![kind],
            repo: i.repo,
            state: i.state,
            label: i.label,
            author: i.author,
            since,
            until,
            limit: limit(i.limit, 8),
            offset: i.offset.unwrap_or(0),
            ..Default::default()
        },
    )
}

/// Items a list names in its first sentence at most.
const SHORT_LIST: usize = 5;

/// The items a filter keeps, as the model reads them: how many in all first, so a count is
/// read off the first line, then one page, latest first.
fn issue_list(ws: &Workspace, f: IssueFilter) -> Result<ToolOutput, ToolError> {
    let list = ws.list_issues(&f)?;
    let what = describe_filter(&f);
    // The count in a sentence of its own: small models copy the first line as their answer.
    let mut out = format!(
        "{} {}{} {what}",
        list.total,
        if f.is_pr { "pull request" } else { "issue" },
        if list.total == 1 { "" } else { "s" },
    );
    // A short list is named in that sentence too: it is the answer to "which".
    if !list.items.is_empty() && list.items.len() == list.total && list.total <= SHORT_LIST {
        let named: Vec<String> = list
            .items
            .iter()
            .map(|s| format!("{}#{}", s.repo, s.number))
            .collect();
        let _ = write!(out, ": {}", named.join(", "));
    }
    out.push_str(".\n");
    if list.items.is_empty() {
        return Ok(ToolOutput::new(out, &list));
    }
    // A blank line ends the head: the lines an answer draws on first.
    out.push('\n');
    if list.items.len() < list.total {
        let _ = writeln!(
            out,
            "Numbers {} to {} of them, latest first:",
            f.offset + 1,
            f.offset + list.items.len()
        );
    }
    for s in &list.items {
        let state = match (&s.state_reason, s.state.as_str()) {
            (Some(r), "closed") => format!("closed as {}", r.replace('_', " ")),
            (_, st) => st.to_string(),
        };
        let _ = write!(
            out,
            "{}#{} [{state}] {} — by {}, opened {}",
            s.repo,
            s.number,
            one_line(&s.title),
            s.author,
            date(s.created_at)
        );
        if let Some(m) = &s.merged_by {
            let _ = write!(out, ", merged by {m} {}", date(s.merged_at));
        }
        if !s.labels.is_empty() {
            let _ = write!(out, " | Labels: {}", s.labels.join(", "));
        }
        out.push('\n');
    }
    let items = list
        .items
        .iter()
        .map(|s| Locator::issue_or_pr(&s.repo, s.number, s.is_pr));
    Ok(ToolOutput::new(out, &list).with_items(items))
}

/// What a filter kept, in words: "open, labelled Wallet, opened by Sjors".
fn describe_filter(f: &IssueFilter) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = &f.state {
        parts.push(match s.as_str() {
            "not_planned" | "completed" | "duplicate" => {
                format!("closed as {}", s.replace('_', " "))
            }
            s => s.to_string(),
        });
    }
    if let Some(l) = &f.label {
        parts.push(format!("labelled {l}"));
    }
    if let Some(a) = &f.author {
        parts.push(format!("opened by {a}"));
    }
    if let Some(m) = &f.merged_by {
        parts.push(format!("merged by {m}"));
    }
    let verb = if f.dates_merged() { "merged" } else { "opened" };
    let year_of = |t: i64| date(Some(t)).get(..4).and_then(|y| y.parse::<i32>().ok());
    let whole_year = match (f.since, f.until) {
        (Some(a), Some(b)) => year_of(a).filter(|y| {
            date(Some(a)) == format!("{y}-01-01") && date(Some(b)) == format!("{}-01-01", y + 1)
        }),
        _ => None,
    };
    match (whole_year, f.since, f.until) {
        (Some(y), _, _) => parts.push(format!("{verb} in {y}")),
        (None, Some(a), Some(b)) => parts.push(format!(
            "{verb} from {} to {}",
            date(Some(a)),
            date(Some(b - 86_400))
        )),
        (None, Some(a), None) => parts.push(format!("{verb} on or after {}", date(Some(a)))),
        (None, None, Some(b)) => parts.push(format!("{verb} before {}", date(Some(b)))),
        (None, None, None) => {}
    }
    if let Some(r) = &f.repo {
        parts.push(format!("in {r}"));
    }
    if parts.is_empty() {
        "in all".to_string()
    } else {
        parts.join(", ")
    }
}

pub struct SearchIssues(pub Arc<Workspace>);

impl Tool for SearchIssues {
    const NAME: &'static str = "search_issues";
    type Input = SearchIssuesInput;

    fn run(&self, i: SearchIssuesInput) -> Result<ToolOutput, ToolError> {
        issue_search(
            &self.0,
            Kind::Issue,
            IssueQuery {
                query: i.query,
                repo: i.repo,
                state: i.state,
                label: i.label,
                author: i.author,
                merged_by: None,
                since: i.since,
                until: i.until,
                limit: i.limit,
                offset: i.offset,
            },
        )
    }
}

/// Search pull requests (and their comments and reviews) by words, or list and count them by
/// their fields.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchPullRequestsInput {
    /// A few words to look for (omit to list).
    #[serde(default)]
    #[schemars(length(max = 80))]
    pub query: Option<String>,
    #[serde(default)]
    pub repo: Option<String>,
    /// open, closed or merged.
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// Only pull requests opened by this login.
    #[serde(default)]
    pub author: Option<String>,
    /// Only those merged by this login.
    #[serde(default)]
    pub merged_by: Option<String>,
    /// Opened (merged, with merged_by) on or after this date, like 2022-01-01.
    #[serde(default)]
    pub since: Option<String>,
    /// Opened (or merged) before this date.
    #[serde(default)]
    pub until: Option<String>,
    /// How many (default 8, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub offset: Option<usize>,
}

pub struct SearchPullRequests(pub Arc<Workspace>);

impl Tool for SearchPullRequests {
    const NAME: &'static str = "search_pull_requests";
    type Input = SearchPullRequestsInput;

    fn run(&self, i: SearchPullRequestsInput) -> Result<ToolOutput, ToolError> {
        issue_search(
            &self.0,
            Kind::Pr,
            IssueQuery {
                query: i.query,
                repo: i.repo,
                state: i.state,
                label: i.label,
                author: i.author,
                merged_by: i.merged_by,
                since: i.since,
                until: i.until,
                limit: i.limit,
                offset: i.offset,
            },
        )
    }
}

fn issue_text(
    ws: &Workspace,
    repo: Option<&str>,
    number: i64,
    want_pr: bool,
) -> Result<ToolOutput, ToolError> {
    let d = ws.issue(repo, number, MAX_COMMENTS)?;
    if d.is_pr != want_pr {
        let (what, other) = if d.is_pr {
            ("a pull request", "get_pull_request")
        } else {
            ("an issue", "get_issue")
        };
        return Err(ToolError::InvalidArguments(format!(
            "#{number} in {} is {what}; use {other}",
            d.repo
        )));
    }
    // What is asked of an item most (who merged and approved a pull request; which pull
    // request fixed an issue, and who merged and approved that) on its first line too: small
    // models answer from the first line they read.
    // An issue's fixing pull requests, each with who merged and approved it: read once, for
    // the first line and the "Fixed by" line.
    let fixes: Vec<(i64, Option<String>)> = if d.is_pr {
        Vec::new()
    } else {
        d.linked
            .iter()
            .map(|&n| {
                let words = ws.issue(Some(&d.repo), n, 0).ok();
                (n, words.map(|pr| outcome_words(&pr)))
            })
            .collect()
    };
    let outcome = match (d.is_pr, fixes.first()) {
        (true, _) => format!(" ({})", outcome_words(&d)),
        (false, Some((n, Some(words)))) => format!(" (fixed by #{n}: {words})"),
        (false, Some((n, None))) => format!(" (fixed by #{n})"),
        (false, None) => String::new(),
    };
    let mut out = format!(
        "{} #{} in {}: {}{outcome}\nState: {}{} | Author: {} | Opened: {}{}\n",
        if d.is_pr { "Pull request" } else { "Issue" },
        d.number,
        d.repo,
        one_line(&d.title),
        match (&d.state_reason, d.state.as_str()) {
            (Some(r), "closed") => format!("closed as {}", r.replace('_', " ")),
            (_, s) => s.to_string(),
        },
        match (d.merged_at, &d.merged_by) {
            (Some(t), Some(by)) => format!(" ({}, by {by})", date(Some(t))),
            (Some(t), None) => format!(" ({})", date(Some(t))),
            _ => String::new(),
        },
        d.author,
        date(d.created_at),
        if d.labels.is_empty() {
            String::new()
        } else {
            format!(" | Labels: {}", d.labels.join(", "))
        }
    );
    if let (Some(b), Some(h)) = (&d.base_ref, &d.head_ref) {
        let _ = writeln!(out, "Branch: {h} into {b}");
    }
    for (state, what) in [
        ("approved", "Approved by"),
        ("changes_requested", "Changes requested by"),
        ("commented", "Reviewed (comments) by"),
    ] {
        let who: Vec<&str> = d
            .reviews
            .iter()
            .filter(|(_, s)| s == state)
            .map(|(w, _)| w.as_str())
            .collect();
        if !who.is_empty() {
            let _ = writeln!(out, "{what}: {}", who.join(", "));
        }
    }
    if !d.linked.is_empty() {
        // An issue's fixes with who merged and approved each: the question that follows an
        // issue to its pull request most often asks that, and it is one line, not a call.
        let numbers: Vec<String> = if d.is_pr {
            d.linked.iter().map(|n| format!("#{n}")).collect()
        } else {
            fixes
                .iter()
                .map(|(n, words)| match words {
                    Some(w) => format!("#{n} ({w})"),
                    None => format!("#{n}"),
                })
                .collect()
        };
        let _ = writeln!(
            out,
            "{} {}",
            if d.is_pr { "Fixes:" } else { "Fixed by:" },
            numbers.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "\n{}",
        if d.body.trim().is_empty() {
            "(no description)".to_string()
        } else {
            quoted(&clip(&d.body, MAX_BODY_CHARS))
        }
    );
    // The comments left out are those between the first ones kept and the latest ones
    // (`Workspace::issue` keeps half of each): said there, not after the latest, which read as
    // if the latest came before them.
    let gap_at = (d.comments_omitted > 0).then_some(d.comments.len() / 2);
    for (i, c) in d.comments.iter().enumerate() {
        if gap_at == Some(i) {
            let _ = writeln!(
                out,
                "\n[{} comments in the middle left out]",
                d.comments_omitted
            );
        }
        let what = match (c.kind.as_str(), &c.review_state) {
            ("review", Some(s)) => format!("review ({})", s.to_lowercase()),
            ("review_comment", _) => format!(
                "review comment on {}{}",
                c.path.as_deref().unwrap_or("?"),
                c.line.map(|l| format!(":{l}")).unwrap_or_default()
            ),
            (k, _) => k.to_string(),
        };
        let body = if c.body.trim().is_empty() {
            "(no text)".to_string()
        } else {
            quoted(&clip(&c.body, MAX_BODY_CHARS))
        };
        let _ = writeln!(
            out,
            "\n--- {} {} ({}, comment {}):\n{body}",
            c.author,
            what,
            date(c.created_at),
            c.id
        );
    }
    let item = Locator::issue_or_pr(&d.repo, d.number, d.is_pr);
    Ok(ToolOutput::new(out, &d).opening(item))
}

/// Read an issue: its description and its comments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetIssueInput {
    /// The issue number.
    pub number: i64,
    #[serde(default)]
    pub repo: Option<String>,
}

pub struct GetIssue(pub Arc<Workspace>);

impl Tool for GetIssue {
    const NAME: &'static str = "get_issue";
    type Input = GetIssueInput;
    const OPENS: Option<Opens> = Some(Opens {
        argument: "number",
        items: OpensItems::Issues,
    });

    fn run(&self, i: GetIssueInput) -> Result<ToolOutput, ToolError> {
        issue_text(&self.0, i.repo.as_deref(), i.number, false)
    }
}

/// Read a pull request: its description, comments, reviews and review comments on the code.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetPullRequestInput {
    /// The pull request number.
    pub number: i64,
    #[serde(default)]
    pub repo: Option<String>,
}

pub struct GetPullRequest(pub Arc<Workspace>);

impl Tool for GetPullRequest {
    const NAME: &'static str = "get_pull_request";
    type Input = GetPullRequestInput;
    const OPENS: Option<Opens> = Some(Opens {
        argument: "number",
        items: OpensItems::PullRequests,
    });

    fn run(&self, i: GetPullRequestInput) -> Result<ToolOutput, ToolError> {
        issue_text(&self.0, i.repo.as_deref(), i.number, true)
    }
}

/// A pull request's outcome: merged when and by whom, approved by whom.
fn outcome_words(pr: &crate::workspace::queries::IssueDetail) -> String {
    let mut said: Vec<String> = Vec::new();
    match (pr.merged_at, &pr.merged_by) {
        (Some(t), Some(by)) => said.push(format!("merged {} by {by}", date(Some(t)))),
        (Some(t), None) => said.push(format!("merged {}", date(Some(t)))),
        _ => said.push(pr.state.clone()),
    }
    let approvers: Vec<&str> = pr
        .reviews
        .iter()
        .filter(|(_, s)| s == "approved")
        .map(|(w, _)| w.as_str())
        .collect();
    if !approvers.is_empty() {
        said.push(format!("approved by {}", approvers.join(", ")));
    }
    said.join("; ")
}

/// An untrusted body as the output holds it: a line of it that starts as the output's own
/// headers do (`--- author comment (date, comment N):`) is set off by a space, so a comment
/// cannot write another comment, or a maintainer's approving review, into what the model reads.
fn quoted(body: &str) -> String {
    body.lines()
        .map(|l| {
            if l.trim_start().starts_with("---") || l.starts_with('[') {
                format!(" {l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An untrusted title on one line: a line break in it would start a line of the output's own.
fn one_line(s: &str) -> String {
    s.split(['\n', '\r']).collect::<Vec<_>>().join(" ")
}
