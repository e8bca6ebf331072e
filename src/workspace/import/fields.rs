//! The JSON fields every format reads alike: strings, logins, times, numbers and ids, labels.

use std::path::Path;

use serde_json::Value;

use super::shape_err;
use crate::workspace::WorkspaceError;

pub(super) type Obj = serde_json::Map<String, Value>;

pub(super) fn str_field(o: &Obj, key: &str) -> Option<String> {
    o.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A user's login; none for a deleted account, which `gh` prints as `app/` (an item's author)
/// or `""` (a comment's), so the account shows as GitHub's "ghost" rather than as those. An
/// app's `app/NAME` is written as REST writes it, `NAME[bot]`.
pub(super) fn login(v: Option<&Value>) -> Option<String> {
    let login = v.and_then(|u| u.get("login")).and_then(Value::as_str)?;
    match login.strip_prefix("app/") {
        Some("") => None,
        Some(app) => Some(format!("{app}[bot]")),
        None if login.trim().is_empty() => None,
        None => Some(login.to_string()),
    }
}

/// RFC 3339 time to seconds since the epoch.
pub(super) fn time_field(o: &Obj, key: &str) -> Option<i64> {
    o.get(key)
        .and_then(Value::as_str)
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.timestamp())
}

pub(super) fn number_field(path: &Path, o: &Obj) -> Result<i64, WorkspaceError> {
    o.get("number")
        .and_then(Value::as_i64)
        .filter(|n| *n > 0)
        .ok_or_else(|| shape_err(path, "\"number\" must be a positive integer"))
}

/// The number at the end of an API URL (`.../issues/12`, `.../pulls/12`).
pub(super) fn number_from_url(v: Option<&Value>) -> Option<i64> {
    v?.as_str()?.rsplit('/').next()?.parse().ok()
}

pub(super) fn external_id(o: &Obj) -> Option<String> {
    match o.get("id") {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        _ => o.get("node_id").and_then(Value::as_str).map(str::to_string),
    }
}

pub(super) fn labels_field(o: &Obj) -> Option<Vec<String>> {
    let arr = o.get("labels")?.as_array()?;
    Some(
        arr.iter()
            .filter_map(|l| match l {
                Value::String(s) => Some(s.clone()),
                other => other
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
            .collect(),
    )
}
