//! Reading indexed files: a slice of a file's lines, and the entries of a directory.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{read_confined, safe_relative};
use crate::workspace::{db_err, Repo, Workspace, WorkspaceError};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileSlice {
    pub repo: String,
    pub path: String,
    pub language: Option<String>,
    pub total_lines: usize,
    pub start_line: usize,
    pub end_line: usize,
    /// The lines, without numbers.
    pub lines: Vec<String>,
    /// The slice was cut to the size limit; `end_line` is where it stops.
    pub truncated: bool,
}

/// A commit a file was read at, and the name it was asked for by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Revision {
    pub name: String,
    pub hash: String,
    /// Commit time, seconds since the Unix epoch.
    pub time: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
    /// Files below a directory, or the lines of a file.
    pub size: i64,
}

impl Workspace {
    /// How many indexed files, in every repository, `end` is the path or the end of the path
    /// of (after a `/`).
    pub fn files_ending(&self, end: &str) -> Result<usize, WorkspaceError> {
        let suffix = format!("/{end}");
        self.conn()
            .query_row(
                "SELECT count(*) FROM files WHERE path = ?1
                     OR (length(path) > length(?2) AND substr(path, -length(?2)) = ?2)",
                params![end, suffix],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
            .map_err(db_err("counting files by the end of their path"))
    }

    /// Lines `start..=end` (1-based) of an indexed file, at most `max_lines` and `max_bytes`.
    pub fn read_file(
        &self,
        repo: Option<&str>,
        path: &str,
        start: Option<usize>,
        end: Option<usize>,
        max_lines: usize,
        max_bytes: usize,
    ) -> Result<FileSlice, WorkspaceError> {
        let rel = safe_relative(path)?;
        let repo = self.resolve_repo_holding(
            repo,
            "SELECT 1 FROM files WHERE repo_id = ?1 AND path = ?2",
            &rel,
        )?;
        let root = repo.root.clone().ok_or_else(|| {
            WorkspaceError::Refused(format!(
                "{} has no local files (it holds imported issues only)",
                repo.name
            ))
        })?;
        let conn = self.conn();
        let language: Option<Option<String>> = conn
            .query_row(
                "SELECT language FROM files WHERE repo_id = ?1 AND path = ?2",
                params![repo.id, rel],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err("finding a file"))?;
        let Some(language) = language else {
            let skipped: Option<String> = conn
                .query_row(
                    "SELECT reason FROM skipped_files WHERE repo_id = ?1 AND path = ?2",
                    params![repo.id, rel],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db_err("finding a file"))?;
            return Err(match skipped {
                Some(reason) => WorkspaceError::Refused(format!("{rel} is not indexed ({reason})")),
                None => WorkspaceError::NotFound(format!("{rel} in {}", repo.name)),
            });
        };
        drop(conn);
        let bytes = read_confined(&root, &rel, crate::workspace::index::MAX_FILE_BYTES)?;
        let text = String::from_utf8_lossy(&bytes);
        let mut slice = slice_lines(&text, &rel, start, end, max_lines, max_bytes)?;
        slice.repo = repo.name;
        slice.language = language;
        Ok(slice)
    }

    /// Lines of a file as it was at `at`: a tag, a branch or an indexed commit (by hash or
    /// unique prefix) of the repository, read from git. Only commits the index holds are read,
    /// as the other tools see them; the file need not exist now.
    #[allow(clippy::too_many_arguments)]
    pub fn read_file_at(
        &self,
        repo: Option<&str>,
        path: &str,
        at: &str,
        start: Option<usize>,
        end: Option<usize>,
        max_lines: usize,
        max_bytes: usize,
    ) -> Result<(FileSlice, Revision), WorkspaceError> {
        let rel = safe_relative(path)?;
        let at = at.trim();
        const HOLDS: &str = "SELECT 1 FROM refs WHERE repo_id = ?1 AND name = ?2
             UNION ALL SELECT 1 FROM commits
             WHERE repo_id = ?1 AND substr(hash, 1, length(?2)) = lower(?2)";
        let named = repo;
        let repo = match self.resolve_repo_holding(named, HOLDS, &at) {
            Ok(r) => r,
            // Among several repositories, none of which has it: the revision is what is wrong.
            Err(e) if named.is_none() => {
                let held: bool = self
                    .conn()
                    .query_row(
                        &format!(
                            "SELECT EXISTS (SELECT 1 FROM repos WHERE EXISTS ({}))",
                            HOLDS.replace("?1", "repos.id").replace("?2", "?1")
                        ),
                        params![at],
                        |r| r.get(0),
                    )
                    .map_err(db_err("finding a tag or commit"))?;
                if held {
                    return Err(e);
                }
                return Err(WorkspaceError::NotFound(format!(
                    "a tag, branch or indexed commit named {at} in any repository"
                )));
            }
            Err(e) => return Err(e),
        };
        let root = repo.root.clone().ok_or_else(|| {
            WorkspaceError::Refused(format!("{} has no local history", repo.name))
        })?;
        let revision = self.revision(&repo, at)?;
        let git = crate::workspace::git::GitRepo::open(&root)?.ok_or_else(|| {
            WorkspaceError::Refused(format!("{} is not a git repository", repo.name))
        })?;
        let bytes = git
            .file_at(
                &revision.hash,
                &rel,
                crate::workspace::index::MAX_FILE_BYTES,
            )?
            .ok_or_else(|| WorkspaceError::NotFound(format!("{rel} at {at} in {}", repo.name)))?;
        if bytes.contains(&0) {
            return Err(WorkspaceError::Refused(format!(
                "{rel} at {at} is a binary file"
            )));
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut slice = slice_lines(&text, &rel, start, end, max_lines, max_bytes)?;
        slice.repo = repo.name;
        Ok((slice, revision))
    }

    /// The commit `name` stands for in `repo`: a tag or branch of that name, else an indexed
    /// commit whose hash starts with it.
    pub fn revision(&self, repo: &Repo, name: &str) -> Result<Revision, WorkspaceError> {
        let conn = self.conn();
        let by_ref = conn
            .query_row(
                "SELECT c.hash, c.time FROM refs r
                 JOIN commits c ON c.repo_id = r.repo_id AND c.hash = r.target
                 WHERE r.repo_id = ?1 AND r.name = ?2 ORDER BY r.kind = 'tag' DESC LIMIT 1",
                params![repo.id, name],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
            )
            .optional()
            .map_err(db_err("finding a tag or branch"))?;
        if let Some((hash, time)) = by_ref {
            return Ok(Revision {
                name: name.to_string(),
                hash,
                time,
            });
        }
        let prefix = name.to_lowercase();
        if prefix.len() >= 4 && prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT hash, time FROM commits
                     WHERE repo_id = ?1 AND substr(hash, 1, length(?2)) = ?2 LIMIT 2",
                )
                .map_err(db_err("finding a commit"))?;
            let found: Vec<(String, i64)> = stmt
                .query_map(params![repo.id, prefix], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_err("finding a commit"))?
                .collect::<Result<_, _>>()
                .map_err(db_err("finding a commit"))?;
            match found.as_slice() {
                [(hash, time)] => {
                    return Ok(Revision {
                        name: name.to_string(),
                        hash: hash.clone(),
                        time: *time,
                    })
                }
                [_, _] => {
                    return Err(WorkspaceError::BadQuery(format!(
                        "{name} is ambiguous in {}: give more of the hash",
                        repo.name
                    )))
                }
                _ => {}
            }
        }
        Err(WorkspaceError::NotFound(format!(
            "a tag, branch or indexed commit named {name} in {}",
            repo.name
        )))
    }

    /// The indexed entries directly inside `dir` ("" for the root).
    pub fn list_directory(
        &self,
        repo: Option<&str>,
        dir: &str,
    ) -> Result<(Repo, String, Vec<DirEntry>), WorkspaceError> {
        let repo = self.resolve_repo(repo)?;
        let rel = safe_relative(dir)?;
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT path, lines FROM files WHERE repo_id = ?1 AND substr(path, 1, length(?2)) = ?2 ORDER BY path",
            )
            .map_err(db_err("listing a directory"))?;
        let rows: Vec<(String, i64)> = stmt
            .query_map(params![repo.id, prefix], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err("listing a directory"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("listing a directory"))?;
        let mut entries: BTreeMap<(bool, String), i64> = BTreeMap::new();
        for (path, lines) in rows {
            let rest = &path[prefix.len()..];
            match rest.split_once('/') {
                // Directories first: (false, name) sorts before (true, name).
                Some((d, _)) => *entries.entry((false, d.to_string())).or_default() += 1,
                None => {
                    entries.insert((true, rest.to_string()), lines);
                }
            }
        }
        if entries.is_empty() && !rel.is_empty() {
            return Err(WorkspaceError::NotFound(format!(
                "directory {rel} in {}",
                repo.name
            )));
        }
        let list = entries
            .into_iter()
            .map(|((is_file, name), size)| DirEntry {
                name,
                is_dir: !is_file,
                size,
            })
            .collect();
        Ok((repo, rel, list))
    }
}

/// Lines `start..=end` (1-based) of `text`, at most `max_lines` and `max_bytes`; `repo` and
/// `language` are left for the caller.
fn slice_lines(
    text: &str,
    rel: &str,
    start: Option<usize>,
    end: Option<usize>,
    max_lines: usize,
    max_bytes: usize,
) -> Result<FileSlice, WorkspaceError> {
    let all: Vec<&str> = text.lines().collect();
    let total = all.len();
    let start = start.unwrap_or(1).max(1);
    if total > 0 && start > total {
        return Err(WorkspaceError::BadQuery(format!(
            "{rel} has {total} lines; start_line {start} is past the end"
        )));
    }
    let end = end.unwrap_or(total).min(total).max(start.saturating_sub(1));
    let mut lines = Vec::new();
    let mut bytes_used = 0;
    let mut truncated = false;
    for line in all.iter().take(end).skip(start - 1) {
        if lines.len() >= max_lines || bytes_used + line.len() > max_bytes {
            // A first line longer than the whole budget (minified code, data) is shown cut
            // rather than left out: left out, the slice held no line and pointed past it,
            // so that line could never be read.
            if lines.is_empty() && max_lines > 0 {
                let mut cut = max_bytes.min(line.len());
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                lines.push(format!(
                    "{}… [this line cut: {cut} of its {} bytes shown]",
                    &line[..cut],
                    line.len()
                ));
            }
            truncated = true;
            break;
        }
        bytes_used += line.len() + 1;
        lines.push((*line).to_string());
    }
    let end_line = start + lines.len() - usize::from(!lines.is_empty());
    Ok(FileSlice {
        repo: String::new(),
        path: rel.to_string(),
        language: None,
        total_lines: total,
        start_line: start,
        end_line: if lines.is_empty() { start } else { end_line },
        lines,
        truncated,
    })
}
