//! One export file as a stream of records: JSON values one after another, arrays read element
//! by element, each object recognised as one of the known shapes, and errors located by line
//! and column.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::backup::backup_record;
use super::cut::{CutLongStrings, MAX_RECORD_BYTES};
use super::fields::number_from_url;
use super::gh_cli::gh_cli_item;
use super::rest::{issue_comment, rest_item, review, review_comment};
use super::{shape_err, Sink, MAX_BODY_CHARS};
use crate::workspace::WorkspaceError;

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
pub(super) fn read_file(path: &Path, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
    let file = crate::safe_open::open_regular(path, crate::safe_open::Links::Follow).map_err(
        |source| WorkspaceError::Io {
            path: path.to_path_buf(),
            source,
        },
    )?;
    read_from(path, std::io::BufReader::with_capacity(1 << 16, file), sink)
}

/// Parses what `inner` reads as one export file named `path` (see `read_file`).
pub(super) fn read_from<R: std::io::BufRead>(
    path: &Path,
    inner: R,
    sink: &mut Sink<'_>,
) -> Result<(), WorkspaceError> {
    sink.stats.files += 1;
    let mut reader = LineCounter {
        inner,
        line: 1,
        column: 0,
    };
    // A UTF-8 byte-order mark, as Windows tools write one, is not JSON but says nothing
    // either: skipped, not refused at column 1 (issue 17).
    let (bom, utf16) = std::io::BufRead::fill_buf(&mut reader.inner)
        .map(|buf| {
            (
                buf.starts_with(b"\xEF\xBB\xBF"),
                buf.starts_with(b"\xFF\xFE") || buf.starts_with(b"\xFE\xFF"),
            )
        })
        .map_err(|source| WorkspaceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bom {
        std::io::BufRead::consume(&mut reader.inner, 3);
    }
    // Windows PowerShell 5 writes `gh api … > x.json` as UTF-16: said as such, where it was
    // "invalid JSON at line 1, column 1" (found in review).
    if utf16 {
        return Err(shape_err(
            path,
            "the file is UTF-16 text (as Windows PowerShell 5 writes it); save it as UTF-8 \
             (gh api … | Out-File -Encoding utf8 x.json) and import that",
        ));
    }
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
        let mut cutter = CutLongStrings::new(&mut reader, MAX_BODY_CHARS + 1);
        let mut de = serde_json::Deserializer::from_reader(&mut cutter);
        let left = std::cell::Cell::new(MAX_RECORD_VALUES);
        let over = std::cell::Cell::new(false);
        if first == b'[' {
            let mut index = 0usize;
            let mut failure: Option<WorkspaceError> = None;
            let visitor = RecordsVisitor {
                path,
                sink: &mut *sink,
                index: &mut index,
                failure: &mut failure,
                line: start_line,
                left: &left,
                over: &over,
            };
            let parsed = serde::Deserializer::deserialize_seq(&mut de, visitor);
            if let Some(f) = failure {
                return Err(f);
            }
            if let Err(e) = parsed {
                if over.get() {
                    return Err(too_many_values(path, index + 1));
                }
                return Err(too_large(path, index + 1, cutter.over).unwrap_or_else(|| located(e)));
            }
        } else {
            let seed = BoundedValue {
                left: &left,
                over: &over,
            };
            let v: Result<Value, _> = serde::de::DeserializeSeed::deserialize(seed, &mut de);
            if v.is_err() && over.get() {
                return Err(too_many_values(path, 1));
            }
            match v {
                Ok(v) => record(path, v, sink).map_err(|e| match e {
                    WorkspaceError::Import { path, reason } => WorkspaceError::Import {
                        path,
                        reason: format!("the value starting at line {start_line}: {reason}"),
                    },
                    other => other,
                })?,
                Err(e) => return Err(too_large(path, 1, cutter.over).unwrap_or_else(|| located(e))),
            }
        }
    }
    if values == 0 {
        return Err(shape_err(path, "the file is empty"));
    }
    Ok(())
}

/// The error for a record the reader refused for its size, if that is what stopped the parse.
fn too_large(path: &Path, record: usize, over: bool) -> Option<WorkspaceError> {
    over.then(|| {
        shape_err(
            path,
            format!(
                "record {record} is larger than {} MiB once its long texts are cut: Burrow reads \
                 records up to that size (a pull request with all its reviews is kilobytes)",
                MAX_RECORD_BYTES >> 20
            ),
        )
    })
}

/// The most JSON values one record may hold. Bytes alone did not bound memory: a record of
/// 60 MB holding thirty million small numbers (`"reactions": [0,0,…]`) took about 2 GiB as
/// parsed values. A pull request with all its reviews holds thousands.
pub(super) const MAX_RECORD_VALUES: usize = 2_000_000;

/// A JSON value, parsed counting its values against what is `left` for the record; past it,
/// the parse stops and `over` says why.
struct BoundedValue<'a> {
    left: &'a std::cell::Cell<usize>,
    over: &'a std::cell::Cell<bool>,
}

impl BoundedValue<'_> {
    fn take<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(n) => {
                self.left.set(n);
                Ok(())
            }
            None => {
                self.over.set(true);
                Err(E::custom("too many values"))
            }
        }
    }

    fn again(&self) -> Self {
        BoundedValue {
            left: self.left,
            over: self.over,
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for BoundedValue<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for BoundedValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self.again())? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut o = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            self.take()?;
            let v = map.next_value_seed(self.again())?;
            o.insert(k, v);
        }
        Ok(Value::Object(o))
    }
}

fn too_many_values(path: &Path, record: usize) -> WorkspaceError {
    shape_err(
        path,
        format!(
            "record {record} holds more than {MAX_RECORD_VALUES} JSON values: Burrow reads records \
             up to that many (a pull request with all its reviews holds thousands)"
        ),
    )
}

/// Hands each element of a top-level array to `record` as soon as it is parsed.
struct RecordsVisitor<'p, 's, 'o> {
    path: &'p Path,
    sink: &'s mut Sink<'o>,
    index: &'s mut usize,
    /// Our own error (a record of the wrong shape), kept apart from JSON syntax errors.
    failure: &'s mut Option<WorkspaceError>,
    /// The line the array starts on: pages printed one after another each count their
    /// records from 1, so "record 2" alone pointed at a good record of the first page.
    line: usize,
    /// The values the record being parsed may still hold, and whether it held more.
    left: &'s std::cell::Cell<usize>,
    over: &'s std::cell::Cell<bool>,
}

impl<'de> serde::de::Visitor<'de> for RecordsVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of records")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.left.set(MAX_RECORD_VALUES);
            let seed = BoundedValue {
                left: self.left,
                over: self.over,
            };
            let Some(v) = seq.next_element_seed(seed)? else {
                break;
            };
            *self.index += 1;
            if let Err(e) = record(self.path, v, self.sink) {
                *self.failure = Some(match e {
                    WorkspaceError::Import { path, reason } => WorkspaceError::Import {
                        path,
                        reason: format!(
                            "record {} of the array starting at line {}: {reason}",
                            self.index, self.line
                        ),
                    },
                    other => other,
                });
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// A record, or an array of them one level down: `gh api --paginate --slurp` prints the pages
/// as one array of arrays, which was refused whole.
fn record(path: &Path, v: Value, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .try_for_each(|item| record_one(path, item, sink)),
        other => record_one(path, other, sink),
    }
}

/// GitHub CLI's camelCase fields, which REST records do not have: a record with one of them
/// and no REST `user` is `gh`'s (`gh pr list --json number,title,state,headRefName` has
/// neither `createdAt` nor `author`, and was read as a REST issue).
const GH_CLI_KEYS: [&str; 10] = [
    "createdAt",
    "updatedAt",
    "closedAt",
    "mergedAt",
    "headRefName",
    "baseRefName",
    "isDraft",
    "mergeCommit",
    "author",
    "reviewDecision",
];

fn record_one(path: &Path, v: Value, sink: &mut Sink<'_>) -> Result<(), WorkspaceError> {
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
            record_one(path, item.clone(), sink)?;
        }
        return Ok(());
    }
    if o.contains_key("number") && o.contains_key("title") {
        if o.contains_key("createdAt")
            || !o.contains_key("user")
                && (GH_CLI_KEYS.iter().any(|k| o.contains_key(*k))
                    // REST writes states in lower case, `gh` in upper.
                    || matches!(
                        o.get("state").and_then(Value::as_str),
                        Some("OPEN" | "CLOSED" | "MERGED")
                    ))
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

#[cfg(test)]
mod tests {
    use crate::workspace::import::read;
    use crate::workspace::import::tests::write;

    /// Issue 17: an export starting with a UTF-8 byte-order mark (common from Windows tools)
    /// was refused at column 1.
    #[test]
    fn a_byte_order_mark_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "bom.json",
            "\u{feff}[{\"number\": 3, \"title\": \"Crash\", \"state\": \"open\"}]",
        );
        let batch = read(&p).unwrap();
        assert_eq!(batch.items.len(), 1);
        assert_eq!(batch.items[&3].title.as_deref(), Some("Crash"));
        // Only at the start: one further in is still not JSON, and says where.
        let p = write(dir.path(), "late.json", "[]\n\u{feff}[]");
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
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

    /// `gh pr list --json` with neither `createdAt` nor `author` is still `gh`'s: its pull
    /// requests came in as issues, without their branch or merge time, and with an empty body
    /// over one imported before (found in review).
    #[test]
    fn gh_pr_list_without_created_at_or_author_is_a_pull_request() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "prs.json",
            r#"[{"number": 5, "title": "Add x", "state": "MERGED", "url": "https://github.com/o/r/pull/5", "headRefName": "x", "mergedAt": "2024-03-02T00:00:00Z"},
                {"number": 6, "title": "Fix y", "state": "MERGED"}]"#,
        );
        let b = read(&p).unwrap();
        let i = &b.items[&5];
        assert!(i.is_pr, "{i:?}");
        assert_eq!(i.head_ref.as_deref(), Some("x"), "{i:?}");
        assert_eq!(i.merged_at, Some(1709337600), "{i:?}");
        assert_eq!(i.body, None);
        assert!(b.items[&6].is_pr, "{:?}", b.items[&6]);
    }

    /// A deleted account, which `gh` prints as `app/` (an item's author) or `""` (a comment's),
    /// is GitHub's "ghost"; an app's `app/NAME` is `NAME[bot]` as REST writes it (found in
    /// review).
    #[test]
    fn gh_deleted_authors_are_ghost() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "issues.json",
            r#"[{"number": 3, "title": "Crash", "state": "OPEN", "createdAt": "2024-03-01T00:00:00Z", "author": {"is_bot": true, "login": "app/"},
                 "comments": [{"id": "IC_1", "author": {"login": ""}, "body": "me too", "createdAt": "2024-03-01T01:00:00Z"},
                              {"id": "IC_2", "author": {"login": "app/dependabot"}, "body": "bump", "createdAt": "2024-03-01T02:00:00Z"}]}]"#,
        );
        let b = read(&p).unwrap();
        assert_eq!(b.items[&3].author, None, "stored as ghost");
        let authors: Vec<&str> = b.comments.iter().map(|c| c.author.as_str()).collect();
        assert_eq!(authors, ["ghost", "dependabot[bot]"]);
    }

    /// `gh api --paginate --slurp` prints the pages as one array of arrays: imported, where it
    /// was refused whole (found in review).
    #[test]
    fn gh_api_paginate_slurp_imports() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "slurp.json",
            r#"[[{"number": 1, "title": "a", "state": "open", "user": {"login": "x"}}], [{"number": 2, "title": "b", "state": "open", "user": {"login": "y"}}]]"#,
        );
        assert_eq!(read(&p).unwrap().items.len(), 2);
    }

    /// A bad record in a later page, or in a later search result, is located by the line its
    /// page starts on: each page counts its records from 1, and a search result's error had no
    /// place at all (found in review).
    #[test]
    fn a_bad_record_in_a_later_page_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "pages.json",
            "[{\"number\": 1, \"title\": \"a\"}, {\"number\": 2, \"title\": \"b\"}]\n[{\"number\": 3, \"title\": \"c\"}, {\"number\": 0, \"title\": \"d\"}]",
        );
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains("record 2 of the array starting at line 2"),
            "{e}"
        );
        let p = write(
            dir.path(),
            "search.json",
            "{\"total_count\": 2, \"items\": [{\"number\": 1, \"title\": \"a\"}]}\n{\"total_count\": 2, \"items\": [{\"number\": 0, \"title\": \"d\"}]}",
        );
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("starting at line 2"), "{e}");
    }

    /// An export written as UTF-16 (Windows PowerShell 5's `>`) is refused naming the
    /// encoding and what to do, where it was "invalid JSON at line 1, column 1" (found in
    /// review).
    #[test]
    fn a_utf16_export_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("issues.json");
        let mut bytes = vec![0xFF, 0xFE];
        for u in "[{\"number\": 1, \"title\": \"a\"}]".encode_utf16() {
            bytes.extend(u.to_le_bytes());
        }
        std::fs::write(&p, bytes).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains("UTF-16") && e.contains("UTF-8") && e.contains("issues.json"),
            "{e}"
        );
    }

    /// A record is bounded by the JSON values it holds as well as by its bytes: sixty million
    /// bytes of small numbers in one record took about 2 GiB as parsed values (found in
    /// review). Past the bound the import stops, naming the record; below it, it reads.
    #[test]
    fn a_record_of_too_many_values_is_refused_not_parsed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let many = |n: usize| {
            let zeros = "0,".repeat(n);
            format!("[{{\"number\": 1, \"title\": \"t\", \"reactions\": [{zeros}0]}}]")
        };
        let p = write(dir.path(), "big.json", &many(super::MAX_RECORD_VALUES + 1));
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains("record 1") && e.contains(&super::MAX_RECORD_VALUES.to_string()),
            "{e}"
        );
        let p = write(dir.path(), "fine.json", &many(1_000));
        assert_eq!(read(&p).unwrap().items.len(), 1);
        // A search result, one object holding its items, is bounded as a whole.
        let p = write(
            dir.path(),
            "search.json",
            &format!(
                "{{\"items\": [{{\"number\": 1, \"title\": \"t\", \"r\": [{}0]}}]}}",
                "0,".repeat(super::MAX_RECORD_VALUES)
            ),
        );
        assert!(read(&p).unwrap_err().to_string().contains("JSON values"));
    }
}
