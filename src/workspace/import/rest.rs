//! GitHub REST objects: issues and pull requests, issue comments, reviews and review comments.

use std::path::Path;

use serde_json::Value;

use super::fields::{
    external_id, labels_field, login, number_field, number_from_url, str_field, time_field, Obj,
};
use super::{shape_err, Comment, Item};
use crate::workspace::WorkspaceError;

/// A REST issue (or pull request) object.
pub(super) fn rest_item(path: &Path, o: &Obj) -> Result<Item, WorkspaceError> {
    let number = number_field(path, o)?;
    let is_pr = o.contains_key("pull_request") || o.contains_key("head");
    let merged_at = time_field(o, "merged_at").or_else(|| {
        o.get("pull_request")
            .and_then(Value::as_object)
            .and_then(|p| time_field(p, "merged_at"))
    });
    let state = str_field(o, "state").map(|s| s.to_lowercase());
    Ok(Item {
        number,
        is_pr,
        title: str_field(o, "title"),
        body: Some(str_field(o, "body").unwrap_or_default()),
        state: if merged_at.is_some() {
            Some("merged".into())
        } else {
            state
        },
        author: login(o.get("user")),
        labels: labels_field(o),
        created_at: time_field(o, "created_at"),
        updated_at: time_field(o, "updated_at"),
        closed_at: time_field(o, "closed_at"),
        merged_at,
        url: str_field(o, "html_url").or_else(|| str_field(o, "url")),
        base_ref: o
            .get("base")
            .and_then(|b| b.get("ref"))
            .and_then(Value::as_str)
            .map(str::to_string),
        head_ref: o
            .get("head")
            .and_then(|b| b.get("ref"))
            .and_then(Value::as_str)
            .map(str::to_string),
        draft: o.get("draft").and_then(Value::as_bool),
        // GitHub fills it for open pull requests too (a test merge): only a merge counts.
        merge_commit: merged_at.and(str_field(o, "merge_commit_sha")),
        closed_by: None,
        merged_by: merged_at.and(login(o.get("merged_by"))),
        state_reason: str_field(o, "state_reason"),
        whole: Vec::new(),
    })
}

pub(super) fn issue_comment(path: &Path, o: &Obj, number: i64) -> Result<Comment, WorkspaceError> {
    Ok(Comment {
        number,
        kind: "comment",
        external_id: external_id(o).ok_or_else(|| shape_err(path, "comment without an id"))?,
        author: login(o.get("user")).unwrap_or_else(|| "ghost".into()),
        body: str_field(o, "body").unwrap_or_default(),
        created_at: time_field(o, "created_at"),
        path: None,
        line: None,
        diff_hunk: None,
        review_state: None,
    })
}

pub(super) fn review(path: &Path, o: &Obj, number: i64) -> Result<Comment, WorkspaceError> {
    Ok(Comment {
        number,
        kind: "review",
        external_id: external_id(o).ok_or_else(|| shape_err(path, "review without an id"))?,
        author: login(o.get("user")).unwrap_or_else(|| "ghost".into()),
        body: str_field(o, "body").unwrap_or_default(),
        created_at: time_field(o, "submitted_at").or_else(|| time_field(o, "created_at")),
        path: None,
        line: None,
        diff_hunk: None,
        review_state: str_field(o, "state"),
    })
}

pub(super) fn review_comment(
    path: &Path,
    o: &Obj,
    number: Option<i64>,
) -> Result<Comment, WorkspaceError> {
    let number = number
        .or_else(|| number_from_url(o.get("pull_request_url")))
        .ok_or_else(|| shape_err(path, "review comment without a pull request number"))?;
    Ok(Comment {
        number,
        kind: "review_comment",
        external_id: external_id(o)
            .ok_or_else(|| shape_err(path, "review comment without an id"))?,
        author: login(o.get("user")).unwrap_or_else(|| "ghost".into()),
        body: str_field(o, "body").unwrap_or_default(),
        created_at: time_field(o, "created_at"),
        path: str_field(o, "path"),
        line: o
            .get("line")
            .and_then(Value::as_i64)
            .or_else(|| o.get("original_line").and_then(Value::as_i64)),
        diff_hunk: str_field(o, "diff_hunk"),
        review_state: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::workspace::import::read;
    use crate::workspace::import::tests::write;

    #[test]
    fn rest_pages_back_to_back_with_pull_requests_among_issues() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "issues.json",
            r#"[{"number": 1, "title": "Bug", "state": "open", "body": "crash", "user": {"login": "ann"},
                 "labels": [{"name": "bug"}], "created_at": "2024-01-02T03:04:05Z"}]
               [{"number": 2, "title": "Fix", "state": "closed", "body": null, "user": {"login": "bob"},
                 "pull_request": {"merged_at": "2024-02-01T00:00:00Z"}, "labels": []}]"#,
        );
        let b = read(&p).unwrap();
        assert_eq!(b.items.len(), 2);
        let i1 = &b.items[&1];
        assert!(!i1.is_pr);
        assert_eq!(i1.labels.as_deref(), Some(&["bug".to_string()][..]));
        assert_eq!(i1.created_at, Some(1704164645));
        let i2 = &b.items[&2];
        assert!(i2.is_pr);
        assert_eq!(i2.state.as_deref(), Some("merged"));
        assert_eq!(i2.body.as_deref(), Some(""));
    }

    #[test]
    fn comments_reviews_and_review_comments_find_their_items() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "all.json",
            r#"[{"id": 10, "issue_url": "https://api.github.com/repos/o/r/issues/7", "body": "me too", "user": {"login": "c"}}]
               [{"id": 11, "pull_request_url": "https://api.github.com/repos/o/r/pulls/8", "diff_hunk": "@@", "path": "src/a.rs", "line": 3, "body": "nit", "user": {"login": "d"}}]
               [{"id": 12, "pull_request_url": "https://api.github.com/repos/o/r/pulls/8", "state": "APPROVED", "body": "ACK", "user": {"login": "e"}, "submitted_at": "2024-01-01T00:00:00Z"}]"#,
        );
        let b = read(&p).unwrap();
        let kinds: Vec<(i64, &str)> = b.comments.iter().map(|c| (c.number, c.kind)).collect();
        assert_eq!(
            kinds,
            vec![(7, "comment"), (8, "review_comment"), (8, "review")]
        );
        assert_eq!(b.comments[1].path.as_deref(), Some("src/a.rs"));
        assert_eq!(b.comments[2].review_state.as_deref(), Some("APPROVED"));
    }
}
