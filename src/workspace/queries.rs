//! The structured lookups behind the agent's tools: files, directories, commits, issues,
//! pull requests and people. Every file access is confined to indexed files of indexed
//! repositories.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::git::GitRepo;
use super::{db_err, Repo, Workspace, WorkspaceError};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileSlice {
    pub repo: String,
    pub path: String,
    pub language: Option<String>,
    pub total_lines: usize,
    pub start_line: usize,
    pub end_line: usize,
    /// The lines, without numbers.
    pub lines: Vec<String>,
    /// The slice was cut to the size limit; `end_line` is where it stops.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
    /// Files below a directory, or the lines of a file.
    pub size: i64,
}

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

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssueDetail {
    pub repo: String,
    pub number: i64,
    pub is_pr: bool,
    pub title: String,
    pub body: String,
    pub state: String,
    pub author: String,
    pub labels: Vec<String>,
    pub created_at: Option<i64>,
    pub closed_at: Option<i64>,
    pub merged_at: Option<i64>,
    pub url: Option<String>,
    pub base_ref: Option<String>,
    pub head_ref: Option<String>,
    pub comments: Vec<CommentDetail>,
    /// Comments left out to keep within the limit.
    pub comments_omitted: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommentDetail {
    pub id: i64,
    pub kind: String,
    pub author: String,
    pub body: String,
    pub created_at: Option<i64>,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub review_state: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Member {
    pub name: String,
    pub email: Option<String>,
    pub commits: i64,
    pub issues_opened: i64,
    pub pull_requests_opened: i64,
    pub comments: i64,
    pub last_active: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changer {
    pub author: String,
    pub email: String,
    pub commits: i64,
    pub additions: i64,
    pub deletions: i64,
    pub last_commit: i64,
    pub last_hash: String,
}

/// Checks a path given by the model: relative, no `..`, no root or drive prefix.
fn safe_relative(path: &str) -> Result<String, WorkspaceError> {
    let p = Path::new(path);
    if p.is_absolute() || path.starts_with('/') || path.starts_with('\\') {
        return Err(WorkspaceError::Refused(format!(
            "{path:?} is absolute; give a path relative to the repository root"
        )));
    }
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().to_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(WorkspaceError::Refused(format!(
                    "{path:?} leaves the repository (\"..\" is not allowed)"
                )))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(WorkspaceError::Refused(format!(
                    "{path:?} is absolute; give a path relative to the repository root"
                )))
            }
        }
    }
    Ok(parts.join("/"))
}

/// The absolute path of an indexed file, checked to stay inside the repository even through
/// symbolic links.
fn confined(root: &Path, rel: &str) -> Result<PathBuf, WorkspaceError> {
    let root = std::fs::canonicalize(root).map_err(|source| WorkspaceError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    let full = root.join(rel);
    let real = std::fs::canonicalize(&full).map_err(|source| WorkspaceError::Io {
        path: full.clone(),
        source,
    })?;
    if !real.starts_with(&root) {
        return Err(WorkspaceError::Refused(format!(
            "{rel} points outside the repository (a symbolic link to {})",
            real.display()
        )));
    }
    Ok(real)
}

impl Workspace {
    /// The repository a tool means: the one named, or the only one there is.
    pub fn resolve_repo(&self, name: Option<&str>) -> Result<Repo, WorkspaceError> {
        match name {
            Some(n) => self.repo(n),
            None => {
                let repos = self.repos()?;
                match repos.len() {
                    0 => Err(WorkspaceError::Refused(
                        "the workspace has no repositories yet".into(),
                    )),
                    1 => Ok(repos
                        .into_iter()
                        .next()
                        .ok_or_else(|| WorkspaceError::Refused("no repository".into()))?),
                    _ => Err(WorkspaceError::BadQuery(format!(
                        "there are several repositories ({}); say which with \"repo\"",
                        repos
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))),
                }
            }
        }
    }

    /// Lines `start..=end` (1-based) of an indexed file, at most `max_lines` and `max_bytes`.
    pub fn read_file(
        &self,
        repo: Option<&str>,
        path: &str,
        start: Option<usize>,
        end: Option<usize>,
        max_lines: usize,
        max_bytes: usize,
    ) -> Result<FileSlice, WorkspaceError> {
        let repo = self.resolve_repo(repo)?;
        let rel = safe_relative(path)?;
        let root = repo.root.clone().ok_or_else(|| {
            WorkspaceError::Refused(format!(
                "{} has no local files (it holds imported issues only)",
                repo.name
            ))
        })?;
        let conn = self.conn();
        let language: Option<Option<String>> = conn
            .query_row(
                "SELECT language FROM files WHERE repo_id = ?1 AND path = ?2",
                params![repo.id, rel],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err("finding a file"))?;
        let Some(language) = language else {
            let skipped: Option<String> = conn
                .query_row(
                    "SELECT reason FROM skipped_files WHERE repo_id = ?1 AND path = ?2",
                    params![repo.id, rel],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db_err("finding a file"))?;
            return Err(match skipped {
                Some(reason) => WorkspaceError::Refused(format!("{rel} is not indexed ({reason})")),
                None => WorkspaceError::NotFound(format!("{rel} in {}", repo.name)),
            });
        };
        drop(conn);
        let abs = confined(&root, &rel)?;
        let bytes = std::fs::read(&abs).map_err(|source| WorkspaceError::Io {
            path: abs.clone(),
            source,
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let all: Vec<&str> = text.lines().collect();
        let total = all.len();
        let start = start.unwrap_or(1).max(1);
        if total > 0 && start > total {
            return Err(WorkspaceError::BadQuery(format!(
                "{rel} has {total} lines; start_line {start} is past the end"
            )));
        }
        let end = end.unwrap_or(total).min(total).max(start.saturating_sub(1));
        let mut lines = Vec::new();
        let mut bytes_used = 0;
        let mut truncated = false;
        for line in all.iter().take(end).skip(start - 1) {
            if lines.len() >= max_lines || bytes_used + line.len() > max_bytes {
                truncated = true;
                break;
            }
            bytes_used += line.len() + 1;
            lines.push((*line).to_string());
        }
        let end_line = start + lines.len() - usize::from(!lines.is_empty());
        Ok(FileSlice {
            repo: repo.name,
            path: rel,
            language,
            total_lines: total,
            start_line: start,
            end_line: if lines.is_empty() { start } else { end_line },
            lines,
            truncated,
        })
    }

    /// The indexed entries directly inside `dir` ("" for the root).
    pub fn list_directory(
        &self,
        repo: Option<&str>,
        dir: &str,
    ) -> Result<(Repo, String, Vec<DirEntry>), WorkspaceError> {
        let repo = self.resolve_repo(repo)?;
        let rel = safe_relative(dir)?;
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT path, lines FROM files WHERE repo_id = ?1 AND substr(path, 1, length(?2)) = ?2 ORDER BY path",
            )
            .map_err(db_err("listing a directory"))?;
        let rows: Vec<(String, i64)> = stmt
            .query_map(params![repo.id, prefix], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err("listing a directory"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("listing a directory"))?;
        let mut entries: BTreeMap<(bool, String), i64> = BTreeMap::new();
        for (path, lines) in rows {
            let rest = &path[prefix.len()..];
            match rest.split_once('/') {
                // Directories first: (false, name) sorts before (true, name).
                Some((d, _)) => *entries.entry((false, d.to_string())).or_default() += 1,
                None => {
                    entries.insert((true, rest.to_string()), lines);
                }
            }
        }
        if entries.is_empty() && !rel.is_empty() {
            return Err(WorkspaceError::NotFound(format!(
                "directory {rel} in {}",
                repo.name
            )));
        }
        let list = entries
            .into_iter()
            .map(|((is_file, name), size)| DirEntry {
                name,
                is_dir: !is_file,
                size,
            })
            .collect();
        Ok((repo, rel, list))
    }

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
        let repo = self.resolve_repo(repo)?;
        let path = path.map(safe_relative).transpose()?;
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT c.hash, c.author_name, c.author_email, c.time, c.summary FROM commits c
                 WHERE c.repo_id = ?1
                   AND (?2 IS NULL OR lower(c.author_name) = lower(?2) OR lower(c.author_email) = lower(?2))
                   AND (?3 IS NULL OR EXISTS (SELECT 1 FROM commit_files f WHERE f.commit_id = c.id
                        AND (f.path = ?3 OR substr(f.path, 1, length(?3) + 1) = ?3 || '/')))
                   AND (?4 IS NULL OR c.time >= ?4) AND (?5 IS NULL OR c.time < ?5)
                 ORDER BY c.time DESC LIMIT ?6",
            )
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
        rows.collect::<Result<_, _>>()
            .map_err(db_err("listing commits"))
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
                return Err(WorkspaceError::BadQuery(format!(
                    "{hash} is ambiguous: {}",
                    found
                        .iter()
                        .map(|f| f.2.hash.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
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
            Some(git) => {
                let (d, t) = git.commit_patch(&summary.hash, max_diff_bytes)?;
                (Some(d), t)
            }
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

    /// An issue or pull request with its comments (and reviews and review comments), at most
    /// `max_comments` of them (the first and the latest are kept).
    pub fn issue(
        &self,
        repo: Option<&str>,
        number: i64,
        max_comments: usize,
    ) -> Result<IssueDetail, WorkspaceError> {
        let repo = self.resolve_repo(repo)?;
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT id, is_pr, title, body, state, author, labels, created_at, closed_at, merged_at, url, base_ref, head_ref
                 FROM issues WHERE repo_id = ?1 AND number = ?2",
                params![repo.id, number],
                |r| {
                    let labels: String = r.get(6)?;
                    Ok((
                        r.get::<_, i64>(0)?,
                        IssueDetail {
                            repo: repo.name.clone(),
                            number,
                            is_pr: r.get(1)?,
                            title: r.get(2)?,
                            body: r.get(3)?,
                            state: r.get(4)?,
                            author: r.get(5)?,
                            labels: serde_json::from_str(&labels).unwrap_or_default(),
                            created_at: r.get(7)?,
                            closed_at: r.get(8)?,
                            merged_at: r.get(9)?,
                            url: r.get(10)?,
                            base_ref: r.get(11)?,
                            head_ref: r.get(12)?,
                            comments: Vec::new(),
                            comments_omitted: 0,
                        },
                    ))
                },
            )
            .optional()
            .map_err(db_err("reading an issue"))?;
        let Some((id, mut detail)) = row else {
            return Err(WorkspaceError::NotFound(format!(
                "#{number} in {}",
                repo.name
            )));
        };
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, kind, author, body, created_at, path, line, review_state FROM comments
                 WHERE issue_id = ?1 ORDER BY coalesce(created_at, 0), id",
            )
            .map_err(db_err("reading comments"))?;
        let mut comments: Vec<CommentDetail> = stmt
            .query_map([id], |r| {
                Ok(CommentDetail {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    author: r.get(2)?,
                    body: r.get(3)?,
                    created_at: r.get(4)?,
                    path: r.get(5)?,
                    line: r.get(6)?,
                    review_state: r.get(7)?,
                })
            })
            .map_err(db_err("reading comments"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("reading comments"))?;
        // Reviews with no text only say "approved"; keep them, they are short.
        if comments.len() > max_comments {
            let keep_head = max_comments / 2;
            let keep_tail = max_comments - keep_head;
            detail.comments_omitted = comments.len() - max_comments;
            let tail = comments.split_off(comments.len() - keep_tail);
            comments.truncate(keep_head);
            comments.extend(tail);
        }
        detail.comments = comments;
        Ok(detail)
    }

    /// People of a repository: commit authors (by email) and issue participants (by login).
    pub fn members(&self, repo: Option<&str>, limit: usize) -> Result<Vec<Member>, WorkspaceError> {
        let repo = self.resolve_repo(repo)?;
        let conn = self.conn();
        let mut members: BTreeMap<String, Member> = BTreeMap::new();
        let mut stmt = conn
            .prepare_cached(
                "SELECT author_name, author_email, count(*), max(time) FROM commits WHERE repo_id = ?1
                 GROUP BY lower(author_email)",
            )
            .map_err(db_err("listing members"))?;
        let rows: Vec<(String, String, i64, i64)> = stmt
            .query_map([repo.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .map_err(db_err("listing members"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("listing members"))?;
        for (name, email, commits, last) in rows {
            members.insert(
                name.to_lowercase(),
                Member {
                    name,
                    email: Some(email),
                    commits,
                    issues_opened: 0,
                    pull_requests_opened: 0,
                    comments: 0,
                    last_active: Some(last),
                },
            );
        }
        let mut stmt = conn
            .prepare_cached(
                "SELECT author, sum(is_pr = 0), sum(is_pr = 1), max(created_at) FROM issues WHERE repo_id = ?1 GROUP BY author",
            )
            .map_err(db_err("listing members"))?;
        let rows: Vec<(String, i64, i64, Option<i64>)> = stmt
            .query_map([repo.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .map_err(db_err("listing members"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("listing members"))?;
        let mut stmt2 = conn
            .prepare_cached(
                "SELECT c.author, count(*), max(c.created_at) FROM comments c JOIN issues i ON i.id = c.issue_id
                 WHERE i.repo_id = ?1 GROUP BY c.author",
            )
            .map_err(db_err("listing members"))?;
        let comment_rows: Vec<(String, i64, Option<i64>)> = stmt2
            .query_map([repo.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err("listing members"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("listing members"))?;
        let blank = |name: &str| Member {
            name: name.to_string(),
            email: None,
            commits: 0,
            issues_opened: 0,
            pull_requests_opened: 0,
            comments: 0,
            last_active: None,
        };
        for (login, issues, prs, last) in rows {
            let m = members
                .entry(login.to_lowercase())
                .or_insert_with(|| blank(&login));
            m.issues_opened += issues;
            m.pull_requests_opened += prs;
            m.last_active = m.last_active.max(last);
        }
        for (login, n, last) in comment_rows {
            let m = members
                .entry(login.to_lowercase())
                .or_insert_with(|| blank(&login));
            m.comments += n;
            m.last_active = m.last_active.max(last);
        }
        let mut list: Vec<Member> = members.into_values().collect();
        list.sort_by_key(|m| {
            std::cmp::Reverse(
                m.commits * 10 + m.pull_requests_opened * 5 + m.issues_opened * 3 + m.comments,
            )
        });
        list.truncate(limit);
        Ok(list)
    }

    /// Who changed a file (or anything under a directory), by commits.
    pub fn who_changed(
        &self,
        repo: Option<&str>,
        path: &str,
        limit: usize,
    ) -> Result<Vec<Changer>, WorkspaceError> {
        let repo = self.resolve_repo(repo)?;
        let rel = safe_relative(path)?;
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT c.author_name, c.author_email, count(DISTINCT c.id), sum(f.additions), sum(f.deletions),
                        max(c.time),
                        (SELECT c2.hash FROM commits c2 JOIN commit_files f2 ON f2.commit_id = c2.id
                          WHERE c2.repo_id = ?1 AND lower(c2.author_email) = lower(c.author_email)
                            AND (f2.path = ?2 OR substr(f2.path, 1, length(?2) + 1) = ?2 || '/')
                          ORDER BY c2.time DESC LIMIT 1)
                 FROM commits c JOIN commit_files f ON f.commit_id = c.id
                 WHERE c.repo_id = ?1 AND (f.path = ?2 OR ?2 = '' OR substr(f.path, 1, length(?2) + 1) = ?2 || '/')
                 GROUP BY lower(c.author_email)
                 ORDER BY count(DISTINCT c.id) DESC, max(c.time) DESC LIMIT ?3",
            )
            .map_err(db_err("finding who changed a path"))?;
        let rows = stmt
            .query_map(params![repo.id, rel, limit as i64], |r| {
                Ok(Changer {
                    author: r.get(0)?,
                    email: r.get(1)?,
                    commits: r.get(2)?,
                    additions: r.get(3)?,
                    deletions: r.get(4)?,
                    last_commit: r.get(5)?,
                    last_hash: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                })
            })
            .map_err(db_err("finding who changed a path"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("finding who changed a path"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_only() {
        assert_eq!(safe_relative("src/./main.rs").unwrap(), "src/main.rs");
        assert_eq!(safe_relative("").unwrap(), "");
        for bad in ["/etc/passwd", "../x", "src/../../x", "\\\\server\\share"] {
            assert!(
                matches!(safe_relative(bad), Err(WorkspaceError::Refused(_))),
                "{bad}"
            );
        }
    }
}
