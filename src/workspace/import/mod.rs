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
//!
//! This module owns the records an export yields and the walk over an export's files. The
//! parts: `stream` parses a file's JSON values one record at a time and tells the shapes apart,
//! `rest`, `gh_cli` and `backup` read each format's objects, and `fields` the JSON fields they
//! share.

mod backup;
mod cut;
mod fields;
mod gh_cli;
mod rest;
mod stream;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::WorkspaceError;
use stream::read_file;

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
    /// A merged pull request's merge commit.
    pub merge_commit: Option<String>,
    /// The commit whose push closed the issue (its timeline's last "closed" event), when one
    /// did: a pull request's merge commit says which pull request fixed it.
    pub closed_by: Option<String>,
    /// Who merged a pull request (a login).
    pub merged_by: Option<String>,
    /// Why an issue was closed, as the forge says it: completed, not_planned, duplicate.
    pub state_reason: Option<String>,
    /// The kinds of comment this record lists in full (a backup record: the item with its
    /// whole timeline), so that those it no longer lists were deleted; empty for the records
    /// of a page, which hold some of an item's comments or none.
    pub whole: Vec<&'static str>,
}

impl Item {
    /// Fills what `other` knows and this does not (a `/pulls` record adds refs and merge time to
    /// the issue-shaped record of the same pull request).
    pub fn merge(&mut self, other: Item) {
        self.is_pr |= other.is_pr;
        // When it was closed, merged, and by which commit, a whole record says even when the
        // answer is none (reopened since, closed by hand); and an open item is neither closed
        // nor merged. Kept from before, the old closing commit still linked the issue to the
        // pull request that no longer fixed it.
        if !other.whole.is_empty() || other.state.as_deref() == Some("open") {
            self.closed_at = None;
            self.merged_at = None;
            self.closed_by = None;
            self.merged_by = None;
            self.state_reason = None;
        }
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f; } )* };
        }
        take!(
            title,
            body,
            author,
            labels,
            created_at,
            updated_at,
            closed_at,
            merged_at,
            url,
            base_ref,
            head_ref,
            draft,
            merge_commit,
            closed_by,
            merged_by,
            state_reason
        );
        for k in other.whole {
            if !self.whole.contains(&k) {
                self.whole.push(k);
            }
        }
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
    /// Records whose text was cut to `MAX_BODY_CHARS` (or a title to `MAX_TITLE_CHARS`).
    pub capped: usize,
}

/// The longest body (issue, pull request, comment, review, diff hunk) kept: GitHub's own limit,
/// so only exports from elsewhere pass it. A 200 MB body imported at 1 GB peak memory, and
/// every search it matched then took 3 s (issue 17).
pub const MAX_BODY_CHARS: usize = 65_536;

/// The longest title kept (GitHub's is 256).
pub const MAX_TITLE_CHARS: usize = 1_024;

/// Cuts `text` to its first `max` characters, saying so at its end. Whether it was cut.
fn cap(text: &mut String, max: usize) -> bool {
    // Past `MAX_BODY_CHARS`, the reader already cut the text and said how long it was.
    let read_total = cut::cut_length(text).map(|(at, total)| {
        text.truncate(at);
        total
    });
    let Some((at, _)) = text.char_indices().nth(max) else {
        return false;
    };
    let total = read_total.unwrap_or_else(|| text.chars().count());
    text.truncate(at);
    text.push_str("\n\n");
    text.push_str(&crate::notes::cut_on_import(max, total));
    true
}

/// Where parsed records go, one at a time (so an export of any size is read in bounded memory).
struct Sink<'a> {
    on: &'a mut dyn FnMut(Record) -> Result<(), WorkspaceError>,
    stats: ReadStats,
}

impl Sink<'_> {
    fn item(&mut self, mut item: Item) -> Result<(), WorkspaceError> {
        self.stats.records += 1;
        let body = item.body.as_mut().is_some_and(|b| cap(b, MAX_BODY_CHARS));
        let title = item.title.as_mut().is_some_and(|t| cap(t, MAX_TITLE_CHARS));
        if body || title {
            self.stats.capped += 1;
        }
        (self.on)(Record::Item(item))
    }

    fn comment(&mut self, mut c: Comment) -> Result<(), WorkspaceError> {
        self.stats.records += 1;
        let body = cap(&mut c.body, MAX_BODY_CHARS);
        let hunk = c.diff_hunk.as_mut().is_some_and(|h| cap(h, MAX_BODY_CHARS));
        if body || hunk {
            self.stats.capped += 1;
        }
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

/// Reads one export file's bytes (what `read` does with a file; for fuzzing).
pub fn read_bytes(name: &Path, data: &[u8]) -> Result<ReadStats, WorkspaceError> {
    let mut on = |_: Record| Ok(());
    let mut sink = Sink {
        on: &mut on,
        stats: ReadStats::default(),
    };
    stream::read_from(name, data, &mut sink)?;
    Ok(sink.stats)
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

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
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
