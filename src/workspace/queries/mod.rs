//! The structured lookups behind the agent's tools: files, directories, commits, issues,
//! pull requests and people. Every file access is confined to indexed files of indexed
//! repositories.
//!
//! This module owns which repository a lookup means and the checks every path from the model
//! passes. The parts each own one kind of lookup: `files` (file slices and directories),
//! `commits`, `releases` (the tags holding a commit), `issues` (issues and pull requests with
//! their comments) and `people`.

mod commits;
mod files;
mod issues;
mod people;
mod releases;
mod values;

use std::path::{Component, Path};

use super::{Repo, Workspace, WorkspaceError};

pub use commits::{CommitDetail, CommitFile, CommitSummary};
pub use files::{DirEntry, FileSlice, Revision};
pub(crate) use issues::linked;
pub use issues::{CommentDetail, IssueDetail, IssueFilter, IssueList, IssueSummary};
pub use people::{Changer, Member};
pub use releases::{series, Release, Tagged};
pub use values::FieldValues;

/// Checks a path given by the model: relative, no `..`, no root or drive prefix.
fn safe_relative(path: &str) -> Result<String, WorkspaceError> {
    let p = Path::new(path);
    if p.is_absolute() || path.starts_with('/') || path.starts_with('\\') {
        return Err(WorkspaceError::Refused(format!(
            "{path:?} is absolute; give a path relative to the repository root"
        )));
    }
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().to_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(WorkspaceError::Refused(format!(
                    "{path:?} leaves the repository (\"..\" is not allowed)"
                )))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(WorkspaceError::Refused(format!(
                    "{path:?} is absolute; give a path relative to the repository root"
                )))
            }
        }
    }
    Ok(parts.join("/"))
}

/// Reads an indexed file of the repository at `root` (see `read_confined_in`).
pub(crate) fn read_confined(root: &Path, rel: &str, max: u64) -> Result<Vec<u8>, WorkspaceError> {
    let root = std::fs::canonicalize(root).map_err(|source| WorkspaceError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    read_confined_in(&root, rel, max)
}

/// Reads an indexed file, checked at read time, not when it was indexed: its real path (every
/// symbolic link resolved now) must stay inside the repository (`root`, already canonical), the
/// file is opened without following a final link, and only a regular file of at most `max`
/// bytes is read. Every tool that reads the disk reads through here (`search_code` read through
/// a symlink swapped in after indexing: issue 17).
pub(crate) fn read_confined_in(
    root: &Path,
    rel: &str,
    max: u64,
) -> Result<Vec<u8>, WorkspaceError> {
    let full = root.join(rel);
    let real = std::fs::canonicalize(&full).map_err(|source| WorkspaceError::Io {
        path: full.clone(),
        source,
    })?;
    if !real.starts_with(root) {
        return Err(WorkspaceError::Refused(format!(
            "{rel} points outside the repository (a symbolic link to {})",
            real.display()
        )));
    }
    // The path as indexed, not the resolved one: opening `real` followed the final link
    // already, so a file swapped for a link to another file of the repository (an ignored
    // `.env`) was read through it.
    crate::safe_open::read_regular(&full, crate::safe_open::Links::Refuse, max)
        .map_err(|e| WorkspaceError::Refused(format!("{rel} cannot be read: {e}")))
}

impl Workspace {
    /// The repository a tool means: the one named, the only one there is, or, among several,
    /// the only one that holds what the call asks for (`holds`: an SQL condition on
    /// `repo_id = ?1` and the item `?2`). A model that opens `#907` from a search result
    /// should not have to name the repository again.
    pub(crate) fn resolve_repo_holding(
        &self,
        name: Option<&str>,
        holds: &str,
        item: &dyn rusqlite::ToSql,
    ) -> Result<Repo, WorkspaceError> {
        if name.is_some() {
            return self.resolve_repo(name);
        }
        let repos = self.repos()?;
        if repos.len() < 2 {
            return self.resolve_repo(None);
        }
        let mut holding = Vec::new();
        {
            let conn = self.conn();
            let mut stmt = conn
                .prepare_cached(&format!("SELECT EXISTS ({holds})"))
                .map_err(crate::workspace::db_err("finding the repository"))?;
            for r in &repos {
                let yes: bool = stmt
                    .query_row(rusqlite::params![r.id, item], |row| row.get(0))
                    .map_err(crate::workspace::db_err("finding the repository"))?;
                if yes {
                    holding.push(r.clone());
                }
            }
        }
        match holding.len() {
            1 => Ok(holding.remove(0)),
            _ => self.resolve_repo(None),
        }
    }

    /// The repository a tool means: the one named, or the only one there is.
    pub fn resolve_repo(&self, name: Option<&str>) -> Result<Repo, WorkspaceError> {
        match name {
            Some(n) => self.repo(n),
            None => {
                let repos = self.repos()?;
                match repos.len() {
                    0 => Err(WorkspaceError::Refused(
                        "the workspace has no repositories yet".into(),
                    )),
                    1 => Ok(repos
                        .into_iter()
                        .next()
                        .ok_or_else(|| WorkspaceError::Refused("no repository".into()))?),
                    _ => Err(WorkspaceError::BadQuery(format!(
                        "there are several repositories ({}); say which with \"repo\"",
                        repos
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_only() {
        assert_eq!(safe_relative("src/./main.rs").unwrap(), "src/main.rs");
        assert_eq!(safe_relative("").unwrap(), "");
        for bad in ["/etc/passwd", "../x", "src/../../x", "\\\\server\\share"] {
            assert!(
                matches!(safe_relative(bad), Err(WorkspaceError::Refused(_))),
                "{bad}"
            );
        }
    }
}
