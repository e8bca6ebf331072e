//! The tools over commits and the people who made them: `search_commits`, `show_commit`,
//! `list_members` and `who_changed`.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{clip, date, limit, run_search, run_search_kept};
use crate::tools::{Locator, Opens, OpensItems, Tool, ToolError, ToolOutput};
use crate::workspace::{day_start, Kind, SearchQuery, Workspace};

/// A commit's diff shown at most.
const DIFF_MAX_BYTES: usize = 6_000;

/// Find commits: by words in their messages and changed paths, or the latest ones, counted,
/// optionally by author, path, and dates or tags.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchCommitsInput {
    /// A few words to look for in commit messages and changed paths (omit to list the latest
    /// commits).
    #[serde(default)]
    #[schemars(length(max = 80))]
    pub query: Option<String>,
    #[serde(default)]
    pub repo: Option<String>,
    /// Only commits by this author (name or email).
    #[serde(default)]
    pub author: Option<String>,
    /// Only commits touching this file or folder.
    #[serde(default)]
    pub path: Option<String>,
    /// From this date on, like 2024-01-31, or after this tag.
    #[serde(default)]
    pub since: Option<String>,
    /// Before this date, or up to this tag.
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
        let since = date_or_tag(&self.0, i.repo.as_deref(), "since", &i.since)?;
        let until = date_or_tag(&self.0, i.repo.as_deref(), "until", &i.until)?;
        // A path asked for beside words keeps to the commits that touched it: it was dropped,
        // and commits that never touched it came back as if they had.
        let path = i
            .path
            .clone()
            .filter(|p| !p.trim().is_empty() && p.trim() != ".");
        if let Some(q) = i.query.filter(|q| !q.trim().is_empty()) {
            let mut query = SearchQuery {
                text: q,
                kinds: vec![Kind::Commit],
                repo: i.repo.clone(),
                author: i.author,
                since,
                until,
                limit: limit(i.limit, 10),
                ..Default::default()
            };
            let Some(path) = path else {
                return run_search(&self.0, query);
            };
            let touching: std::collections::HashSet<String> = self
                .0
                .commits(i.repo.as_deref(), None, Some(&path), None, None, 1 << 20)?
                .into_iter()
                .map(|c| c.hash)
                .collect();
            query.path = None;
            return run_search_kept(
                &self.0,
                query,
                |h| h.hash.as_ref().is_some_and(|x| touching.contains(x)),
                &format!(", touching {path}"),
            );
        }
        let (total, commits) = self.0.commits_counted(
            i.repo.as_deref(),
            i.author.as_deref(),
            i.path.as_deref(),
            since,
            until,
            limit(i.limit, 10),
        )?;
        let blank = |v: &Option<String>| {
            v.as_deref()
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
        };
        let what = format!(
            "commit{}{}{}{}{}",
            if total == 1 { "" } else { "s" },
            blank(&i.author)
                .map(|a| format!(" by {a}"))
                .unwrap_or_default(),
            blank(&i.path)
                .map(|p| format!(" touching {p}"))
                .unwrap_or_default(),
            blank(&i.since)
                .map(|d| format!(" after {d}"))
                .unwrap_or_default(),
            blank(&i.until)
                .map(|d| format!(" up to {d}"))
                .unwrap_or_default(),
        );
        // The count and the latest commit in the first line, which small models copy into
        // their answer: "how many" and "the last change, and who made it" are both read off
        // it. Then the others.
        let line = |c: &crate::workspace::queries::CommitSummary| {
            format!(
                "{} {} {} — {}",
                &c.hash[..10.min(c.hash.len())],
                date(Some(c.time)),
                c.author,
                c.summary
            )
        };
        let Some((latest, older)) = commits.split_first() else {
            return Ok(ToolOutput::new(format!("No {what}."), &commits));
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{total} {what}; the latest is {} by {}, on {}: {}",
            &latest.hash[..10.min(latest.hash.len())],
            latest.author,
            date(Some(latest.time)),
            latest.summary
        );
        // A blank line ends the head: the lines an answer draws on first.
        if !older.is_empty() {
            let _ = writeln!(
                out,
                "\nBefore it{}:",
                if commits.len() < total {
                    format!(" (the next {} of {})", older.len(), total - 1)
                } else {
                    String::new()
                }
            );
            for c in older {
                let _ = writeln!(out, "{}", line(c));
            }
        }
        let items = commits.iter().map(|c| Locator::commit(&c.repo, &c.hash));
        Ok(ToolOutput::new(out, &commits).with_items(items))
    }
}

/// The release series `show_commit` names at most (the first release of each that has it).
const MAX_RELEASES_LISTED: usize = 8;

/// A `since` or `until` given as a date, or as a release tag: after the tag's commit for
/// `since`, up to it and with it for `until`, so the two name what a release range holds.
fn date_or_tag(
    ws: &Workspace,
    repo: Option<&str>,
    field: &str,
    s: &Option<String>,
) -> Result<Option<i64>, ToolError> {
    let Some(v) = s.as_deref().filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    if let Some(t) = day_start(v) {
        return Ok(Some(t));
    }
    match ws.tag_time(repo, v)? {
        Some(t) => Ok(Some(t + 1)),
        None => Err(ToolError::InvalidArguments(format!(
            "{field} {v:?} is neither a date like 2024-05-31 nor a tag of the repository"
        ))),
    }
}

/// The most changed files `show_commit` lists.
const MAX_FILES_LISTED: usize = 100;

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
    const OPENS: Option<Opens> = Some(Opens {
        argument: "hash",
        items: OpensItems::Commit,
    });

    fn run(&self, i: ShowCommitInput) -> Result<ToolOutput, ToolError> {
        let c = self
            .0
            .show_commit(i.repo.as_deref(), &i.hash, DIFF_MAX_BYTES)?;
        let s = &c.summary;
        // With the head, which is what an opening shows: the question it answers ("which
        // release first had it") is asked of the commit, not of its diff. The first line says
        // it too, with the summary, as one line an answer can quote whole.
        let releases = self.0.releases_containing(Some(&s.repo), &s.hash)?;
        let first_release = releases
            .first()
            .map(|r| format!("; first released in {} ({})", r.tag, date(Some(r.time))))
            .unwrap_or_default();
        let mut out = format!(
            "commit {} ({}{first_release})\nAuthor: {} <{}>\nDate: {}\n",
            s.hash,
            clip(&s.summary, 100),
            s.author,
            s.email,
            date(Some(s.time)),
        );
        if !releases.is_empty() {
            let first: Vec<String> = releases
                .iter()
                .take(MAX_RELEASES_LISTED)
                .map(|r| format!("{} ({})", r.tag, date(Some(r.time))))
                .collect();
            let _ = writeln!(
                out,
                "First released in: {}{}",
                first.join(", "),
                if releases.len() > MAX_RELEASES_LISTED {
                    ", …"
                } else {
                    ""
                }
            );
        }
        let _ = write!(out, "\n{}\n\nFiles:\n", c.message.trim());
        // A commit that vendors thousands of files listed every one (through `burrow mcp`,
        // whole, hundreds of kilobytes).
        for f in c.files.iter().take(MAX_FILES_LISTED) {
            let _ = writeln!(
                out,
                "  {} {} (+{} -{})",
                f.change, f.path, f.additions, f.deletions
            );
        }
        if c.files.len() > MAX_FILES_LISTED {
            let _ = writeln!(
                out,
                "  {}",
                crate::notes::listed(MAX_FILES_LISTED, c.files.len(), "files", None)
            );
        }
        if let Some(d) = &c.diff {
            out.push('\n');
            out.push_str(d);
            if c.diff_truncated {
                out.push_str("\n[diff cut; read the files for the rest]\n");
            }
        }
        let commit = Locator::commit(&s.repo, &s.hash);
        Ok(ToolOutput::new(out, &c).opening(commit))
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
