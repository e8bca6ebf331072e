//! github-metadata-backup records: an issue or pull request with its timeline events and review
//! comments.

use std::path::Path;

use serde_json::Value;

use super::fields::{external_id, login, str_field, time_field, Obj};
use super::rest::{rest_item, review_comment};
use super::{shape_err, Comment, Sink};
use crate::workspace::WorkspaceError;

/// `{"type": "issue", "issue": {...}, "events": [...]}` or
/// `{"type": "pull", "pull": {...}, "events": [...], "comments": [...]}`.
pub(super) fn backup_record(
    path: &Path,
    o: &Obj,
    sink: &mut Sink<'_>,
) -> Result<(), WorkspaceError> {
    let is_pull = o.get("type").and_then(Value::as_str) == Some("pull");
    let key = if is_pull { "pull" } else { "issue" };
    let inner = o
        .get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| shape_err(path, format!("a {key} backup without its \"{key}\" object")))?;
    let mut item = rest_item(path, inner)?;
    item.is_pr |= is_pull;
    let number = item.number;
    let events: Vec<&Obj> = o
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    // The timeline says whether it was merged, and when, even if the pull object does not.
    if let Some(merged) = events
        .iter()
        .find(|e| e.get("event").and_then(Value::as_str) == Some("merged"))
    {
        item.state = Some("merged".into());
        if item.merged_at.is_none() {
            item.merged_at = time_field(merged, "created_at");
        }
        if item.merged_by.is_none() {
            item.merged_by = login(merged.get("actor"));
        }
    }
    // The record is the item's whole timeline, and a pull request's whole review comments.
    if o.get("events").is_some_and(Value::is_array) {
        item.whole.extend(["comment", "review"]);
    }
    if is_pull && o.get("comments").is_some_and(Value::is_array) {
        item.whole.push("review_comment");
    }
    if !is_pull {
        // The last closing, unless the issue was reopened after it.
        item.closed_by = events
            .iter()
            .rev()
            .find(|e| {
                matches!(
                    e.get("event").and_then(Value::as_str),
                    Some("closed" | "reopened")
                )
            })
            .filter(|e| e.get("event").and_then(Value::as_str) == Some("closed"))
            .and_then(|e| str_field(e, "commit_id"));
    }
    sink.item(item)?;
    for ev in events {
        match ev.get("event").and_then(Value::as_str) {
            Some("commented") => sink.comment(Comment {
                number,
                kind: "comment",
                external_id: external_id(ev)
                    .ok_or_else(|| shape_err(path, "comment event without an id"))?,
                author: login(ev.get("user"))
                    .or_else(|| login(ev.get("actor")))
                    .unwrap_or_else(|| "ghost".into()),
                body: str_field(ev, "body").unwrap_or_default(),
                created_at: time_field(ev, "created_at"),
                path: None,
                line: None,
                diff_hunk: None,
                review_state: None,
            })?,
            Some("reviewed") => sink.comment(Comment {
                number,
                kind: "review",
                external_id: external_id(ev)
                    .ok_or_else(|| shape_err(path, "review event without an id"))?,
                author: login(ev.get("user")).unwrap_or_else(|| "ghost".into()),
                body: str_field(ev, "body").unwrap_or_default(),
                created_at: time_field(ev, "submitted_at").or_else(|| time_field(ev, "updated_at")),
                path: None,
                line: None,
                diff_hunk: None,
                review_state: str_field(ev, "state"),
            })?,
            _ => {}
        }
    }
    for c in o
        .get("comments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(c) = c.as_object() {
            sink.comment(review_comment(path, c, Some(number))?)?;
        }
    }
    Ok(())
}
