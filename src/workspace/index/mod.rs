//! Indexing: walking a repository's files, reading its history, importing issue exports, and
//! writing it all to the database in batches, so a run that is killed leaves a consistent
//! database and the next run goes on where it stopped.
//!
//! This module owns a run as a whole: its report and progress events, the repository's status,
//! the refs, and folding the write-ahead log back afterwards. Each part owns one source of rows:
//! `files` (the walk of the working tree), `commits` (the history), `issues` (imported exports);
//! `lock` is the lock across processes that a run holds.

mod commits;
mod files;
mod issues;
mod links;
mod lock;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use rusqlite::{params, Connection, Transaction, TransactionBehavior};
use serde::Serialize;

use super::git::GitRepo;
use super::{db_err, now, Repo, Workspace, WorkspaceError};
use commits::index_commits;
use files::index_files;
use issues::write_import;

pub use files::MAX_FILE_BYTES;
pub(crate) use lock::FileLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexPhase {
    Files,
    Commits,
    Refs,
    Import,
}

/// What indexing reports as it goes, for progress bars.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum IndexEvent {
    Progress {
        repo: String,
        phase: IndexPhase,
        done: u64,
        total: u64,
    },
    Note {
        repo: String,
        message: String,
    },
}

/// What an index or import run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IndexReport {
    pub repo: String,
    /// Indexed as a plain folder: it is not a git repository.
    pub plain_folder: bool,
    pub files_indexed: u64,
    pub files_unchanged: u64,
    pub files_removed: u64,
    /// Files not indexed, by reason (binary, too large, unreadable, not UTF-8...).
    pub files_skipped: BTreeMap<String, u64>,
    pub commits_added: u64,
    /// Commits no branch, tag or HEAD reaches any more (amended, rebased, force-pushed away).
    pub commits_removed: u64,
    pub refs: u64,
    pub issues: u64,
    pub pull_requests: u64,
    pub comments: u64,
    /// Comments whose issue is in neither this import nor the workspace.
    pub orphan_comments: u64,
    /// Comments an item's whole record (a backup's) no longer lists: deleted on GitHub since.
    pub comments_deleted: u64,
    pub elapsed_ms: f64,
    pub warnings: Vec<String>,
}

/// Runs one statement through the connection's statement cache. Statements on `docs` carry
/// the search index's triggers, and compiling those again for every row cost more than
/// running them.
fn exec<P: rusqlite::Params>(conn: &Connection, sql: &str, params: P) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// One row, through the statement cache (see `exec`).
fn query_one<T, P, F>(conn: &Connection, sql: &str, params: P, f: F) -> rusqlite::Result<T>
where
    P: rusqlite::Params,
    F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
{
    conn.prepare_cached(sql)?.query_row(params, f)
}

/// Starts a write transaction as a write (`BEGIN IMMEDIATE`), waiting for as long as another
/// process writes, and saying so once the wait passes a second. A deferred transaction that
/// reads before it writes fails at once with "database is locked" when another writer got in
/// first (a second import started beside another: issue 17); an immediate one takes the write
/// lock first, where SQLite's busy handler waits.
pub(crate) fn begin_write<'c>(
    conn: &'c mut Connection,
    repo: &str,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<Transaction<'c>, WorkspaceError> {
    let _ = conn.busy_timeout(WAIT_BEFORE_SAYING);
    let mut said = false;
    // Probe for the lock, then take it for real below (a transaction borrowed out of a loop
    // cannot be returned from it); the real start waits with the full busy timeout.
    loop {
        match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;") {
            Ok(()) => break,
            Err(e) if super::db::is_busy(&e) => {
                let _ = conn.execute_batch("ROLLBACK");
                if !said {
                    said = true;
                    on_event(IndexEvent::Note {
                        repo: repo.to_string(),
                        message: "waiting for another indexing run or import to finish writing"
                            .into(),
                    });
                }
            }
            Err(e) => {
                let _ = conn.busy_timeout(super::db::BUSY_TIMEOUT);
                return Err(db_err("starting a write")(e));
            }
        }
    }
    let _ = conn.busy_timeout(super::db::BUSY_TIMEOUT);
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db_err("starting a write"))
}

/// The lock a repository's indexing run holds (see `Workspace::settle_status`).
pub(crate) fn repo_lock_key(id: i64) -> String {
    format!("repo-{id}")
}

/// How long a writer waits for another before saying it waits.
const WAIT_BEFORE_SAYING: std::time::Duration = std::time::Duration::from_secs(1);

fn set_status(
    conn: &Connection,
    id: i64,
    status: &str,
    error: Option<&str>,
) -> Result<(), WorkspaceError> {
    conn.execute(
        "UPDATE repos SET status = ?1, error = ?2 WHERE id = ?3",
        params![status, error, id],
    )
    .map_err(db_err("updating the repository status"))?;
    Ok(())
}

impl Workspace {
    /// Indexes (or re-indexes) a local repository: files, commits, branches and tags. Only what
    /// changed since the last run is read again.
    pub fn index_repo(
        &self,
        name: &str,
        on_event: &mut dyn FnMut(IndexEvent),
    ) -> Result<IndexReport, WorkspaceError> {
        let repo = self.repo(name)?;
        let Some(root) = repo.root.clone() else {
            return Err(WorkspaceError::Refused(format!(
                "{} has no local folder to index (it holds imported issues only)",
                repo.name
            )));
        };
        let _lock = FileLock::acquire(&self.db_path, &repo_lock_key(repo.id))?;
        let started = Instant::now();
        let mut conn = self.connect()?;
        set_status(&conn, repo.id, "indexing", None)?;
        let result = index_local(&mut conn, &repo, &root, on_event);
        settle(&conn);
        match result {
            Ok(mut report) => {
                set_status(&conn, repo.id, "ready", None)?;
                report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
                Ok(report)
            }
            Err(e) => {
                let _ = set_status(&conn, repo.id, "error", Some(&e.to_string()));
                Err(e)
            }
        }
    }

    /// Imports issues and pull requests from an export file or directory into the repository
    /// `slug` (owner/name). All or nothing: one transaction.
    pub fn import(
        &self,
        path: &Path,
        slug: &str,
        on_event: &mut dyn FnMut(IndexEvent),
    ) -> Result<IndexReport, WorkspaceError> {
        let started = Instant::now();
        check_slug(slug)?;
        let _lock = FileLock::acquire(
            &self.db_path,
            &format!("import-{}", slug.replace('/', "--")),
        )?;
        let mut conn = self.connect()?;
        let result = write_import(&mut conn, path, slug, on_event);
        settle(&conn);
        let mut report = result?;
        report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(report)
    }
}

/// After a run that wrote much, folds the write-ahead log back into the database and empties
/// it, so the log does not stay as large as the run's writes (hundreds of MB for a big import).
/// Best effort: a reader holding an old snapshot makes it wait, and then the log is simply
/// folded back later.
fn settle(conn: &Connection) {
    let _ = conn.busy_timeout(std::time::Duration::from_millis(250));
    let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
}

fn index_local(
    conn: &mut Connection,
    repo: &Repo,
    root: &Path,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<IndexReport, WorkspaceError> {
    let mut report = IndexReport {
        repo: repo.name.clone(),
        ..Default::default()
    };
    if !root.is_dir() {
        return Err(WorkspaceError::NotAFolder {
            path: root.to_path_buf(),
        });
    }
    let git = GitRepo::open(root)?;
    if git.is_none() {
        report.plain_folder = true;
        on_event(IndexEvent::Note {
            repo: repo.name.clone(),
            message: format!(
                "{} is not a git repository: indexing its files only",
                root.display()
            ),
        });
    }
    index_files(conn, repo, root, &mut report, on_event)?;
    if let Some(git) = &git {
        index_commits(conn, repo, git, &mut report, on_event)?;
        let refs = git.refs()?;
        let tx = begin_write(conn, &repo.name, on_event)?;
        exec(&tx, "DELETE FROM refs WHERE repo_id = ?1", [repo.id])
            .map_err(db_err("replacing refs"))?;
        for r in &refs {
            exec(
                &tx,
                "INSERT OR REPLACE INTO refs (repo_id, name, kind, target) VALUES (?1, ?2, ?3, ?4)",
                params![repo.id, r.name, r.kind, r.target],
            )
            .map_err(db_err("saving refs"))?;
        }
        exec(
            &tx,
            "UPDATE repos SET head = ?1, is_git = 1 WHERE id = ?2",
            params![git.head(), repo.id],
        )
        .map_err(db_err("saving HEAD"))?;
        tx.commit().map_err(db_err("saving refs"))?;
        report.refs = refs.len() as u64;
        on_event(IndexEvent::Progress {
            repo: repo.name.clone(),
            phase: IndexPhase::Refs,
            done: refs.len() as u64,
            total: refs.len() as u64,
        });
    }
    let tx = begin_write(conn, &repo.name, on_event)?;
    crate::workspace::vectors::keep_vectors(&tx, repo.id)?;
    exec(
        &tx,
        "UPDATE repos SET indexed_at = ?1 WHERE id = ?2",
        params![now(), repo.id],
    )
    .map_err(db_err("saving the index time"))?;
    tx.commit().map_err(db_err("saving the index time"))?;
    Ok(report)
}

pub(crate) fn delete_docs(
    tx: &Connection,
    source: &str,
    source_id: i64,
) -> Result<(), WorkspaceError> {
    exec(
        tx,
        "DELETE FROM docs WHERE source = ?1 AND source_id = ?2",
        params![source, source_id],
    )
    .map_err(db_err("removing stale search entries"))?;
    Ok(())
}

/// `owner/name`, both parts non-empty.
pub(crate) fn check_slug(slug: &str) -> Result<(), WorkspaceError> {
    let mut parts = slug.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(o), Some(n), None) if !o.is_empty() && !n.is_empty() => Ok(()),
        _ => Err(WorkspaceError::BadSlug {
            slug: slug.to_string(),
        }),
    }
}
