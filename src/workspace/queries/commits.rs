//! Commits: listing them by author, path and time, and one commit with its files and diff.

use rusqlite::params;
use serde::Serialize;

use super::safe_relative;
use crate::workspace::git::GitRepo;
use crate::workspace::{db_err, Workspace, WorkspaceError};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitSummary {
    pub repo: String,
    pub hash: String,
    pub author: String,
    pub email: String,
    pub time: i64,
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitDetail {
    #[serde(flatten)]
    pub summary: CommitSummary,
    pub message: String,
    pub parents: Vec<String>,
    pub files: Vec<CommitFile>,
    pub diff: Option<String>,
    pub diff_truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitFile {
    pub path: String,
    pub change: String,
    pub additions: i64,
    pub deletions: i64,
}

impl Workspace {
    /// Commits, newest first, optionally by author (name or email) or touching a path (a file,
    /// or everything under a directory).
    pub fn commits(
        &self,
        repo: Option<&str>,
        author: Option<&str>,
        path: Option<&str>,
        since: Option<i64>,
        until: Option<i64>,
        limit: usize,
    ) -> Result<Vec<CommitSummary>, WorkspaceError> {
        Ok(self
            .commits_counted(repo, author, path, since, until, limit)?
            .1)
    }

    /// `commits`, with how many the filters keep in all.
    pub fn commits_counted(
        &self,
        repo: Option<&str>,
        author: Option<&str>,
        path: Option<&str>,
        since: Option<i64>,
        until: Option<i64>,
        limit: usize,
    ) -> Result<(usize, Vec<CommitSummary>), WorkspaceError> {
        // Among several repositories, the one with a history (issues are imported into others).
        let repo = self.resolve_repo_holding(
            repo,
            "SELECT 1 FROM commits WHERE repo_id = ?1 AND ?2",
            &true,
        )?;
        // The root (`.`, or blank) and a blank author filter nothing: they matched no commit.
        let path = path
            .map(safe_relative)
            .transpose()?
            .filter(|p| !p.is_empty());
        let author = author.filter(|a| !a.trim().is_empty());
        const KEPT: &str = "FROM commits c
                 WHERE c.repo_id = ?1
                   AND (?2 IS NULL OR lower(c.author_name) = lower(?2) OR lower(c.author_email) = lower(?2))
                   AND (?3 IS NULL OR EXISTS (SELECT 1 FROM commit_files f WHERE f.commit_id = c.id
                        AND (f.path = ?3 OR substr(f.path, 1, length(?3) + 1) = ?3 || '/')))
                   AND (?4 IS NULL OR c.time >= ?4) AND (?5 IS NULL OR c.time < ?5)";
        let conn = self.conn();
        let total: i64 = conn
            .prepare_cached(&format!("SELECT count(*) {KEPT}"))
            .and_then(|mut st| {
                st.query_row(params![repo.id, author, path, since, until], |r| r.get(0))
            })
            .map_err(db_err("counting commits"))?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT c.hash, c.author_name, c.author_email, c.time, c.summary {KEPT}
                 ORDER BY c.time DESC LIMIT ?6"
            ))
            .map_err(db_err("listing commits"))?;
        let rows = stmt
            .query_map(
                params![repo.id, author, path, since, until, limit as i64],
                |r| {
                    Ok(CommitSummary {
                        repo: repo.name.clone(),
                        hash: r.get(0)?,
                        author: r.get(1)?,
                        email: r.get(2)?,
                        time: r.get(3)?,
                        summary: r.get(4)?,
                    })
                },
            )
            .map_err(db_err("listing commits"))?;
        let commits = rows
            .collect::<Result<_, _>>()
            .map_err(db_err("listing commits"))?;
        Ok((usize::try_from(total).unwrap_or(0), commits))
    }

    /// One commit by hash or unique prefix, with its files and (when the repository is on disk)
    /// its diff, cut at `max_diff_bytes`.
    pub fn show_commit(
        &self,
        repo: Option<&str>,
        hash: &str,
        max_diff_bytes: usize,
    ) -> Result<CommitDetail, WorkspaceError> {
        let hash = hash.trim().to_lowercase();
        if hash.len() < 4 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(WorkspaceError::BadQuery(format!(
                "{hash:?} is not a commit hash (at least 4 hexadecimal digits)"
            )));
        }
        let repos = match repo {
            Some(r) => vec![self.repo(r)?],
            None => self.repos()?,
        };
        let conn = self.conn();
        let mut found = Vec::new();
        for r in &repos {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT id, hash, author_name, author_email, time, summary, message, parents FROM commits
                     WHERE repo_id = ?1 AND substr(hash, 1, length(?2)) = ?2 LIMIT 2",
                )
                .map_err(db_err("finding a commit"))?;
            let rows: Vec<_> = stmt
                .query_map(params![r.id, hash], |row| {
                    Ok((
                        r.clone(),
                        row.get::<_, i64>(0)?,
                        CommitSummary {
                            repo: r.name.clone(),
                            hash: row.get(1)?,
                            author: row.get(2)?,
                            email: row.get(3)?,
                            time: row.get(4)?,
                            summary: row.get(5)?,
                        },
                        row.get::<_, String>(6)?,
                        row.get::<_, String>(7)?,
                    ))
                })
                .map_err(db_err("finding a commit"))?
                .collect::<Result<_, _>>()
                .map_err(db_err("finding a commit"))?;
            found.extend(rows);
        }
        let (repo, id, summary, message, parents) = match found.len() {
            0 => return Err(WorkspaceError::NotFound(format!("commit {hash}"))),
            1 => found.remove(0),
            _ => {
                // Each with its repository: two clones of one project hold the same commits,
                // and "ambiguous: h, h" named no way to choose (found in review).
                return Err(WorkspaceError::BadQuery(format!(
                    "{hash} is ambiguous: {}; give the repository or more of the hash",
                    found
                        .iter()
                        .map(|f| format!("{} in {}", f.2.hash, f.2.repo))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        };
        let mut stmt = conn
            .prepare_cached("SELECT path, change, additions, deletions FROM commit_files WHERE commit_id = ?1 ORDER BY path")
            .map_err(db_err("reading a commit's files"))?;
        let files: Vec<CommitFile> = stmt
            .query_map([id], |r| {
                Ok(CommitFile {
                    path: r.get(0)?,
                    change: r.get(1)?,
                    additions: r.get(2)?,
                    deletions: r.get(3)?,
                })
            })
            .map_err(db_err("reading a commit's files"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("reading a commit's files"))?;
        drop(stmt);
        drop(conn);
        let (diff, diff_truncated) = match repo
            .root
            .as_deref()
            .map(GitRepo::open)
            .transpose()?
            .flatten()
        {
            // A commit the repository no longer holds (amended or rebased and pruned, until the
            // next index) is shown from what was indexed, without its diff: the error threw
            // its message and files away too.
            Some(git) => match git.commit_patch(&summary.hash, max_diff_bytes) {
                Ok((d, t)) => (Some(d), t),
                Err(_) => (None, false),
            },
            None => (None, false),
        };
        Ok(CommitDetail {
            summary,
            message,
            parents: parents.split_whitespace().map(str::to_string).collect(),
            files,
            diff,
            diff_truncated,
        })
    }
}
