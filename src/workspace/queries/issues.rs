//! One issue or pull request with its comments, reviews and review comments.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use crate::workspace::{db_err, Workspace, WorkspaceError};

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
    /// For an issue, the pull requests that fixed it; for a pull request, the issues it
    /// fixed (see `links`).
    pub linked: Vec<i64>,
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

impl Workspace {
    /// An issue or pull request with its comments (and reviews and review comments), at most
    /// `max_comments` of them: the first half and the latest half, the latest one when only
    /// one fits (a thread ends with what was decided).
    pub fn issue(
        &self,
        repo: Option<&str>,
        number: i64,
        max_comments: usize,
    ) -> Result<IssueDetail, WorkspaceError> {
        let repo = self.resolve_repo_holding(
            repo,
            "SELECT 1 FROM issues WHERE repo_id = ?1 AND number = ?2",
            &number,
        )?;
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
                            linked: Vec::new(),
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
        detail.linked = linked(&conn, repo.id, number, detail.is_pr)?;
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
}

/// The pull requests that fixed issue `number`, or the issues pull request `number` fixed.
pub(crate) fn linked(
    conn: &rusqlite::Connection,
    repo_id: i64,
    number: i64,
    is_pr: bool,
) -> Result<Vec<i64>, WorkspaceError> {
    let sql = if is_pr {
        "SELECT DISTINCT issue FROM links WHERE repo_id = ?1 AND pr = ?2 ORDER BY issue"
    } else {
        "SELECT DISTINCT pr FROM links WHERE repo_id = ?1 AND issue = ?2 ORDER BY pr"
    };
    let mut st = conn.prepare_cached(sql).map_err(db_err("reading links"))?;
    let rows = st
        .query_map(params![repo_id, number], |r| r.get(0))
        .map_err(db_err("reading links"))?;
    rows.collect::<Result<_, _>>()
        .map_err(db_err("reading links"))
}
