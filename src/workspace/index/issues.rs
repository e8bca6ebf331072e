//! Imported exports written to the database: issues and pull requests merged with what the
//! workspace has, their comments, and the search entries of every item an import touched.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::{begin_write, delete_docs, exec, query_one, IndexEvent, IndexPhase, IndexReport};
use crate::workspace::import::{self, Comment, Item, Record};
use crate::workspace::text::identifier_terms;
use crate::workspace::{db_err, now, WorkspaceError};

/// Imports an export in one transaction, record by record as the file is parsed (so memory
/// stays bounded whatever its size): items are merged with what the workspace already has
/// (re-importing updates, never duplicates), comments attach to their items, and the search
/// entries of every touched item are rebuilt. Any error rolls everything back, the
/// repository's entry included when this import created it.
pub(super) fn write_import(
    conn: &mut Connection,
    path: &Path,
    slug: &str,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<IndexReport, WorkspaceError> {
    let tx = begin_write(conn, slug, on_event)?;
    let repo = match crate::workspace::repo_where(&tx, "remote = ?1 COLLATE NOCASE", params![slug])?
    {
        Some(r) => r,
        None => {
            let name = crate::workspace::unique_name(&tx, slug)?;
            exec(
                &tx,
                "INSERT INTO repos (name, remote, added_at, status) VALUES (?1, ?2, ?3, 'ready')",
                params![name, slug, now()],
            )
            .map_err(db_err("adding an imported repository"))?;
            crate::workspace::repo_where(&tx, "id = ?1", params![tx.last_insert_rowid()])?
                .ok_or_else(|| WorkspaceError::Refused("the repository vanished".into()))?
        }
    };
    let mut report = IndexReport {
        repo: repo.name.clone(),
        ..Default::default()
    };
    let mut touched: HashSet<i64> = HashSet::new();
    // Comments whose item has not been seen yet (it may come later in the export).
    let mut pending: Vec<Comment> = Vec::new();
    // Items whose record lists these kinds of comment in full, and the comments it listed:
    // the others of those kinds were deleted since the last import.
    let mut whole: HashMap<i64, WholeRecord> = HashMap::new();
    let mut done = 0u64;
    let stats = import::read_stream(path, &mut |record| {
        match record {
            Record::Item(item) => {
                let kinds = item.whole.clone();
                let id = upsert_item(&tx, repo.id, item, &mut report)?;
                touched.insert(id);
                if !kinds.is_empty() {
                    let entry = whole.entry(id).or_default();
                    for k in kinds {
                        if !entry.0.contains(&k) {
                            entry.0.push(k);
                        }
                    }
                }
            }
            Record::Comment(c) => match issue_id(&tx, repo.id, c.number)? {
                Some(id) => {
                    insert_comment(&tx, id, &c)?;
                    report.comments += 1;
                    touched.insert(id);
                    if let Some((_, listed)) = whole.get_mut(&id) {
                        listed.insert((c.kind, c.external_id.clone()));
                    }
                }
                None => pending.push(c),
            },
        }
        done += 1;
        if done.is_multiple_of(500) {
            on_event(IndexEvent::Progress {
                repo: repo.name.clone(),
                phase: IndexPhase::Import,
                done,
                total: 0,
            });
        }
        Ok(())
    })?;
    for c in pending {
        match issue_id(&tx, repo.id, c.number)? {
            Some(id) => {
                insert_comment(&tx, id, &c)?;
                report.comments += 1;
                touched.insert(id);
                // Listed, so that a whole record read after it does not delete it.
                if let Some((_, listed)) = whole.get_mut(&id) {
                    listed.insert((c.kind, c.external_id.clone()));
                }
            }
            None => report.orphan_comments += 1,
        }
    }
    for (id, (kinds, listed)) in &whole {
        report.comments_deleted += delete_unlisted_comments(&tx, *id, kinds, listed)? as u64;
    }
    // Oldest first, so that the search index's row order is the order the items were opened
    // in (a search over too many matches ranks the newest rows), whatever order the export
    // listed them in (`gh api` lists newest first).
    let mut order: Vec<(Option<i64>, i64, i64)> = Vec::with_capacity(touched.len());
    {
        let mut st = tx
            .prepare_cached("SELECT created_at, number, id FROM issues WHERE repo_id = ?1")
            .map_err(db_err("ordering the imported items"))?;
        let rows = st
            .query_map([repo.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err("ordering the imported items"))?;
        for row in rows {
            let row = row.map_err(db_err("ordering the imported items"))?;
            if touched.contains(&row.2) {
                order.push(row);
            }
        }
    }
    order.sort_unstable();
    for (_, _, id) in order {
        reindex_issue(&tx, id)?;
    }
    if stats.capped > 0 {
        report.warnings.push(format!(
            "{} records had text longer than GitHub allows; the first {} characters of each are kept",
            stats.capped,
            crate::workspace::import::MAX_BODY_CHARS
        ));
    }
    if stats.ignored > 0 {
        report.warnings.push(format!(
            "{} records were of no known shape and were skipped",
            stats.ignored
        ));
    }
    if report.orphan_comments > 0 {
        report.warnings.push(format!(
            "{} comments belong to issues that are neither in this import nor in the workspace; import the issues too",
            report.orphan_comments
        ));
    }
    super::links::relink(&tx, repo.id, repo.remote.as_deref())?;
    crate::workspace::vectors::keep_vectors(&tx, repo.id)?;
    exec(
        &tx,
        "UPDATE repos SET indexed_at = ?1 WHERE id = ?2",
        params![now(), repo.id],
    )
    .map_err(db_err("saving the import time"))?;
    tx.commit().map_err(db_err("saving the import"))?;
    on_event(IndexEvent::Progress {
        repo: repo.name.clone(),
        phase: IndexPhase::Import,
        done,
        total: done,
    });
    Ok(report)
}

/// The kinds of comment an item's record lists in full, and the comments (kind, id) it lists.
type WholeRecord = (Vec<&'static str>, HashSet<(&'static str, String)>);

/// Deletes the comments of item `issue_id` of `kinds` that are not in `listed`; how many.
fn delete_unlisted_comments(
    tx: &Transaction<'_>,
    issue_id: i64,
    kinds: &[&'static str],
    listed: &HashSet<(&'static str, String)>,
) -> Result<usize, WorkspaceError> {
    let stored: Vec<(i64, String, String)> = {
        let mut st = tx
            .prepare_cached("SELECT id, kind, external_id FROM comments WHERE issue_id = ?1")
            .map_err(db_err("reading an item's comments"))?;
        let rows = st
            .query_map([issue_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err("reading an item's comments"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading an item's comments"))?
    };
    let mut deleted = 0;
    for (id, kind, external_id) in stored {
        let Some(kind) = kinds.iter().find(|k| **k == kind) else {
            continue;
        };
        if !listed.contains(&(*kind, external_id)) {
            exec(tx, "DELETE FROM comments WHERE id = ?1", params![id])
                .map_err(db_err("deleting a comment deleted on GitHub"))?;
            delete_docs(tx, "comment", id)?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

fn issue_id(
    tx: &Transaction<'_>,
    repo_id: i64,
    number: i64,
) -> Result<Option<i64>, WorkspaceError> {
    query_one(
        tx,
        "SELECT id FROM issues WHERE repo_id = ?1 AND number = ?2",
        params![repo_id, number],
        |r| r.get(0),
    )
    .optional()
    .map_err(db_err("finding a comment's issue"))
}

fn insert_comment(tx: &Transaction<'_>, issue_id: i64, c: &Comment) -> Result<(), WorkspaceError> {
    exec(tx,
        "INSERT INTO comments (issue_id, kind, external_id, author, body, created_at, path, line, diff_hunk, review_state)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (issue_id, kind, external_id) DO UPDATE SET
            author = excluded.author, body = excluded.body, created_at = excluded.created_at,
            path = excluded.path, line = excluded.line, diff_hunk = excluded.diff_hunk,
            review_state = excluded.review_state",
        params![
            issue_id,
            c.kind,
            c.external_id,
            c.author,
            c.body,
            c.created_at,
            c.path,
            c.line,
            c.diff_hunk,
            c.review_state
        ],
    )
    .map_err(db_err("saving a comment"))?;
    Ok(())
}

fn upsert_item(
    tx: &Transaction<'_>,
    repo_id: i64,
    new: Item,
    report: &mut IndexReport,
) -> Result<i64, WorkspaceError> {
    let existing: Option<(i64, Item)> = tx
        .query_row(
            "SELECT id, is_pr, title, body, state, author, labels, created_at, updated_at, closed_at,
                    merged_at, url, base_ref, head_ref, draft, merge_commit, closed_by,
                    merged_by, state_reason
             FROM issues WHERE repo_id = ?1 AND number = ?2",
            params![repo_id, new.number],
            |r| {
                let labels: String = r.get(6)?;
                Ok((
                    r.get(0)?,
                    Item {
                        number: new.number,
                        is_pr: r.get(1)?,
                        title: r.get(2)?,
                        body: r.get(3)?,
                        state: r.get(4)?,
                        author: r.get(5)?,
                        labels: serde_json::from_str(&labels).ok(),
                        created_at: r.get(7)?,
                        updated_at: r.get(8)?,
                        closed_at: r.get(9)?,
                        merged_at: r.get(10)?,
                        url: r.get(11)?,
                        base_ref: r.get(12)?,
                        head_ref: r.get(13)?,
                        draft: r.get(14)?,
                        merge_commit: r.get(15)?,
                        closed_by: r.get(16)?,
                        merged_by: r.get(17)?,
                        state_reason: r.get(18)?,
                        whole: Vec::new(),
                    },
                ))
            },
        )
        .optional()
        .map_err(db_err("reading an issue"))?;
    let item = match existing {
        Some((_, mut old)) => {
            old.merge(new);
            old
        }
        None => new,
    };
    if item.is_pr {
        report.pull_requests += 1;
    } else {
        report.issues += 1;
    }
    let labels = serde_json::to_string(&item.labels.clone().unwrap_or_default())
        .unwrap_or_else(|_| "[]".into());
    query_one(tx,
        "INSERT INTO issues (repo_id, number, is_pr, title, body, state, author, labels, created_at,
                             updated_at, closed_at, merged_at, url, base_ref, head_ref, draft,
                             merge_commit, closed_by, merged_by, state_reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
                 ?19, ?20)
         ON CONFLICT (repo_id, number) DO UPDATE SET
            is_pr = excluded.is_pr, title = excluded.title, body = excluded.body,
            state = excluded.state, author = excluded.author, labels = excluded.labels,
            created_at = excluded.created_at, updated_at = excluded.updated_at,
            closed_at = excluded.closed_at, merged_at = excluded.merged_at, url = excluded.url,
            base_ref = excluded.base_ref, head_ref = excluded.head_ref, draft = excluded.draft,
            merge_commit = excluded.merge_commit, closed_by = excluded.closed_by,
            merged_by = excluded.merged_by, state_reason = excluded.state_reason
         RETURNING id",
        params![
            repo_id,
            item.number,
            item.is_pr,
            item.title.unwrap_or_default(),
            item.body.unwrap_or_default(),
            item.state.unwrap_or_else(|| "open".into()),
            item.author.unwrap_or_else(|| "ghost".into()),
            labels,
            item.created_at,
            item.updated_at,
            item.closed_at,
            item.merged_at,
            item.url,
            item.base_ref,
            item.head_ref,
            item.draft.unwrap_or(false),
            item.merge_commit,
            item.closed_by,
            item.merged_by,
            item.state_reason
        ],
        |r| r.get(0),
    )
    .map_err(db_err("saving an issue"))
}

struct IssueRow {
    repo_id: i64,
    number: i64,
    is_pr: bool,
    title: String,
    body: String,
    state: String,
    author: String,
    labels: String,
    created: Option<i64>,
}

struct CommentRow {
    id: i64,
    kind: String,
    author: String,
    body: String,
    created: Option<i64>,
    path: Option<String>,
    line: Option<i64>,
}

/// Rebuilds the search entries of one issue or pull request and its comments.
fn reindex_issue(tx: &Transaction<'_>, issue_id: i64) -> Result<(), WorkspaceError> {
    let i: IssueRow = tx
        .query_row(
            "SELECT repo_id, number, is_pr, title, body, state, author, labels, created_at FROM issues WHERE id = ?1",
            [issue_id],
            |r| {
                Ok(IssueRow {
                    repo_id: r.get(0)?,
                    number: r.get(1)?,
                    is_pr: r.get(2)?,
                    title: r.get(3)?,
                    body: r.get(4)?,
                    state: r.get(5)?,
                    author: r.get(6)?,
                    labels: r.get(7)?,
                    created: r.get(8)?,
                })
            },
        )
        .map_err(db_err("reading an issue"))?;
    let kind = if i.is_pr { "pr" } else { "issue" };
    delete_docs(tx, "issue", issue_id)?;
    let heading = format!("#{} {}", i.number, i.title);
    exec(tx,
        "INSERT INTO docs (repo_id, kind, source, source_id, number, state, author, labels, time, title, body, terms)
         VALUES (?1, ?2, 'issue', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            i.repo_id,
            kind,
            issue_id,
            i.number,
            i.state,
            i.author,
            i.labels,
            i.created,
            heading,
            i.body,
            identifier_terms(&format!("{}\n{}", i.title, i.body))
        ],
    )
    .map_err(db_err("indexing an issue"))?;
    let mut stmt = tx
        .prepare("SELECT id, kind, author, body, created_at, path, line FROM comments WHERE issue_id = ?1")
        .map_err(db_err("reading comments"))?;
    let comments: Vec<CommentRow> = stmt
        .query_map([issue_id], |r| {
            Ok(CommentRow {
                id: r.get(0)?,
                kind: r.get(1)?,
                author: r.get(2)?,
                body: r.get(3)?,
                created: r.get(4)?,
                path: r.get(5)?,
                line: r.get(6)?,
            })
        })
        .map_err(db_err("reading comments"))?
        .collect::<Result<_, _>>()
        .map_err(db_err("reading comments"))?;
    for c in comments {
        delete_docs(tx, "comment", c.id)?;
        if c.body.trim().is_empty() {
            continue;
        }
        let location = match (&c.path, c.line) {
            (Some(p), Some(l)) => format!("{p}:{l}\n"),
            (Some(p), None) => format!("{p}\n"),
            _ => String::new(),
        };
        let what = match c.kind.as_str() {
            "review" => "review",
            "review_comment" => "review comment",
            _ => "comment",
        };
        exec(tx,
            "INSERT INTO docs (repo_id, kind, source, source_id, number, comment_id, state, author, labels, time, path, line, title, body, terms)
             VALUES (?1, ?2, 'comment', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                i.repo_id,
                kind,
                c.id,
                i.number,
                c.id,
                i.state,
                c.author,
                i.labels,
                c.created,
                c.path,
                c.line,
                format!("{heading} ({what})"),
                format!("{location}{}", c.body),
                identifier_terms(&c.body)
            ],
        )
        .map_err(db_err("indexing a comment"))?;
    }
    Ok(())
}
