//! People of a repository: who committed and who took part in issues, and who changed a path.

use std::collections::BTreeMap;

use rusqlite::params;
use serde::Serialize;

use super::safe_relative;
use crate::workspace::{db_err, Workspace, WorkspaceError};

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

impl Workspace {
    /// People of a repository: commit authors (by email) and issue participants (by login).
    pub fn members(&self, repo: Option<&str>, limit: usize) -> Result<Vec<Member>, WorkspaceError> {
        let repo = self.resolve_repo(repo)?;
        let conn = self.conn();
        let mut members: BTreeMap<String, Member> = BTreeMap::new();
        let mut stmt = conn
            .prepare_cached(
                "SELECT author_name, author_email, count(*), max(time) FROM commits WHERE repo_id = ?1
                 GROUP BY CASE author_email WHEN '' THEN 'name:' || lower(author_name)
                          ELSE lower(author_email) END",
            )
            .map_err(db_err("listing members"))?;
        let rows: Vec<(String, String, i64, i64)> = stmt
            .query_map([repo.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .map_err(db_err("listing members"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("listing members"))?;
        // One name with two emails (work and home) is one member: the second replaced the
        // first, and its commits were lost from the count.
        for (name, email, commits, last) in rows {
            members
                .entry(name.to_lowercase())
                .and_modify(|m| {
                    m.commits += commits;
                    if m.last_active < Some(last) {
                        m.last_active = Some(last);
                        m.email = Some(email.clone());
                    }
                })
                .or_insert(Member {
                    name,
                    email: Some(email),
                    commits,
                    issues_opened: 0,
                    pull_requests_opened: 0,
                    comments: 0,
                    last_active: Some(last),
                });
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
                // The hash is that of the row of `max(c.time)` (SQLite's bare column of a
                // query with one max()): a subquery per author, which could not use an index,
                // made a large project's answer take minutes. Authors without an email are
                // told apart by name: grouped by the empty email, they were one person.
                "SELECT c.author_name, c.author_email, count(DISTINCT c.id), sum(f.additions), sum(f.deletions),
                        max(c.time), c.hash
                 FROM commits c JOIN commit_files f ON f.commit_id = c.id
                 WHERE c.repo_id = ?1 AND (f.path = ?2 OR ?2 = '' OR substr(f.path, 1, length(?2) + 1) = ?2 || '/')
                 GROUP BY CASE c.author_email WHEN '' THEN 'name:' || lower(c.author_name)
                          ELSE lower(c.author_email) END
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
