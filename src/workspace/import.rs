//! Importing issues, pull requests, comments and reviews from the files people export them to:
//!
//! 1. GitHub REST JSON, as `gh api --paginate` prints it (arrays, one after another; pull
//!    requests appear among issues with a `pull_request` key), from `/issues`, `/issues/comments`,
//!    `/pulls`, `/pulls/comments` and `/pulls/N/reviews`, or the search API's `{items: [...]}`;
//! 2. `gh issue list --json ...` and `gh pr list --json ...` (camelCase, `author.login`,
//!    `OPEN`/`CLOSED`/`MERGED`, nested `comments` and `reviews`);
//! 3. a github-metadata-backup directory (`issues/N.json`, `pulls/N.json` with timeline events
//!    and review comments).
//!
//! Everything is parsed before anything is written, so a broken file imports nothing, and the
//! error names the file and the position in it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::WorkspaceError;

/// An issue or pull request, as far as the imported files tell.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Item {
    pub number: i64,
    pub is_pr: bool,
    pub title: Option<String>,
    pub body: Option<String>,
    /// open, closed or merged
    pub state: Option<String>,
    pub author: Option<String>,
    pub labels: Option<Vec<String>>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub closed_at: Option<i64>,
    pub merged_at: Option<i64>,
    pub url: Option<String>,
    pub base_ref: Option<String>,
    pub head_ref: Option<String>,
    pub draft: Option<bool>,
}

impl Item {
    /// Fills what `other` knows and this does not (a `/pulls` record adds refs and merge time to
    /// the issue-shaped record of the same pull request).
    pub fn merge(&mut self, other: Item) {
        self.is_pr |= other.is_pr;
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f; } )* };
        }
        take!(
            title, body, author, labels, created_at, updated_at, closed_at, merged_at, url,
            base_ref, head_ref, draft
        );
        // "merged" says more than "closed", whichever record came last.
        match (&self.state, other.state) {
            (Some(s), Some(o)) if s == "merged" && o == "closed" => {}
            (_, Some(o)) => self.state = Some(o),
            _ => {}
        }
        if self.merged_at.is_some() {
            self.state = Some("merged".into());
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comment {
    pub number: i64,
    /// comment, review or review_comment
    pub kind: &'static str,
    pub external_id: String,
    pub author: String,
    pub body: String,
    pub created_at: Option<i64>,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub diff_hunk: Option<String>,
    pub review_state: Option<String>,
}

/// One thing an export holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Item(Item),
    Comment(Comment),
}

/// What reading an export found, besides the records.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    pub files: usize,
    pub records: usize,
    /// Records that were recognised as none of the known shapes (counted, not fatal).
    pub ignored: usize,
}

/// Where parsed records go, one at a time (so an export of any size is read in bounded memory).
struct Sink<'a> {
    on: &'a mut dyn FnMut(Record) -> Result<(), WorkspaceError>,
    stats: ReadStats,
}

impl Sink<'_> {
    fn item(&mut self, item: Item) -> Result<(), WorkspaceError> {
        self.stats.records += 1;
        (self.on)(Record::Item(item))
    }

    fn comment(&mut self, c: Comment) -> Result<(), WorkspaceError> {
        self.stats.records += 1;
        (self.on)(Record::Comment(c))
    }
}

/// Everything one import brings, merged by number (for callers that want it all at once).
#[derive(Debug, Default)]
pub struct Batch {
    pub items: BTreeMap<i64, Item>,
    pub comments: Vec<Comment>,
    pub stats: ReadStats,
}

/// Reads a whole export into memory.
pub fn read(path: &Path) -> Result<Batch, WorkspaceError> {
    let mut items: BTreeMap<i64, Item> = BTreeMap::new();
    let mut comments = Vec::new();
    let stats = read_stream(path, &mut |r| {
        match r {
            Record::Item(i) => match items.get_mut(&i.number) {
                Some(existing) => existing.merge(i),
                None => {
                    items.insert(i.number, i);
                }
            },
            Record::Comment(c) => comments.push(c),
        }
        Ok(())
    })?;
    Ok(Batch {
        items,
        comments,
        stats,
    })
}

fn shape_err(path: &Path, what: impl Into<String>) -> WorkspaceError {
    WorkspaceError::Import {
        path: path.to_path_buf(),
        reason: what.into(),
    }
}

/// Reads an export (a JSON file, or a directory of them: a github-metadata-backup, or
/// exported files), passing each record to `on` as it is parsed.
pub fn read_stream(
    path: &Path,
    on: &mut dyn FnMut(Record) -> Result<(), WorkspaceError>,
) -> Result<ReadStats, WorkspaceError> {
    let meta = std::fs::metadata(path).map_err(|source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut sink = Sink {
        on,
        stats: ReadStats::default(),
    };
    if meta.is_dir() {
        let mut files = Vec::new();
        for sub in ["issues", "pulls"] {
            files.extend(json_files(&path.join(sub))?);
        }
        if files.is_empty() {
            files = json_files(path)?;
            files.retain(|f| f.file_name().is_some_and(|n| n != "state.json"));
        }
        if files.is_empty() {
            return Err(shape_err(
                path,
                "no JSON files here (expected issues/N.json and pulls/N.json from github-metadata-backup, or exported .json files)",
            ));
        }
        for f in files {
            read_file(&f, &mut sink)?;
        }
    } else {
        read_file(path, &mut sink)?;
    }
    if sink.stats.records == 0 {
        return Err(shape_err(
            path,
            "no issues, pull requests or comments found: expected GitHub REST JSON, `gh issue/pr list --json` output, or a github-metadata-backup directory",
        ));
    }
    Ok(sink.stats)
}

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, WorkspaceError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| WorkspaceError::Io {
            path: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Counts the lines a reader has given out, so parse errors can say where they are in the file
/// even though each top-level value is parsed on its own.
struct LineCounter<R> {
    inner: R,
    line: usize,
    column: usize,
}

impl<R: std::io::BufRead> Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count(&buf[..n]);
        Ok(n)
    }
}

impl<R> LineCounter<R> {
    fn count(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.line += 1;
                self.column = 0;
            } else {
                self.column += 1;
            }
        }
    }
}

impl<R: std::io::BufRead> LineCounter<R> {
    /// Skips whitespace; returns the next byte without consuming it, or None at the end.
    fn peek_non_space(&mut self) -> std::io::Result<Option<u8>> {
        loop {
            let (skip, found) = {
                let buf = self.inner.fill_buf()?;
                if buf.is_empty() {
                    return Ok(None);
                }
                match buf.iter().position(|b| !b.is_ascii_whitespace()) {
                    Some(i) => (i, Some(buf[i])),
                    None => (buf.len(), None),
                }
            };
            let skipped: Vec<u8> = self.inner.fill_buf()?[..skip].to_vec();
            self.count(&skipped);
            self.inner.consume(skip);
            if found.is_some() {
                return Ok(found);
            }
        }
    }
}

/// Parses one file: JSON values one after another (`gh api --paginate` prints arrays back to
/// back), each an object or an array of objects. Arrays are read element by element, so even
/// one huge array takes memory for one record at a time.
fn read_file(path: &Path, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
    let file = std::fs::File::open(path).map_err(|source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    sink.stats.files += 1;
    let mut reader = LineCounter {
        inner: std::io::BufReader::with_capacity(1 << 16, file),
        line: 1,
        column: 0,
    };
    let mut values = 0;
    loop {
        let first = reader
            .peek_non_space()
            .map_err(|source| WorkspaceError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        let Some(first) = first else { break };
        values += 1;
        let (start_line, start_column) = (reader.line, reader.column);
        let located = |e: serde_json::Error| {
            // serde_json counts from where this value started.
            let line = start_line + e.line().saturating_sub(1);
            let column = if e.line() <= 1 {
                start_column + e.column()
            } else {
                e.column()
            };
            shape_err(
                path,
                format!("invalid JSON at line {line}, column {column}: {e}"),
            )
        };
        let mut de = serde_json::Deserializer::from_reader(&mut reader);
        if first == b'[' {
            let mut index = 0usize;
            let mut failure: Option<WorkspaceError> = None;
            let visitor = RecordsVisitor {
                path,
                sink: &mut *sink,
                index: &mut index,
                failure: &mut failure,
            };
            let parsed = serde::Deserializer::deserialize_seq(&mut de, visitor);
            if let Some(f) = failure {
                return Err(f);
            }
            parsed.map_err(located)?;
        } else {
            let v: Value = serde::Deserialize::deserialize(&mut de).map_err(located)?;
            record(path, v, sink)?;
        }
    }
    if values == 0 {
        return Err(shape_err(path, "the file is empty"));
    }
    Ok(())
}

/// Hands each element of a top-level array to `record` as soon as it is parsed.
struct RecordsVisitor<'p, 's, 'o> {
    path: &'p Path,
    sink: &'s mut Sink<'o>,
    index: &'s mut usize,
    /// Our own error (a record of the wrong shape), kept apart from JSON syntax errors.
    failure: &'s mut Option<WorkspaceError>,
}

impl<'de> serde::de::Visitor<'de> for RecordsVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of records")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element::<Value>()? {
            *self.index += 1;
            if let Err(e) = record(self.path, v, self.sink) {
                *self.failure = Some(match e {
                    WorkspaceError::Import { path, reason } => WorkspaceError::Import {
                        path,
                        reason: format!("record {}: {reason}", self.index),
                    },
                    other => other,
                });
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

fn record(path: &Path, v: Value, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
    let Value::Object(o) = &v else {
        return Err(shape_err(
            path,
            format!(
                "expected an object or an array of objects, found {}",
                kind_of(&v)
            ),
        ));
    };
    // github-metadata-backup wrappers.
    if let Some(t) = o.get("type").and_then(Value::as_str) {
        if t == "issue" || t == "pull" {
            return backup_record(path, o, sink);
        }
    }
    // The search API.
    if let Some(Value::Array(items)) = o.get("items") {
        for item in items {
            record(path, item.clone(), sink)?;
        }
        return Ok(());
    }
    if o.contains_key("number") && o.contains_key("title") {
        if o.contains_key("createdAt")
            || o.get("author").is_some_and(Value::is_object) && !o.contains_key("user")
        {
            gh_cli_item(path, o, sink)?;
        } else {
            sink.item(rest_item(path, o)?)?;
        }
        return Ok(());
    }
    if o.contains_key("pull_request_url") && o.contains_key("diff_hunk") {
        sink.comment(review_comment(path, o, None)?)?;
        return Ok(());
    }
    if o.contains_key("pull_request_url") && o.contains_key("state") {
        let number = number_from_url(o.get("pull_request_url")).ok_or_else(|| {
            shape_err(
                path,
                "review without a pull request number in pull_request_url",
            )
        })?;
        sink.comment(review(path, o, number)?)?;
        return Ok(());
    }
    if o.contains_key("issue_url") && o.contains_key("body") {
        let number = number_from_url(o.get("issue_url"))
            .ok_or_else(|| shape_err(path, "comment without an issue number in issue_url"))?;
        sink.comment(issue_comment(path, o, number)?)?;
        return Ok(());
    }
    sink.stats.ignored += 1;
    Ok(())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

type Obj = serde_json::Map<String, Value>;

fn str_field(o: &Obj, key: &str) -> Option<String> {
    o.get(key).and_then(Value::as_str).map(str::to_string)
}

fn login(v: Option<&Value>) -> Option<String> {
    v.and_then(|u| u.get("login"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// RFC 3339 time to seconds since the epoch.
fn time_field(o: &Obj, key: &str) -> Option<i64> {
    o.get(key)
        .and_then(Value::as_str)
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.timestamp())
}

fn number_field(path: &Path, o: &Obj) -> Result<i64, WorkspaceError> {
    o.get("number")
        .and_then(Value::as_i64)
        .filter(|n| *n > 0)
        .ok_or_else(|| shape_err(path, "\"number\" must be a positive integer"))
}

/// The number at the end of an API URL (`.../issues/12`, `.../pulls/12`).
fn number_from_url(v: Option<&Value>) -> Option<i64> {
    v?.as_str()?.rsplit('/').next()?.parse().ok()
}

fn external_id(o: &Obj) -> Option<String> {
    match o.get("id") {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        _ => o.get("node_id").and_then(Value::as_str).map(str::to_string),
    }
}

fn labels_field(o: &Obj) -> Option<Vec<String>> {
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

/// A REST issue (or pull request) object.
fn rest_item(path: &Path, o: &Obj) -> Result<Item, WorkspaceError> {
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
    })
}

fn issue_comment(path: &Path, o: &Obj, number: i64) -> Result<Comment, WorkspaceError> {
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

fn review(path: &Path, o: &Obj, number: i64) -> Result<Comment, WorkspaceError> {
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

fn review_comment(path: &Path, o: &Obj, number: Option<i64>) -> Result<Comment, WorkspaceError> {
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

/// `gh issue list --json` / `gh pr list --json` objects.
fn gh_cli_item(path: &Path, o: &Obj, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
    let number = number_field(path, o)?;
    let url = str_field(o, "url");
    let is_pr = url.as_deref().is_some_and(|u| u.contains("/pull/"))
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

/// `{"type": "issue", "issue": {...}, "events": [...]}` or
/// `{"type": "pull", "pull": {...}, "events": [...], "comments": [...]}`.
fn backup_record(path: &Path, o: &Obj, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

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

    #[test]
    fn garbled_json_names_the_file_and_position() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "bad.json", "[{\"number\": 1,\n \"title\": }]");
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("bad.json") && e.contains("line 2"), "{e}");
        let p = write(dir.path(), "shape.json", "[1, 2]");
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("record 1") && e.contains("a number"), "{e}");
        let p = write(dir.path(), "nothing.json", "[{\"hello\": \"world\"}]");
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("no issues"), "{e}");
        let p = write(
            dir.path(),
            "neg.json",
            "[{\"number\": -1, \"title\": \"x\"}]",
        );
        assert!(read(&p)
            .unwrap_err()
            .to_string()
            .contains("positive integer"));
    }

    #[test]
    fn a_pull_record_completes_the_issue_record() {
        let mut a = Item {
            number: 3,
            is_pr: true,
            state: Some("closed".into()),
            title: Some("t".into()),
            ..Default::default()
        };
        a.merge(Item {
            number: 3,
            is_pr: true,
            merged_at: Some(5),
            base_ref: Some("main".into()),
            ..Default::default()
        });
        assert_eq!(a.state.as_deref(), Some("merged"));
        assert_eq!(a.base_ref.as_deref(), Some("main"));
        assert_eq!(a.title.as_deref(), Some("t"));
    }
}
