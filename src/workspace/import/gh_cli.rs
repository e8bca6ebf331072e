//! `gh issue list --json` and `gh pr list --json` objects, with their nested comments and
//! reviews.

use std::path::Path;

use serde_json::Value;

use super::fields::{external_id, labels_field, login, number_field, str_field, time_field, Obj};
use super::{Comment, Item, Sink};
use crate::workspace::WorkspaceError;

/// `gh issue list --json` / `gh pr list --json` objects.
pub(super) fn gh_cli_item(path: &Path, o: &Obj, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
    let number = number_field(path, o)?;
    let url = str_field(o, "url");
    let is_pr = url.as_deref().is_some_and(|u| u.contains("/pull/"))
        || str_field(o, "state").as_deref() == Some("MERGED")
        || [
            "headRefName",
            "baseRefName",
            "mergedAt",
            "isDraft",
            "reviews",
            "mergeable",
        ]
        .iter()
        .any(|k| o.contains_key(*k));
    let merged_at = time_field(o, "mergedAt");
    let state = str_field(o, "state").map(|s| s.to_lowercase());
    sink.item(Item {
        number,
        is_pr,
        title: str_field(o, "title"),
        body: str_field(o, "body"),
        state: if merged_at.is_some() {
            Some("merged".into())
        } else {
            state
        },
        author: login(o.get("author")),
        labels: labels_field(o),
        created_at: time_field(o, "createdAt"),
        updated_at: time_field(o, "updatedAt"),
        closed_at: time_field(o, "closedAt"),
        merged_at,
        url,
        base_ref: str_field(o, "baseRefName"),
        head_ref: str_field(o, "headRefName"),
        draft: o.get("isDraft").and_then(Value::as_bool),
        merge_commit: merged_at.and(
            o.get("mergeCommit")
                .and_then(|c| c.get("oid"))
                .and_then(Value::as_str)
                .map(str::to_string),
        ),
        closed_by: None,
        merged_by: merged_at.and(login(o.get("mergedBy"))),
        state_reason: str_field(o, "stateReason").map(|s| s.to_lowercase()),
        whole: Vec::new(),
    })?;
    let nested = |key: &str| {
        o.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for (i, c) in nested("comments").iter().enumerate() {
        let Some(c) = c.as_object() else { continue };
        sink.comment(Comment {
            number,
            kind: "comment",
            // gh gives comments an id (a node id) or a URL; the position is the fallback.
            external_id: external_id(c)
                .or_else(|| str_field(c, "url"))
                .unwrap_or_else(|| format!("gh-{i}")),
            author: login(c.get("author")).unwrap_or_else(|| "ghost".into()),
            body: str_field(c, "body").unwrap_or_default(),
            created_at: time_field(c, "createdAt"),
            path: None,
            line: None,
            diff_hunk: None,
            review_state: None,
        })?;
    }
    for (i, r) in nested("reviews").iter().enumerate() {
        let Some(r) = r.as_object() else { continue };
        sink.comment(Comment {
            number,
            kind: "review",
            external_id: external_id(r).unwrap_or_else(|| format!("gh-review-{i}")),
            author: login(r.get("author")).unwrap_or_else(|| "ghost".into()),
            body: str_field(r, "body").unwrap_or_default(),
            created_at: time_field(r, "submittedAt"),
            path: None,
            line: None,
            diff_hunk: None,
            review_state: str_field(r, "state"),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::workspace::import::read;
    use crate::workspace::import::tests::write;

    #[test]
    fn gh_cli_output() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "prs.json",
            r#"[{"number": 5, "title": "Add x", "state": "MERGED", "author": {"login": "ann"},
                 "url": "https://github.com/o/r/pull/5", "createdAt": "2024-03-01T00:00:00Z",
                 "mergedAt": "2024-03-02T00:00:00Z", "headRefName": "x", "baseRefName": "main",
                 "labels": [{"name": "feature"}],
                 "comments": [{"id": "IC_1", "author": {"login": "bob"}, "body": "nice", "createdAt": "2024-03-01T01:00:00Z"}],
                 "reviews": [{"id": "PRR_1", "author": {"login": "cat"}, "body": "LGTM", "state": "APPROVED", "submittedAt": "2024-03-01T02:00:00Z"}]}]"#,
        );
        let b = read(&p).unwrap();
        let item = &b.items[&5];
        assert!(item.is_pr);
        assert_eq!(item.state.as_deref(), Some("merged"));
        assert_eq!(item.author.as_deref(), Some("ann"));
        assert_eq!(item.head_ref.as_deref(), Some("x"));
        assert_eq!(b.comments.len(), 2);
        assert_eq!(b.comments[1].kind, "review");
    }
}
