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
    /// Who merged a pull request.
    pub merged_by: Option<String>,
    /// Why an issue was closed: completed, not_planned, duplicate.
    pub state_reason: Option<String>,
    pub url: Option<String>,
    pub base_ref: Option<String>,
    pub head_ref: Option<String>,
    pub comments: Vec<CommentDetail>,
    /// Comments left out to keep within the limit.
    pub comments_omitted: usize,
    /// For an issue, the pull requests that fixed it; for a pull request, the issues it
    /// fixed (see `links`).
    pub linked: Vec<i64>,
    /// A pull request's reviewers, each with the state of their last review (approved,
    /// changes_requested, commented), in the order they first reviewed; the author left out.
    pub reviews: Vec<(String, String)>,
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
                "SELECT id, is_pr, title, body, state, author, labels, created_at, closed_at, merged_at, url, base_ref, head_ref,
                        merged_by, state_reason
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
                            merged_by: r.get(13)?,
                            state_reason: r.get(14)?,
                            comments: Vec::new(),
                            comments_omitted: 0,
                            linked: Vec::new(),
                            reviews: Vec::new(),
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
        detail.reviews = reviews(&conn, id, &detail.author)?;
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

/// Each reviewer of an item with the state of their last review, in the order they first
/// reviewed, its author left out: the reviews a long thread's cut leaves out count too.
fn reviews(
    conn: &rusqlite::Connection,
    issue_id: i64,
    author: &str,
) -> Result<Vec<(String, String)>, WorkspaceError> {
    let mut st = conn
        .prepare_cached(
            "SELECT author, lower(review_state) FROM comments
             WHERE issue_id = ?1 AND kind = 'review' AND review_state IS NOT NULL
             ORDER BY coalesce(created_at, 0), id",
        )
        .map_err(db_err("reading reviews"))?;
    let rows = st
        .query_map([issue_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(db_err("reading reviews"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err("reading reviews"))?;
    let mut out: Vec<(String, String)> = Vec::new();
    for (who, state) in rows {
        if who.eq_ignore_ascii_case(author) {
            continue;
        }
        // A comment after an approval does not take the approval back (GitHub counts it so).
        match out.iter_mut().find(|(w, _)| *w == who) {
            Some((_, s)) if state != "commented" && state != "dismissed" => *s = state,
            Some((_, s)) if state == "dismissed" => *s = state,
            Some(_) => {}
            None => out.push((who, state)),
        }
    }
    Ok(out)
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

/// What `Workspace::list_issues` keeps: issues or pull requests by their fields, not by words.
#[derive(Debug, Clone, Default)]
pub struct IssueFilter {
    pub repo: Option<String>,
    pub is_pr: bool,
    /// open, closed or merged; or why an issue was closed: completed, not_planned, duplicate.
    pub state: Option<String>,
    pub label: Option<String>,
    /// Who opened it (a login).
    pub author: Option<String>,
    /// Who merged it (a login).
    pub merged_by: Option<String>,
    /// Seconds since the epoch, inclusive: when it was opened, or merged where the filter asks
    /// for merged ones (`merged_by`, or the state `merged`).
    pub since: Option<i64>,
    /// Seconds since the epoch, exclusive, of the same date as `since`.
    pub until: Option<i64>,
    pub limit: usize,
    pub offset: usize,
}

impl IssueFilter {
    /// Whether the dates are those of the merge.
    pub fn dates_merged(&self) -> bool {
        self.merged_by.is_some()
            || self
                .state
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case("merged"))
    }
}

/// One issue or pull request in a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssueSummary {
    pub repo: String,
    pub number: i64,
    pub is_pr: bool,
    pub title: String,
    pub state: String,
    pub state_reason: Option<String>,
    pub author: String,
    pub labels: Vec<String>,
    pub created_at: Option<i64>,
    pub closed_at: Option<i64>,
    pub merged_at: Option<i64>,
    pub merged_by: Option<String>,
}

/// The items a filter keeps: how many in all, and one page of them, latest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssueList {
    pub total: usize,
    pub items: Vec<IssueSummary>,
}

/// The reasons for closing an issue GitHub gives, as a state a filter may ask for.
const CLOSE_REASONS: &[&str] = &["completed", "not_planned", "duplicate"];

impl Workspace {
    /// The issues (or pull requests) `f` keeps, counted, with one page of them.
    pub fn list_issues(&self, f: &IssueFilter) -> Result<IssueList, WorkspaceError> {
        let mut sql =
            String::from(" FROM issues i JOIN repos r ON r.id = i.repo_id WHERE i.is_pr = ?");
        let mut args: Vec<rusqlite::types::Value> = vec![i64::from(f.is_pr).into()];
        if let Some(name) = f.repo.as_deref().filter(|s| !s.trim().is_empty()) {
            let repo = self.repo(name)?;
            sql.push_str(" AND i.repo_id = ?");
            args.push(repo.id.into());
        }
        if let Some(state) = f.state.as_deref().filter(|s| !s.trim().is_empty()) {
            let state = state.trim().to_lowercase().replace([' ', '-'], "_");
            if CLOSE_REASONS.contains(&state.as_str()) {
                sql.push_str(" AND i.state_reason = ?");
            } else if matches!(state.as_str(), "open" | "closed" | "merged") {
                sql.push_str(" AND i.state = ?");
            } else {
                return Err(WorkspaceError::Refused(format!(
                    "state {state:?} is none of open, closed, merged, completed, not_planned, \
                     duplicate"
                )));
            }
            args.push(state.into());
        }
        if let Some(label) = f.label.as_deref().filter(|s| !s.trim().is_empty()) {
            sql.push_str(
                " AND json_valid(i.labels) AND EXISTS (SELECT 1 FROM json_each(i.labels)
                   WHERE type = 'text' AND lower(value) = lower(?))",
            );
            args.push(label.trim().to_string().into());
        }
        for (column, v) in [("i.author", &f.author), ("i.merged_by", &f.merged_by)] {
            if let Some(v) = v.as_deref().filter(|s| !s.trim().is_empty()) {
                sql.push_str(&format!(" AND lower({column}) = lower(?)"));
                args.push(v.trim().to_string().into());
            }
        }
        let date = if f.dates_merged() {
            "i.merged_at"
        } else {
            "i.created_at"
        };
        if let Some(since) = f.since {
            sql.push_str(&format!(" AND {date} >= ?"));
            args.push(since.into());
        }
        if let Some(until) = f.until {
            sql.push_str(&format!(" AND {date} < ?"));
            args.push(until.into());
        }
        let conn = self.conn();
        let total: i64 = conn
            .query_row(
                &format!("SELECT count(*){sql}"),
                rusqlite::params_from_iter(args.iter()),
                |r| r.get(0),
            )
            .map_err(db_err("counting issues"))?;
        let page = format!(
            "SELECT r.name, i.number, i.is_pr, i.title, i.state, i.state_reason, i.author,
                    i.labels, i.created_at, i.closed_at, i.merged_at, i.merged_by
             {sql} ORDER BY coalesce({date}, 0) DESC, i.number DESC LIMIT ? OFFSET ?"
        );
        args.push((f.limit as i64).into());
        args.push((f.offset as i64).into());
        let mut st = conn.prepare(&page).map_err(db_err("listing issues"))?;
        let items = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                let labels: String = r.get(7)?;
                Ok(IssueSummary {
                    repo: r.get(0)?,
                    number: r.get(1)?,
                    is_pr: r.get(2)?,
                    title: r.get(3)?,
                    state: r.get(4)?,
                    state_reason: r.get(5)?,
                    author: r.get(6)?,
                    labels: serde_json::from_str(&labels).unwrap_or_default(),
                    created_at: r.get(8)?,
                    closed_at: r.get(9)?,
                    merged_at: r.get(10)?,
                    merged_by: r.get(11)?,
                })
            })
            .map_err(db_err("listing issues"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err("listing issues"))?;
        Ok(IssueList {
            total: usize::try_from(total).unwrap_or(0),
            items,
        })
    }
}
