//! The tools that read repositories as files: `list_repositories`, `read_file` and
//! `list_directory`.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{Locator, Opens, OpensItems, Tool, ToolError, ToolOutput};
use crate::workspace::Workspace;

/// Lines `read_file` returns at most, and bytes.
const READ_MAX_LINES: usize = 200;
const READ_MAX_BYTES: usize = 12_000;

/// List the repositories in the workspace, with what is indexed in each.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListRepositoriesInput {}

pub struct ListRepositories(pub Arc<Workspace>);

impl Tool for ListRepositories {
    const NAME: &'static str = "list_repositories";
    type Input = ListRepositoriesInput;

    fn run(&self, _: ListRepositoriesInput) -> Result<ToolOutput, ToolError> {
        let status = self.0.status()?;
        if status.is_empty() {
            return Ok(ToolOutput::new(
                "The workspace has no repositories.",
                &status,
            ));
        }
        let mut out = String::new();
        for s in &status {
            let _ = writeln!(
                out,
                "{}{}: {} files, {} commits, {} issues, {} pull requests ({})",
                s.repo.name,
                s.repo
                    .remote
                    .as_ref()
                    .filter(|r| **r != s.repo.name)
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default(),
                s.files,
                s.commits,
                s.issues,
                s.pull_requests,
                s.repo.status
            );
        }
        Ok(ToolOutput::new(out, &status))
    }
}

/// Read lines of a file of an indexed repository, with line numbers. Long files come in parts:
/// ask for the next lines with start_line.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileInput {
    /// The file's path relative to the repository root, like src/main.rs.
    pub path: String,
    /// The repository (needed when there are several).
    #[serde(default)]
    pub repo: Option<String>,
    /// First line to read (1-based, default 1).
    #[serde(default)]
    pub start_line: Option<usize>,
    /// Last line to read (default: as far as the size limit allows).
    #[serde(default)]
    pub end_line: Option<usize>,
    /// A tag, branch or commit hash: the file as it was there (default: as it is now).
    #[serde(default)]
    pub at: Option<String>,
}

pub struct ReadFile(pub Arc<Workspace>);

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Input = ReadFileInput;
    const OPENS: Option<Opens> = Some(Opens {
        argument: "path",
        items: OpensItems::File,
    });

    fn run(&self, i: ReadFileInput) -> Result<ToolOutput, ToolError> {
        let at = i.at.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let (slice, revision) = match at {
            Some(at) => {
                let (slice, revision) = self.0.read_file_at(
                    i.repo.as_deref(),
                    &i.path,
                    at,
                    i.start_line,
                    i.end_line,
                    READ_MAX_LINES,
                    READ_MAX_BYTES,
                )?;
                (slice, Some(revision))
            }
            None => (
                self.0.read_file(
                    i.repo.as_deref(),
                    &i.path,
                    i.start_line,
                    i.end_line,
                    READ_MAX_LINES,
                    READ_MAX_BYTES,
                )?,
                None,
            ),
        };
        let when = match &revision {
            Some(r) => format!(
                " at {} (commit {}, {})",
                r.name,
                &r.hash[..r.hash.len().min(12)],
                super::format::date(Some(r.time))
            ),
            None => String::new(),
        };
        let mut out = format!(
            "{}{when} (lines {}-{} of {}):\n",
            slice.path, slice.start_line, slice.end_line, slice.total_lines
        );
        let width = slice.end_line.to_string().len();
        for (n, line) in slice.lines.iter().enumerate() {
            let _ = writeln!(out, "{:>width$}  {line}", slice.start_line + n);
        }
        // A note when the limit cut the slice, or when the whole file was asked for and more
        // remains; not when the caller asked for exactly these lines.
        if slice.truncated || (i.end_line.is_none() && slice.end_line < slice.total_lines) {
            let _ = writeln!(
                out,
                "{}",
                crate::notes::cut_at_line(slice.end_line, slice.total_lines)
            );
        }
        let file = Locator::file(&slice.repo, &slice.path, Some(slice.start_line));
        Ok(ToolOutput::new(out, &slice).opening(file))
    }
}

/// The most entries of a folder `list_directory` lists.
const MAX_LISTED: usize = 200;

/// List the files and folders directly inside a folder of an indexed repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirectoryInput {
    /// The folder, relative to the repository root ("" or omitted: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// The repository (needed when there are several).
    #[serde(default)]
    pub repo: Option<String>,
}

pub struct ListDirectory(pub Arc<Workspace>);

impl Tool for ListDirectory {
    const NAME: &'static str = "list_directory";
    type Input = ListDirectoryInput;

    fn run(&self, i: ListDirectoryInput) -> Result<ToolOutput, ToolError> {
        let (repo, dir, entries) = self
            .0
            .list_directory(i.repo.as_deref(), i.path.as_deref().unwrap_or(""))?;
        let shown = if dir.is_empty() {
            format!("{} (root)", repo.name)
        } else {
            format!("{}/{dir}", repo.name)
        };
        if entries.is_empty() {
            return Ok(ToolOutput::new(
                format!("{shown} has no indexed files."),
                &entries,
            ));
        }
        let mut out = format!("{shown}:\n");
        // A folder of thousands of files (vendored, generated) filled a client's context
        // (through `burrow mcp`, whole) with a listing no one reads to the end.
        let total = entries.len();
        let mut entries = entries;
        entries.truncate(MAX_LISTED);
        for e in &entries {
            if e.is_dir {
                let _ = writeln!(out, "  {}/  ({} files)", e.name, e.size);
            } else {
                let _ = writeln!(out, "  {}  ({} lines)", e.name, e.size);
            }
        }
        if total > entries.len() {
            let hint = "find the others with search or search_code and a path";
            let _ = writeln!(
                out,
                "{}",
                crate::notes::listed(entries.len(), total, "entries", Some(hint))
            );
        }
        // The files listed are items the run has seen: the model may open them.
        let files = entries.iter().filter(|e| !e.is_dir).map(|e| {
            let path = if dir.is_empty() {
                e.name.clone()
            } else {
                format!("{dir}/{}", e.name)
            };
            Locator::file(&repo.name, &path, None)
        });
        Ok(ToolOutput::new(out, &entries).with_items(files))
    }
}
