//! The workspace tools: searching and reading the user's repositories, commits, issues and pull
//! requests. Each returns compact text for a small model's context and the same result as data.
//! An empty result says what was searched: that is information for the model, not an error.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{RegistryError, Tool, ToolError, ToolOutput, ToolRegistry};
use crate::workspace::grep::GrepQuery;
use crate::workspace::{Kind, SearchHit, SearchQuery, Workspace};

/// Lines `read_file` returns at most, and bytes.
const READ_MAX_LINES: usize = 200;
const READ_MAX_BYTES: usize = 12_000;
/// A commit's diff shown at most.
const DIFF_MAX_BYTES: usize = 6_000;
/// Comments shown with an issue at most.
const MAX_COMMENTS: usize = 30;
/// Characters of one comment or body shown at most.
const MAX_BODY_CHARS: usize = 1_500;

/// Every workspace tool, over `ws`.
pub fn workspace_tools(ws: Arc<Workspace>) -> Result<ToolRegistry, RegistryError> {
    let mut r = ToolRegistry::new();
    r.register(ListRepositories(ws.clone()))?;
    r.register(Search(ws.clone()))?;
    r.register(SearchCode(ws.clone()))?;
    r.register(ReadFile(ws.clone()))?;
    r.register(ListDirectory(ws.clone()))?;
    r.register(SearchCommits(ws.clone()))?;
    r.register(ShowCommit(ws.clone()))?;
    r.register(SearchIssues(ws.clone()))?;
    r.register(GetIssue(ws.clone()))?;
    r.register(SearchPullRequests(ws.clone()))?;
    r.register(GetPullRequest(ws.clone()))?;
    r.register(ListMembers(ws.clone()))?;
    r.register(WhoChanged(ws))?;
    Ok(r)
}

fn date(t: Option<i64>) -> String {
    t.and_then(|t| chrono::DateTime::from_timestamp(t, 0))
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "?".into())
}

fn parse_date(field: &str, s: &Option<String>) -> Result<Option<i64>, ToolError> {
    match s {
        None => Ok(None),
        Some(s) => chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
            .map(|d| d.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp()))
            .map_err(|_| {
                ToolError::InvalidArguments(format!("{field} {s:?} is not a date like 2024-05-31"))
            }),
    }
}

fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}… [{} more characters]", s.chars().count() - max)
}

fn limit(l: Option<usize>, default: usize) -> usize {
    l.unwrap_or(default).clamp(1, 50)
}

/// Search results as the model reads them.
fn hits_text(what: &str, hits: &[SearchHit], next: Option<usize>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} result{} for {what}:",
        hits.len(),
        if hits.len() == 1 { "" } else { "s" }
    );
    for (i, h) in hits.iter().enumerate() {
        let mut head = format!("{}. [{}] ", i + 1, h.kind);
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
        let _ = writeln!(out, "{head}  (repo {})", h.repo);
        for line in h.snippet.lines().take(3) {
            let _ = writeln!(out, "   {line}");
        }
    }
    if let Some(n) = next {
        let _ = writeln!(out, "More results: repeat with offset {n}.");
    }
    out
}

fn no_hits(what: &str) -> String {
    format!("No results for {what}. Try fewer or different words, or another kind.")
}

fn describe_query(q: &SearchQuery) -> String {
    let mut s = format!("{:?}", q.text);
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
        if let Some(v) = v {
            let _ = write!(s, ", {label} {v}");
        }
    }
    s
}

fn run_search(ws: &Workspace, q: SearchQuery) -> Result<ToolOutput, ToolError> {
    let what = describe_query(&q);
    let page = ws.search(&q)?;
    let mut text = if page.hits.is_empty() {
        no_hits(&what)
    } else {
        hits_text(&what, &page.hits, page.next_offset)
    };
    if let Some(note) = &page.note {
        let _ = writeln!(text, "Note: {note}.");
    }
    Ok(ToolOutput::new(text, &page))
}

// ---------------------------------------------------------------------------------------------

/// List the repositories in the workspace, with what is indexed in each.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListRepositoriesInput {}

pub struct ListRepositories(pub Arc<Workspace>);

impl Tool for ListRepositories {
    const NAME: &'static str = "list_repositories";
    type Input = ListRepositoriesInput;

    fn run(&self, _: ListRepositoriesInput) -> Result<ToolOutput, ToolError> {
        let status = self.0.status()?;
        if status.is_empty() {
            return Ok(ToolOutput::new(
                "The workspace has no repositories.",
                &status,
            ));
        }
        let mut out = String::new();
        for s in &status {
            let _ = writeln!(
                out,
                "{}{}: {} files, {} commits, {} issues, {} pull requests ({})",
                s.repo.name,
                s.repo
                    .remote
                    .as_ref()
                    .filter(|r| **r != s.repo.name)
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default(),
                s.files,
                s.commits,
                s.issues,
                s.pull_requests,
                s.repo.status
            );
        }
        Ok(ToolOutput::new(out, &status))
    }
}

/// Search everything in the workspace (code, documents, commits, issues, pull requests and their
/// comments) by words, best matches first.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchInput {
    /// Words to look for. Identifiers match in any spelling: parse_args, ParseArgs, parse.
    pub query: String,
    /// Only these kinds: code, doc, commit, issue, pr.
    #[serde(default)]
    pub kinds: Option<Vec<Kind>>,
    /// Only this repository (name or owner/name).
    #[serde(default)]
    pub repo: Option<String>,
    /// Only issues or pull requests in this state: open, closed or merged.
    #[serde(default)]
    pub state: Option<String>,
    /// Only items with this label.
    #[serde(default)]
    pub label: Option<String>,
    /// Only items by this author (login or name).
    #[serde(default)]
    pub author: Option<String>,
    /// Only files matching this glob, like src/**/*.rs or *.md.
    #[serde(default)]
    pub path: Option<String>,
    /// Only items from this date on, like 2024-01-31.
    #[serde(default)]
    pub since: Option<String>,
    /// Only items before this date, like 2024-12-31.
    #[serde(default)]
    pub until: Option<String>,
    /// How many results (default 8, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Skip this many results (for the next page).
    #[serde(default)]
    pub offset: Option<usize>,
}

pub struct Search(pub Arc<Workspace>);

impl Tool for Search {
    const NAME: &'static str = "search";
    type Input = SearchInput;

    fn run(&self, i: SearchInput) -> Result<ToolOutput, ToolError> {
        let q = SearchQuery {
            since: parse_date("since", &i.since)?,
            until: parse_date("until", &i.until)?,
            text: i.query,
            kinds: i.kinds.unwrap_or_default(),
            repo: i.repo,
            state: i.state,
            label: i.label,
            author: i.author,
            path: i.path,
            limit: limit(i.limit, 8),
            offset: i.offset.unwrap_or(0),
        };
        run_search(&self.0, q)
    }
}

/// Search source code. "ranked" (the default) finds code about the words; "exact" finds every
/// line containing the text as written (identifiers, error messages); "regex" matches a
/// regular expression per line.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchCodeInput {
    /// The words, exact text, or regular expression to find.
    pub query: String,
    /// ranked, exact or regex.
    #[serde(default)]
    pub mode: Option<CodeSearchMode>,
    /// Only this repository.
    #[serde(default)]
    pub repo: Option<String>,
    /// Only files matching this glob, like src/**/*.rs or *.toml.
    #[serde(default)]
    pub path: Option<String>,
    /// For exact and regex: match case exactly (default: ignore case).
    #[serde(default)]
    pub case_sensitive: Option<bool>,
    /// How many results (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CodeSearchMode {
    Ranked,
    Exact,
    Regex,
}

pub struct SearchCode(pub Arc<Workspace>);

impl Tool for SearchCode {
    const NAME: &'static str = "search_code";
    type Input = SearchCodeInput;

    fn run(&self, i: SearchCodeInput) -> Result<ToolOutput, ToolError> {
        let mode = i.mode.unwrap_or(CodeSearchMode::Ranked);
        if mode == CodeSearchMode::Ranked {
            return run_search(
                &self.0,
                SearchQuery {
                    text: i.query,
                    kinds: vec![Kind::Code],
                    repo: i.repo,
                    path: i.path,
                    limit: limit(i.limit, 10),
                    ..Default::default()
                },
            );
        }
        let q = GrepQuery {
            pattern: i.query.clone(),
            regex: mode == CodeSearchMode::Regex,
            case_sensitive: i.case_sensitive.unwrap_or(false),
            repo: i.repo.clone(),
            path: i.path.clone(),
            limit: limit(i.limit, 10),
        };
        let result = self.0.grep(&q)?;
        let what = format!(
            "{} {:?}{}{}",
            if q.regex { "regex" } else { "text" },
            i.query,
            i.repo.map(|r| format!(" in {r}")).unwrap_or_default(),
            i.path.map(|p| format!(" under {p}")).unwrap_or_default()
        );
        if result.hits.is_empty() {
            return Ok(ToolOutput::new(
                format!(
                    "No line matches {what} ({} files searched).",
                    result.files_searched
                ),
                &result,
            ));
        }
        let mut out = format!("{} matching lines for {what}:\n", result.hits.len());
        for h in &result.hits {
            let _ = writeln!(out, "{}:{}: {}", h.path, h.line, h.text.trim());
        }
        if result.truncated {
            out.push_str(
                "More matches exist: narrow with path, or search for something more specific.\n",
            );
        }
        Ok(ToolOutput::new(out, &result))
    }
}

/// Read lines of a file of an indexed repository, with line numbers. Long files come in parts:
/// ask for the next lines with start_line.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileInput {
    /// The file's path relative to the repository root, like src/main.rs.
    pub path: String,
    /// The repository (needed when there are several).
    #[serde(default)]
    pub repo: Option<String>,
    /// First line to read (1-based, default 1).
    #[serde(default)]
    pub start_line: Option<usize>,
    /// Last line to read (default: as far as the size limit allows).
    #[serde(default)]
    pub end_line: Option<usize>,
}

pub struct ReadFile(pub Arc<Workspace>);

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Input = ReadFileInput;

    fn run(&self, i: ReadFileInput) -> Result<ToolOutput, ToolError> {
        let slice = self.0.read_file(
            i.repo.as_deref(),
            &i.path,
            i.start_line,
            i.end_line,
            READ_MAX_LINES,
            READ_MAX_BYTES,
        )?;
        let mut out = format!(
            "{} (lines {}-{} of {}):\n",
            slice.path, slice.start_line, slice.end_line, slice.total_lines
        );
        let width = slice.end_line.to_string().len();
        for (n, line) in slice.lines.iter().enumerate() {
            let _ = writeln!(out, "{:>width$}  {line}", slice.start_line + n);
        }
        // A note when the limit cut the slice, or when the whole file was asked for and more
        // remains; not when the caller asked for exactly these lines.
        if slice.truncated || (i.end_line.is_none() && slice.end_line < slice.total_lines) {
            let _ = writeln!(
                out,
                "[cut at line {} of {}; read on with start_line {}]",
                slice.end_line,
                slice.total_lines,
                slice.end_line + 1
            );
        }
        Ok(ToolOutput::new(out, &slice))
    }
}

/// List the files and folders directly inside a folder of an indexed repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirectoryInput {
    /// The folder, relative to the repository root ("" or omitted: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// The repository (needed when there are several).
    #[serde(default)]
    pub repo: Option<String>,
}

pub struct ListDirectory(pub Arc<Workspace>);

impl Tool for ListDirectory {
    const NAME: &'static str = "list_directory";
    type Input = ListDirectoryInput;

    fn run(&self, i: ListDirectoryInput) -> Result<ToolOutput, ToolError> {
        let (repo, dir, entries) = self
            .0
            .list_directory(i.repo.as_deref(), i.path.as_deref().unwrap_or(""))?;
        let shown = if dir.is_empty() {
            format!("{} (root)", repo.name)
        } else {
            format!("{}/{dir}", repo.name)
        };
        if entries.is_empty() {
            return Ok(ToolOutput::new(
                format!("{shown} has no indexed files."),
                &entries,
            ));
        }
        let mut out = format!("{shown}:\n");
        for e in &entries {
            if e.is_dir {
                let _ = writeln!(out, "  {}/  ({} files)", e.name, e.size);
            } else {
                let _ = writeln!(out, "  {}  ({} lines)", e.name, e.size);
            }
        }
        Ok(ToolOutput::new(out, &entries))
    }
}

/// Find commits: by words in their messages and changed paths, or the latest ones, optionally
/// by author or touching a path.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchCommitsInput {
    /// Words to look for in commit messages and changed paths (omit to list the latest commits).
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub repo: Option<String>,
    /// Only commits by this author (name or email).
    #[serde(default)]
    pub author: Option<String>,
    /// Only commits touching this file or folder.
    #[serde(default)]
    pub path: Option<String>,
    /// Only commits from this date on, like 2024-01-31.
    #[serde(default)]
    pub since: Option<String>,
    /// Only commits before this date.
    #[serde(default)]
    pub until: Option<String>,
    /// How many (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

pub struct SearchCommits(pub Arc<Workspace>);

impl Tool for SearchCommits {
    const NAME: &'static str = "search_commits";
    type Input = SearchCommitsInput;

    fn run(&self, i: SearchCommitsInput) -> Result<ToolOutput, ToolError> {
        let since = parse_date("since", &i.since)?;
        let until = parse_date("until", &i.until)?;
        if let Some(q) = i.query.filter(|q| !q.trim().is_empty()) {
            return run_search(
                &self.0,
                SearchQuery {
                    text: q,
                    kinds: vec![Kind::Commit],
                    repo: i.repo,
                    author: i.author,
                    path: None,
                    since,
                    until,
                    limit: limit(i.limit, 10),
                    ..Default::default()
                },
            );
        }
        let commits = self.0.commits(
            i.repo.as_deref(),
            i.author.as_deref(),
            i.path.as_deref(),
            since,
            until,
            limit(i.limit, 10),
        )?;
        let what = format!(
            "commits{}{}",
            i.author.map(|a| format!(" by {a}")).unwrap_or_default(),
            i.path.map(|p| format!(" touching {p}")).unwrap_or_default()
        );
        if commits.is_empty() {
            return Ok(ToolOutput::new(format!("No {what}."), &commits));
        }
        let mut out = format!("Latest {what}:\n");
        for c in &commits {
            let _ = writeln!(
                out,
                "{} {} {} — {}",
                &c.hash[..10.min(c.hash.len())],
                date(Some(c.time)),
                c.author,
                c.summary
            );
        }
        Ok(ToolOutput::new(out, &commits))
    }
}

/// Show one commit: its message, the files it changed with line counts, and its diff (cut if
/// long).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShowCommitInput {
    /// The commit hash, or its first 7 or more characters.
    pub hash: String,
    #[serde(default)]
    pub repo: Option<String>,
}

pub struct ShowCommit(pub Arc<Workspace>);

impl Tool for ShowCommit {
    const NAME: &'static str = "show_commit";
    type Input = ShowCommitInput;

    fn run(&self, i: ShowCommitInput) -> Result<ToolOutput, ToolError> {
        let c = self
            .0
            .show_commit(i.repo.as_deref(), &i.hash, DIFF_MAX_BYTES)?;
        let s = &c.summary;
        let mut out = format!(
            "commit {}\nAuthor: {} <{}>\nDate: {}\n\n{}\n\nFiles:\n",
            s.hash,
            s.author,
            s.email,
            date(Some(s.time)),
            c.message.trim()
        );
        for f in &c.files {
            let _ = writeln!(
                out,
                "  {} {} (+{} -{})",
                f.change, f.path, f.additions, f.deletions
            );
        }
        if let Some(d) = &c.diff {
            out.push('\n');
            out.push_str(d);
            if c.diff_truncated {
                out.push_str("\n[diff cut; read the files for the rest]\n");
            }
        }
        Ok(ToolOutput::new(out, &c))
    }
}

/// Search issues (and their comments) by words.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchIssuesInput {
    /// Words to look for.
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
    /// Words to look for.
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
        d.title,
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
    let _ = writeln!(
        out,
        "\n{}",
        if d.body.trim().is_empty() {
            "(no description)".to_string()
        } else {
            clip(&d.body, MAX_BODY_CHARS)
        }
    );
    for c in &d.comments {
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
            clip(&c.body, MAX_BODY_CHARS)
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
    if d.comments_omitted > 0 {
        let _ = writeln!(
            out,
            "\n[{} comments in the middle left out]",
            d.comments_omitted
        );
    }
    Ok(ToolOutput::new(out, &d))
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

    fn run(&self, i: GetPullRequestInput) -> Result<ToolOutput, ToolError> {
        issue_text(&self.0, i.repo.as_deref(), i.number, true)
    }
}

/// List the people of a repository: who commits, opens issues and pull requests, and comments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListMembersInput {
    #[serde(default)]
    pub repo: Option<String>,
    /// How many (default 20, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

pub struct ListMembers(pub Arc<Workspace>);

impl Tool for ListMembers {
    const NAME: &'static str = "list_members";
    type Input = ListMembersInput;

    fn run(&self, i: ListMembersInput) -> Result<ToolOutput, ToolError> {
        let members = self.0.members(i.repo.as_deref(), limit(i.limit, 20))?;
        if members.is_empty() {
            return Ok(ToolOutput::new(
                "No members: no commits or issues are indexed.",
                &members,
            ));
        }
        let mut out = String::from("Members (most active first):\n");
        for m in &members {
            let _ = writeln!(
                out,
                "{}{}: {} commits, {} issues, {} pull requests, {} comments; last active {}",
                m.name,
                m.email
                    .as_ref()
                    .map(|e| format!(" <{e}>"))
                    .unwrap_or_default(),
                m.commits,
                m.issues_opened,
                m.pull_requests_opened,
                m.comments,
                date(m.last_active)
            );
        }
        Ok(ToolOutput::new(out, &members))
    }
}

/// Who changed a file or folder, by number of commits, with their latest commit.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WhoChangedInput {
    /// A file or folder, relative to the repository root.
    pub path: String,
    #[serde(default)]
    pub repo: Option<String>,
    /// How many people (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

pub struct WhoChanged(pub Arc<Workspace>);

impl Tool for WhoChanged {
    const NAME: &'static str = "who_changed";
    type Input = WhoChangedInput;

    fn run(&self, i: WhoChangedInput) -> Result<ToolOutput, ToolError> {
        let people = self
            .0
            .who_changed(i.repo.as_deref(), &i.path, limit(i.limit, 10))?;
        if people.is_empty() {
            return Ok(ToolOutput::new(
                format!("No indexed commit touches {}.", i.path),
                &people,
            ));
        }
        let mut out = format!("Who changed {}:\n", i.path);
        for p in &people {
            let _ = writeln!(
                out,
                "{} <{}>: {} commits (+{} -{}), latest {} on {}",
                p.author,
                p.email,
                p.commits,
                p.additions,
                p.deletions,
                &p.last_hash[..10.min(p.last_hash.len())],
                date(Some(p.last_commit))
            );
        }
        Ok(ToolOutput::new(out, &people))
    }
}
