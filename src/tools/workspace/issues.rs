//! The tools over issues and pull requests: searching them, and reading one with its comments
//! and reviews.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{clip, date, limit, run_search};
use crate::tools::{Locator, Opens, OpensItems, Tool, ToolError, ToolOutput};
use crate::workspace::{Kind, SearchQuery, Workspace};

/// Comments shown with an issue at most.
const MAX_COMMENTS: usize = 30;
/// Characters of one comment or body shown at most.
const MAX_BODY_CHARS: usize = 1_500;

/// Search issues (and their comments) by words.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchIssuesInput {
    /// A few words to look for.
    #[schemars(length(max = 80))]
    pub query: String,
    #[serde(default)]
    pub repo: Option<String>,
    /// open or closed.
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// Only issues or comments by this login.
    #[serde(default)]
    pub author: Option<String>,
    /// How many (default 8, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub offset: Option<usize>,
}

fn issue_search(ws: &Workspace, kind: Kind, i: SearchIssuesInput) -> Result<ToolOutput, ToolError> {
    run_search(
        ws,
        SearchQuery {
            text: i.query,
            kinds: vec![kind],
            repo: i.repo,
            state: i.state,
            label: i.label,
            author: i.author,
            limit: limit(i.limit, 8),
            offset: i.offset.unwrap_or(0),
            ..Default::default()
        },
    )
}

pub struct SearchIssues(pub Arc<Workspace>);

impl Tool for SearchIssues {
    const NAME: &'static str = "search_issues";
    type Input = SearchIssuesInput;

    fn run(&self, i: SearchIssuesInput) -> Result<ToolOutput, ToolError> {
        issue_search(&self.0, Kind::Issue, i)
    }
}

/// Search pull requests (and their comments and reviews) by words.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchPullRequestsInput {
    /// A few words to look for.
    #[schemars(length(max = 80))]
    pub query: String,
    #[serde(default)]
    pub repo: Option<String>,
    /// open, closed or merged.
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// Only pull requests or comments by this login.
    #[serde(default)]
    pub author: Option<String>,
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
            SearchIssuesInput {
                query: i.query,
                repo: i.repo,
                state: i.state,
                label: i.label,
                author: i.author,
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
    let mut out = format!(
        "{} #{} in {}: {}\nState: {}{} | Author: {} | Opened: {}{}\n",
        if d.is_pr { "Pull request" } else { "Issue" },
        d.number,
        d.repo,
        one_line(&d.title),
        d.state,
        d.merged_at
            .map(|t| format!(" ({})", date(Some(t))))
            .unwrap_or_default(),
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
    if !d.linked.is_empty() {
        let numbers: Vec<String> = d.linked.iter().map(|n| format!("#{n}")).collect();
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
