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
}

/// Longest line text returned; the rest is elided.
const MAX_LINE_CHARS: usize = 240;

enum Matcher {
    Literal(Box<memchr::memmem::Finder<'static>>),
    Regex(regex::bytes::Regex),
}

impl Matcher {
    fn is_match(&self, line: &[u8]) -> bool {
        match self {
            Matcher::Literal(f) => f.find(line).is_some(),
            Matcher::Regex(r) => r.is_match(line),
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
        let mut per_worker: Vec<(Vec<GrepHit>, bool)> = std::thread::scope(|s| {
            let handles: Vec<_> = files
                .chunks(chunk)
                .map(|slice| {
                    s.spawn(move || {
                        let mut hits = Vec::new();
                        for (repo, root, rel) in slice {
                            // Checked now, not when indexed: a file swapped for a symlink out of
                            // the repository or for a FIFO is skipped (issue 17).
                            let Ok(bytes) = read_confined_in(root, rel, MAX_FILE_BYTES) else {
                                continue;
                            };
                            for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
                                if matcher.is_match(line) {
                                    let text = String::from_utf8_lossy(line);
                                    let text = text.trim_end_matches('\r');
                                    hits.push(GrepHit {
                                        repo: repo.clone(),
                                        path: rel.clone(),
                                        line: i as u64 + 1,
                                        text: elide(text),
                                    });
                                    if hits.len() > limit {
                                        return (hits, true);
                                    }
                                }
                            }
                        }
                        (hits, false)
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
        for (h, t) in per_worker.drain(..) {
            truncated |= t;
            hits.extend(h);
        }
        if hits.len() > limit {
            hits.truncate(limit);
            truncated = true;
        }
        Ok(GrepResult {
            hits,
            truncated,
            files_searched: files.len(),
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
        let glob = q.path.as_ref().map(|g| {
            if g.contains('/') {
                g.clone()
            } else {
                format!("*{g}")
            }
        });
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT repos.name, repos.root, files.path FROM files JOIN repos ON repos.id = files.repo_id
                 WHERE repos.root IS NOT NULL AND (?1 IS NULL OR repos.id = ?1)
                   AND (?2 IS NULL OR files.path GLOB ?2)
                 ORDER BY repos.name, files.path",
            )
            .map_err(db_err("listing files to search"))?;
        let rows = stmt
            .query_map(params![repo_id, glob], |r| {
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

fn elide(text: &str) -> String {
    if text.chars().count() <= MAX_LINE_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
    format!("{cut}…")
}
