//! The workspace's repositories: added, indexed again, and issues imported into them, each
//! reporting progress and failure as events.

use std::path::Path;

use super::{App, AppError, AppEvent};
use crate::workspace::{IndexReport, RepoStatus, WorkspaceError};

impl App {
    pub fn workspace_status(&self) -> Result<Vec<RepoStatus>, AppError> {
        Ok(self.workspace.status()?)
    }

    /// Adds a folder to the workspace and indexes it.
    pub fn add_repository(
        &self,
        path: &Path,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        let source = path.display().to_string();
        match self.workspace.add_repo(path, None) {
            Ok(repo) => self.index(&repo.name, source, on_event),
            Err(e) => self.report(source, Err(e), on_event),
        }
    }

    /// The folder the app was started in, as the default workspace: added and indexed on the
    /// first start, left as it is after (Re-index brings it up to date).
    pub fn ensure_repository(
        &self,
        path: &Path,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Option<IndexReport>, AppError> {
        // Said as the indexing's failures are: a default workspace that cannot be read (a
        // folder mistyped or gone) was an error the app's start threw away, and nothing showed.
        let failed = |e: AppError, on_event: &mut dyn FnMut(AppEvent)| {
            on_event(AppEvent::IndexFailed {
                source: path.display().to_string(),
                message: e.to_string(),
            });
            e
        };
        let root = match std::fs::canonicalize(path) {
            Ok(root) => root,
            Err(source) => {
                let e = WorkspaceError::Io {
                    path: path.to_path_buf(),
                    source,
                };
                return Err(failed(e.into(), on_event));
            }
        };
        let repos = match self.workspace.repos() {
            Ok(r) => r,
            Err(e) => return Err(failed(e.into(), on_event)),
        };
        let known = repos
            .into_iter()
            .any(|r| r.root.as_deref() == Some(root.as_path()) && r.status == "ready");
        if known {
            return Ok(None);
        }
        self.add_repository(&root, on_event).map(Some)
    }

    /// Indexes a repository of the workspace again (only what changed is read).
    pub fn reindex(
        &self,
        name: &str,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        self.index(name, name.to_string(), on_event)
    }

    fn index(
        &self,
        name: &str,
        source: String,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        let result = self.workspace.index_repo(name, &mut |event| {
            on_event(AppEvent::Index {
                source: source.clone(),
                event,
            })
        });
        self.report(source, result, on_event)
    }

    /// Imports an issues export (a file or a folder) into the repository `slug` (owner/name):
    /// all or nothing, so a malformed file leaves the workspace as it was.
    pub fn import_issues(
        &self,
        path: &Path,
        slug: &str,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        let source = path.display().to_string();
        let result = self.workspace.import(path, slug, &mut |event| {
            on_event(AppEvent::Index {
                source: source.clone(),
                event,
            })
        });
        self.report(source, result, on_event)
    }

    fn report(
        &self,
        source: String,
        result: Result<IndexReport, WorkspaceError>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<IndexReport, AppError> {
        match result {
            Ok(report) => {
                on_event(AppEvent::Indexed {
                    source,
                    report: report.clone(),
                });
                Ok(report)
            }
            Err(e) => {
                on_event(AppEvent::IndexFailed {
                    source,
                    message: e.to_string(),
                });
                Err(e.into())
            }
        }
    }
}
