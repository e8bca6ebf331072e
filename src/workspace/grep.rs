//! Exact substring and regular-expression search over the indexed files of a repository, for
//! identifiers and error strings that ranked search would blur. Reads the files as they are on
//! disk (as `rg` does), only those the index knows, in parallel.

use std::collections::HashMap;
use std::path::PathBuf;

use rusqlite::params;
use serde::Serialize;

use super::index::MAX_FILE_BYTES;
use super::queries::read_confined_in;
use super::{db_err, Workspace, WorkspaceError};

#[derive(Debug, Clone, PartialEq)]
pub struct GrepQuery {
    pub pattern: String,
    /// A regular expression (Rust syntax) instead of a literal string.
    pub regex: bool,
    pub case_sensitive: bool,
    pub repo: Option<String>,
    /// A glob over paths (`src/**/*.rs`, or `*.toml` anywhere).
    pub path: Option<String>,
    pub limit: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrepHit {
    pub repo: String,
    pub path: String,
    pub line: u64,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrepResult {
    pub hits: Vec<GrepHit>,
    /// More matches exist than were returned.
    pub truncated: bool,
    pub files_searched: usize,
    /// Indexed files that could not be read now (grown past the size the index takes,
    /// swapped for a link or removed since indexing): not searched, and said so.
    pub files_unread: usize,
}

/// Longest line text returned; the rest is elided.
const MAX_LINE_CHARS: usize = 240;

enum Matcher {
    Literal(Box<memchr::memmem::Finder<'static>>),
    Regex(regex::bytes::Regex),
}

impl Matcher {
    /// Where in `line` the first match starts.
    fn find(&self, line: &[u8]) -> Option<usize> {
        match self {
            Matcher::Literal(f) => f.find(line),
            Matcher::Regex(r) => r.find(line).map(|m| m.start()),
        }
    }
}

impl Workspace {
    pub fn grep(&self, q: &GrepQuery) -> Result<GrepResult, WorkspaceError> {
        if q.pattern.is_empty() {
            return Err(WorkspaceError::BadQuery("the pattern is empty".into()));
        }
        let matcher = if q.regex || !q.case_sensitive {
            let pattern = if q.regex {
                q.pattern.clone()
            } else {
                regex::escape(&q.pattern)
            };
            let re = regex::bytes::RegexBuilder::new(&pattern)
                .case_insensitive(!q.case_sensitive)
                .size_limit(1 << 22)
                .build()
                .map_err(|e| {
                    WorkspaceError::BadQuery(format!("invalid regular expression: {e}"))
                })?;
            Matcher::Regex(re)
        } else {
            Matcher::Literal(Box::new(
                memchr::memmem::Finder::new(q.pattern.as_bytes()).into_owned(),
            ))
        };
        let files = self.grep_candidates(q)?;
        let limit = q.limit.clamp(1, 1000);
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .min(8);
        let chunk = files.len().div_ceil(workers.max(1)).max(1);
        let matcher = &matcher;
        // Each worker searches a contiguous slice, so concatenating the results keeps the
        // files in path order.
        let mut per_worker: Vec<(Vec<GrepHit>, bool, usize)> = std::thread::scope(|s| {
            let handles: Vec<_> = files
                .chunks(chunk)
                .map(|slice| {
                    s.spawn(move || {
                        let mut hits = Vec::new();
                        let mut unread = 0;
                        for (repo, root, rel) in slice {
                            // Checked now, not when indexed: a file swapped for a symlink out of
                            // the repository or for a FIFO is skipped (issue 17), and counted.
                            let Ok(bytes) = read_confined_in(root, rel, MAX_FILE_BYTES) else {
                                unread += 1;
                                continue;
                            };
                            // A final line end ends the last line; it does not start another
                            // (`^$` found a line 4 in a file of 3).
                            let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
                            for (i, line) in body.split(|&b| b == b'\n').enumerate() {
                                // Matched without a CRLF's CR, as shown: `;$` found nothing in
                                // a file with Windows line ends.
                                let line = line.strip_suffix(b"\r").unwrap_or(line);
                                if let Some(at) = matcher.find(line) {
                                    let text = String::from_utf8_lossy(line);
                                    let at = String::from_utf8_lossy(&line[..at]).chars().count();
                                    hits.push(GrepHit {
                                        repo: repo.clone(),
                                        path: rel.clone(),
                                        line: i as u64 + 1,
                                        text: elide(&text, at),
                                    });
                                    if hits.len() > limit {
                                        return (hits, true, unread);
                                    }
                                }
                            }
                        }
                        (hits, false, unread)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let mut hits = Vec::new();
        let mut truncated = false;
        let mut files_unread = 0;
        for (h, t, u) in per_worker.drain(..) {
            truncated |= t;
            files_unread += u;
            hits.extend(h);
        }
        if hits.len() > limit {
            hits.truncate(limit);
            truncated = true;
        }
        Ok(GrepResult {
            hits,
            truncated,
            files_searched: files.len() - files_unread,
            files_unread,
        })
    }

    /// (repo name, the repository's real root, relative path) of the indexed files the query
    /// covers.
    fn grep_candidates(
        &self,
        q: &GrepQuery,
    ) -> Result<Vec<(String, PathBuf, String)>, WorkspaceError> {
        let repo_id = match &q.repo {
            Some(r) => Some(self.repo(r)?.id),
            None => None,
        };
        let globs = q.path.as_deref().map(path_globs);
        let (glob, glob2) = match globs {
            Some([a, b]) => (Some(a), Some(b)),
            None => (None, None),
        };
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT repos.name, repos.root, files.path FROM files JOIN repos ON repos.id = files.repo_id
                 WHERE repos.root IS NOT NULL AND (?1 IS NULL OR repos.id = ?1)
                   AND (?2 IS NULL OR files.path GLOB ?2 OR files.path GLOB ?3)
                 ORDER BY repos.name, files.path",
            )
            .map_err(db_err("listing files to search"))?;
        let rows = stmt
            .query_map(params![repo_id, glob, glob2], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(db_err("listing files to search"))?;
        let rows: Vec<(String, String, String)> = rows
            .collect::<Result<_, _>>()
            .map_err(db_err("listing files to search"))?;
        // A repository whose folder is gone has nothing to search.
        let mut roots: HashMap<String, Option<PathBuf>> = HashMap::new();
        let mut out = Vec::with_capacity(rows.len());
        for (name, root, rel) in rows {
            let real = roots
                .entry(root)
                .or_insert_with_key(|root| std::fs::canonicalize(root).ok());
            if let Some(real) = real {
                out.push((name, real.clone(), rel));
            }
        }
        Ok(out)
    }
}

/// The two SQLite GLOB patterns a path glob as people write it means (SQLite's `*` also
/// matches `/`): a glob with no slash is a file name anywhere in the tree (`lib.rs`, and
/// `*/lib.rs`; as `*lib.rs` it matched `zlib.rs` too), and `**/` may match no folder at all
/// (`src/**/*.rs` takes `src/main.rs`, which SQLite's reading, needing a second slash, left
/// out).
pub(crate) fn path_globs(glob: &str) -> [String; 2] {
    if glob.contains('/') {
        [glob.to_string(), glob.replace("**/", "")]
    } else {
        [glob.to_string(), format!("*/{glob}")]
    }
}

/// A line cut to `MAX_LINE_CHARS` around its match (which starts at character `at`): the
/// start of a long line, kept whatever matched, left out the match itself in minified files.
fn elide(text: &str, at: usize) -> String {
    let len = text.chars().count();
    if len <= MAX_LINE_CHARS {
        return text.to_string();
    }
    let start = at
        .saturating_sub(MAX_LINE_CHARS / 4)
        .min(len - MAX_LINE_CHARS);
    let cut: String = text.chars().skip(start).take(MAX_LINE_CHARS).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if start + MAX_LINE_CHARS < len {
        "…"
    } else {
        ""
    };
    format!("{before}{cut}{after}")
}
