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
    let bom = std::io::BufRead::fill_buf(&mut reader.inner)
        .map(|buf| buf.starts_with(b"\xEF\xBB\xBF"))
        .map_err(|source| WorkspaceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bom {
        std::io::BufRead::consume(&mut reader.inner, 3);
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
            if let Err(e) = parsed {
                return Err(too_large(path, index + 1, cutter.over).unwrap_or_else(|| located(e)));
            }
        } else {
            let v: Result<Value, _> = serde::Deserialize::deserialize(&mut de);
            match v {
                Ok(v) => record(path, v, sink)?,
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
}
