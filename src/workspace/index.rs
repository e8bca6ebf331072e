//! Indexing: walking a repository's files, reading its history, importing issue exports, and
//! writing it all to the database in batches, so a run that is killed leaves a consistent
//! database and the next run goes on where it stopped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use super::git::{CommitRecord, GitRepo};
use super::import::{self, Comment, Item, Record};
use super::text::{
    code_units, document_units, identifier_parts, identifier_terms, is_document, language_of,
    looks_binary,
};
use super::{db_err, now, Repo, Workspace, WorkspaceError};

/// Files larger than this are not indexed (generated code, data, vendored bundles).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
const FILES_PER_TRANSACTION: usize = 256;
const COMMITS_PER_TRANSACTION: usize = 500;

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
    pub refs: u64,
    pub issues: u64,
    pub pull_requests: u64,
    pub comments: u64,
    /// Comments whose issue is in neither this import nor the workspace.
    pub orphan_comments: u64,
    pub elapsed_ms: f64,
    pub warnings: Vec<String>,
}

/// An exclusive lock across processes (`flock` on a file under `locks/` beside the database):
/// one repository's indexing (a second run waits for the first), or a running agent run (so a
/// later process can tell a run whose process died from one still going). The kernel drops it
/// when the process dies, so a killed process never leaves a stale lock.
pub(crate) struct FileLock {
    /// Held, not read: closing the file releases the lock.
    _file: std::fs::File,
}

impl FileLock {
    /// Waits for the lock.
    pub(crate) fn acquire(db_path: &Path, key: &str) -> Result<Self, WorkspaceError> {
        // A waiting flock never reports the lock as held; if it did, say so rather than panic.
        Self::lock(db_path, key, true)?
            .ok_or_else(|| WorkspaceError::Refused(format!("the lock {key} is held elsewhere")))
    }

    /// Takes the lock if no one holds it.
    pub(crate) fn try_acquire(db_path: &Path, key: &str) -> Result<Option<Self>, WorkspaceError> {
        Self::lock(db_path, key, false)
    }

    fn lock(db_path: &Path, key: &str, wait: bool) -> Result<Option<Self>, WorkspaceError> {
        let dir = db_path
            .parent()
            .map(|d| d.join("locks"))
            .unwrap_or_else(|| PathBuf::from("locks"));
        std::fs::create_dir_all(&dir).map_err(|source| WorkspaceError::Io {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(format!("{key}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| WorkspaceError::Io {
                path: path.clone(),
                source,
            })?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let op = if wait {
                libc::LOCK_EX
            } else {
                libc::LOCK_EX | libc::LOCK_NB
            };
            loop {
                // SAFETY: flock on a descriptor we own.
                let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
                if rc == 0 {
                    break;
                }
                let err = std::io::Error::last_os_error();
                match err.kind() {
                    std::io::ErrorKind::Interrupted => continue,
                    std::io::ErrorKind::WouldBlock => return Ok(None),
                    _ => return Err(WorkspaceError::Io { path, source: err }),
                }
            }
        }
        Ok(Some(FileLock { _file: file }))
    }
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
        let _lock = FileLock::acquire(&self.db_path, &format!("repo-{}", repo.id))?;
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
        let tx = conn
            .transaction()
            .map_err(db_err("starting a transaction"))?;
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
    conn.execute(
        "UPDATE repos SET indexed_at = ?1 WHERE id = ?2",
        params![now(), repo.id],
    )
    .map_err(db_err("saving the index time"))?;
    Ok(report)
}

struct KnownFile {
    id: i64,
    size: i64,
    mtime_ns: i64,
    hash: String,
}

enum Walked {
    File { rel: String, abs: PathBuf },
    Skip { rel: String, reason: String },
}

fn index_files(
    conn: &mut Connection,
    repo: &Repo,
    root: &Path,
    report: &mut IndexReport,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<(), WorkspaceError> {
    let known: HashMap<String, KnownFile> = {
        let mut stmt = conn
            .prepare("SELECT path, id, size, mtime_ns, hash FROM files WHERE repo_id = ?1")
            .map_err(db_err("reading indexed files"))?;
        let rows = stmt
            .query_map([repo.id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    KnownFile {
                        id: r.get(1)?,
                        size: r.get(2)?,
                        mtime_ns: r.get(3)?,
                        hash: r.get(4)?,
                    },
                ))
            })
            .map_err(db_err("reading indexed files"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading indexed files"))?
    };

    // The walk honours .gitignore (and .ignore) files, keeps hidden files (.github/ and the
    // like are part of a project) but not .git itself, and does not follow symbolic links: a
    // link may point anywhere on the disk.
    let mut walked = Vec::new();
    for entry in ignore::WalkBuilder::new(root)
        .follow_links(false)
        .hidden(false)
        .require_git(false)
        .git_global(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
    {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                report
                    .warnings
                    .push(format!("cannot read part of the tree: {e}"));
                continue;
            }
        };
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            continue;
        }
        let rel_path = entry.path().strip_prefix(root).unwrap_or(entry.path());
        let rel = match rel_path.to_str() {
            Some(s) => s.replace(std::path::MAIN_SEPARATOR, "/"),
            None => {
                walked.push(Walked::Skip {
                    rel: rel_path
                        .to_string_lossy()
                        .replace(std::path::MAIN_SEPARATOR, "/"),
                    reason: "file name is not UTF-8".into(),
                });
                continue;
            }
        };
        if ft.is_symlink() {
            walked.push(Walked::Skip {
                rel,
                reason: "symbolic link".into(),
            });
            continue;
        }
        if ft.is_file() {
            walked.push(Walked::File {
                rel,
                abs: entry.path().to_path_buf(),
            });
        } else {
            // FIFOs, sockets, devices: reading one could block or never end.
            walked.push(Walked::Skip {
                rel,
                reason: "not a regular file".into(),
            });
        }
    }

    let total = walked.len() as u64;
    let mut seen: HashSet<String> = HashSet::with_capacity(walked.len());
    let mut tx = conn
        .transaction()
        .map_err(db_err("starting a transaction"))?;
    let mut in_tx = 0usize;
    for (i, w) in walked.into_iter().enumerate() {
        let done = i as u64 + 1;
        match w {
            Walked::Skip { rel, reason } => {
                record_skip(&tx, repo.id, &rel, &reason, report)?;
                seen.insert(rel);
            }
            Walked::File { rel, abs } => {
                seen.insert(rel.clone());
                index_one_file(&tx, repo.id, &rel, &abs, known.get(&rel), report)?;
            }
        }
        in_tx += 1;
        if in_tx >= FILES_PER_TRANSACTION {
            tx.commit().map_err(db_err("saving indexed files"))?;
            tx = conn
                .transaction()
                .map_err(db_err("starting a transaction"))?;
            in_tx = 0;
            on_event(IndexEvent::Progress {
                repo: repo.name.clone(),
                phase: IndexPhase::Files,
                done,
                total,
            });
        }
    }
    // Files gone since the last run (only now that the walk is known to be complete).
    for (path, k) in &known {
        if !seen.contains(path) {
            delete_docs(&tx, "file", k.id)?;
            exec(&tx, "DELETE FROM files WHERE id = ?1", [k.id])
                .map_err(db_err("removing a deleted file"))?;
            report.files_removed += 1;
        }
    }
    {
        let mut stmt = tx
            .prepare("SELECT path FROM skipped_files WHERE repo_id = ?1")
            .map_err(db_err("reading skipped files"))?;
        let stale: Vec<String> = stmt
            .query_map([repo.id], |r| r.get(0))
            .map_err(db_err("reading skipped files"))?
            .filter_map(Result::ok)
            .filter(|p: &String| !seen.contains(p))
            .collect();
        for p in stale {
            exec(
                &tx,
                "DELETE FROM skipped_files WHERE repo_id = ?1 AND path = ?2",
                params![repo.id, p],
            )
            .map_err(db_err("forgetting a skipped file"))?;
        }
    }
    tx.commit().map_err(db_err("saving indexed files"))?;
    on_event(IndexEvent::Progress {
        repo: repo.name.clone(),
        phase: IndexPhase::Files,
        done: total,
        total,
    });
    Ok(())
}

fn record_skip(
    tx: &Transaction<'_>,
    repo_id: i64,
    rel: &str,
    reason: &str,
    report: &mut IndexReport,
) -> Result<(), WorkspaceError> {
    // A file that was indexed and is now skipped (grew too large, became binary) leaves the index.
    if let Some(id) = tx
        .query_row(
            "SELECT id FROM files WHERE repo_id = ?1 AND path = ?2",
            params![repo_id, rel],
            |r| r.get::<_, i64>(0),
        )
        .optional()
        .map_err(db_err("reading a file"))?
    {
        delete_docs(tx, "file", id)?;
        exec(tx, "DELETE FROM files WHERE id = ?1", [id]).map_err(db_err("removing a file"))?;
    }
    exec(
        tx,
        "INSERT OR REPLACE INTO skipped_files (repo_id, path, reason) VALUES (?1, ?2, ?3)",
        params![repo_id, rel, reason],
    )
    .map_err(db_err("recording a skipped file"))?;
    let key = reason.split(':').next().unwrap_or(reason).to_string();
    *report.files_skipped.entry(key).or_default() += 1;
    Ok(())
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn index_one_file(
    tx: &Transaction<'_>,
    repo_id: i64,
    rel: &str,
    abs: &Path,
    known: Option<&KnownFile>,
    report: &mut IndexReport,
) -> Result<(), WorkspaceError> {
    let meta = match std::fs::symlink_metadata(abs) {
        Ok(m) => m,
        Err(e) => return record_skip(tx, repo_id, rel, &format!("unreadable: {e}"), report),
    };
    let size = meta.len();
    let mtime = mtime_ns(&meta);
    if size > MAX_FILE_BYTES {
        return record_skip(tx, repo_id, rel, "larger than 1 MiB", report);
    }
    if let Some(k) = known {
        if k.size == size as i64 && k.mtime_ns == mtime {
            report.files_unchanged += 1;
            return Ok(());
        }
    }
    let bytes = match std::fs::read(abs) {
        Ok(b) => b,
        Err(e) => return record_skip(tx, repo_id, rel, &format!("unreadable: {e}"), report),
    };
    if looks_binary(&bytes) {
        return record_skip(tx, repo_id, rel, "binary", report);
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return record_skip(tx, repo_id, rel, "not UTF-8 text", report),
    };
    let hash = format!("{:016x}", twox_hash::XxHash3_64::oneshot(text.as_bytes()));
    exec(
        tx,
        "DELETE FROM skipped_files WHERE repo_id = ?1 AND path = ?2",
        params![repo_id, rel],
    )
    .map_err(db_err("updating a file"))?;
    if let Some(k) = known {
        if k.hash == hash {
            // Touched, not changed.
            exec(
                tx,
                "UPDATE files SET mtime_ns = ?1 WHERE id = ?2",
                params![mtime, k.id],
            )
            .map_err(db_err("updating a file"))?;
            report.files_unchanged += 1;
            return Ok(());
        }
    }
    let language = language_of(rel);
    let lines = text.lines().count() as i64;
    let file_id: i64 = tx
        .query_row(
            "INSERT INTO files (repo_id, path, language, size, mtime_ns, hash, lines)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (repo_id, path) DO UPDATE SET
                language = excluded.language, size = excluded.size, mtime_ns = excluded.mtime_ns,
                hash = excluded.hash, lines = excluded.lines
             RETURNING id",
            params![repo_id, rel, language, size as i64, mtime, hash, lines],
            |r| r.get(0),
        )
        .map_err(db_err("saving a file"))?;
    delete_docs(tx, "file", file_id)?;
    let path_terms = identifier_parts(rel).join(" ");
    let doc = is_document(rel);
    let units = if doc {
        document_units(&text)
    } else {
        code_units(&text)
    };
    for u in units {
        let (kind, title, terms) = if doc {
            let title = if u.title.is_empty() {
                rel.to_string()
            } else {
                u.title.clone()
            };
            (
                "doc",
                title,
                format!("{path_terms}\n{}", identifier_terms(&u.text)),
            )
        } else {
            (
                "code",
                rel.to_string(),
                format!("{path_terms}\n{}", identifier_terms(&u.text)),
            )
        };
        exec(tx,
            "INSERT INTO docs (repo_id, kind, source, source_id, path, line, time, title, body, terms)
             VALUES (?1, ?2, 'file', ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![repo_id, kind, file_id, rel, u.line as i64, mtime / 1_000_000_000, title, u.text, terms],
        )
        .map_err(db_err("indexing a file"))?;
    }
    report.files_indexed += 1;
    Ok(())
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

fn index_commits(
    conn: &mut Connection,
    repo: &Repo,
    git: &GitRepo,
    report: &mut IndexReport,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<(), WorkspaceError> {
    let known: HashSet<String> = {
        let mut stmt = conn
            .prepare("SELECT hash FROM commits WHERE repo_id = ?1")
            .map_err(db_err("reading indexed commits"))?;
        let rows = stmt
            .query_map([repo.id], |r| r.get(0))
            .map_err(db_err("reading indexed commits"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading indexed commits"))?
    };
    let ids = git.new_commit_ids(&known)?;
    let total = ids.len() as u64;
    let mut tx = conn
        .transaction()
        .map_err(db_err("starting a transaction"))?;
    for (i, id) in ids.iter().enumerate() {
        let record = git.commit_record(*id)?;
        insert_commit(&tx, repo.id, &record)?;
        report.commits_added += 1;
        if (i + 1) % COMMITS_PER_TRANSACTION == 0 {
            tx.commit().map_err(db_err("saving commits"))?;
            tx = conn
                .transaction()
                .map_err(db_err("starting a transaction"))?;
            on_event(IndexEvent::Progress {
                repo: repo.name.clone(),
                phase: IndexPhase::Commits,
                done: i as u64 + 1,
                total,
            });
        }
    }
    tx.commit().map_err(db_err("saving commits"))?;
    on_event(IndexEvent::Progress {
        repo: repo.name.clone(),
        phase: IndexPhase::Commits,
        done: total,
        total,
    });
    Ok(())
}

fn insert_commit(
    tx: &Transaction<'_>,
    repo_id: i64,
    c: &CommitRecord,
) -> Result<(), WorkspaceError> {
    let id: i64 = tx
        .query_row(
            "INSERT INTO commits (repo_id, hash, author_name, author_email, time, summary, message, parents)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (repo_id, hash) DO UPDATE SET summary = excluded.summary
             RETURNING id",
            params![
                repo_id,
                c.hash,
                c.author_name,
                c.author_email,
                c.time,
                c.summary,
                c.message,
                c.parents.join(" ")
            ],
            |r| r.get(0),
        )
        .map_err(db_err("saving a commit"))?;
    exec(tx, "DELETE FROM commit_files WHERE commit_id = ?1", [id])
        .map_err(db_err("saving a commit"))?;
    for f in &c.files {
        exec(tx,
            "INSERT INTO commit_files (commit_id, path, change, additions, deletions) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, f.path, f.change, f.additions, f.deletions],
        )
        .map_err(db_err("saving a commit's files"))?;
    }
    delete_docs(tx, "commit", id)?;
    let paths: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
    let body = format!("{}\n\n{}", c.message.trim(), paths.join("\n"));
    let terms = format!(
        "{}\n{}",
        identifier_terms(&c.message),
        paths
            .iter()
            .map(|p| identifier_parts(p).join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    );
    exec(tx,
        "INSERT INTO docs (repo_id, kind, source, source_id, hash, author, time, title, body, terms)
         VALUES (?1, 'commit', 'commit', ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![repo_id, id, c.hash, c.author_name, c.time, c.summary, body, terms],
    )
    .map_err(db_err("indexing a commit"))?;
    Ok(())
}

/// Imports an export in one transaction, record by record as the file is parsed (so memory
/// stays bounded whatever its size): items are merged with what the workspace already has
/// (re-importing updates, never duplicates), comments attach to their items, and the search
/// entries of every touched item are rebuilt. Any error rolls everything back, the
/// repository's entry included when this import created it.
fn write_import(
    conn: &mut Connection,
    path: &Path,
    slug: &str,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<IndexReport, WorkspaceError> {
    let tx = conn.transaction().map_err(db_err("starting the import"))?;
    let repo = match super::repo_where(&tx, "remote = ?1", params![slug])? {
        Some(r) => r,
        None => {
            let name = super::unique_name(&tx, slug)?;
            exec(
                &tx,
                "INSERT INTO repos (name, remote, added_at, status) VALUES (?1, ?2, ?3, 'ready')",
                params![name, slug, now()],
            )
            .map_err(db_err("adding an imported repository"))?;
            super::repo_where(&tx, "id = ?1", params![tx.last_insert_rowid()])?
                .ok_or_else(|| WorkspaceError::Refused("the repository vanished".into()))?
        }
    };
    let mut report = IndexReport {
        repo: repo.name.clone(),
        ..Default::default()
    };
    let mut touched: HashSet<i64> = HashSet::new();
    // Comments whose item has not been seen yet (it may come later in the export).
    let mut pending: Vec<Comment> = Vec::new();
    let mut done = 0u64;
    let stats = import::read_stream(path, &mut |record| {
        match record {
            Record::Item(item) => {
                touched.insert(upsert_item(&tx, repo.id, item, &mut report)?);
            }
            Record::Comment(c) => match issue_id(&tx, repo.id, c.number)? {
                Some(id) => {
                    insert_comment(&tx, id, &c)?;
                    report.comments += 1;
                    touched.insert(id);
                }
                None => pending.push(c),
            },
        }
        done += 1;
        if done % 500 == 0 {
            on_event(IndexEvent::Progress {
                repo: repo.name.clone(),
                phase: IndexPhase::Import,
                done,
                total: 0,
            });
        }
        Ok(())
    })?;
    for c in pending {
        match issue_id(&tx, repo.id, c.number)? {
            Some(id) => {
                insert_comment(&tx, id, &c)?;
                report.comments += 1;
                touched.insert(id);
            }
            None => report.orphan_comments += 1,
        }
    }
    // Oldest first, so that the search index's row order is the order the items were opened
    // in (a search over too many matches ranks the newest rows), whatever order the export
    // listed them in (`gh api` lists newest first).
    let mut order: Vec<(Option<i64>, i64, i64)> = Vec::with_capacity(touched.len());
    {
        let mut st = tx
            .prepare_cached("SELECT created_at, number, id FROM issues WHERE repo_id = ?1")
            .map_err(db_err("ordering the imported items"))?;
        let rows = st
            .query_map([repo.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err("ordering the imported items"))?;
        for row in rows {
            let row = row.map_err(db_err("ordering the imported items"))?;
            if touched.contains(&row.2) {
                order.push(row);
            }
        }
    }
    order.sort_unstable();
    for (_, _, id) in order {
        reindex_issue(&tx, id)?;
    }
    if stats.ignored > 0 {
        report.warnings.push(format!(
            "{} records were of no known shape and were skipped",
            stats.ignored
        ));
    }
    if report.orphan_comments > 0 {
        report.warnings.push(format!(
            "{} comments belong to issues that are neither in this import nor in the workspace; import the issues too",
            report.orphan_comments
        ));
    }
    exec(
        &tx,
        "UPDATE repos SET indexed_at = ?1 WHERE id = ?2",
        params![now(), repo.id],
    )
    .map_err(db_err("saving the import time"))?;
    tx.commit().map_err(db_err("saving the import"))?;
    on_event(IndexEvent::Progress {
        repo: repo.name.clone(),
        phase: IndexPhase::Import,
        done,
        total: done,
    });
    Ok(report)
}

fn issue_id(
    tx: &Transaction<'_>,
    repo_id: i64,
    number: i64,
) -> Result<Option<i64>, WorkspaceError> {
    query_one(
        tx,
        "SELECT id FROM issues WHERE repo_id = ?1 AND number = ?2",
        params![repo_id, number],
        |r| r.get(0),
    )
    .optional()
    .map_err(db_err("finding a comment's issue"))
}

fn insert_comment(tx: &Transaction<'_>, issue_id: i64, c: &Comment) -> Result<(), WorkspaceError> {
    exec(tx,
        "INSERT INTO comments (issue_id, kind, external_id, author, body, created_at, path, line, diff_hunk, review_state)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (issue_id, kind, external_id) DO UPDATE SET
            author = excluded.author, body = excluded.body, created_at = excluded.created_at,
            path = excluded.path, line = excluded.line, diff_hunk = excluded.diff_hunk,
            review_state = excluded.review_state",
        params![
            issue_id,
            c.kind,
            c.external_id,
            c.author,
            c.body,
            c.created_at,
            c.path,
            c.line,
            c.diff_hunk,
            c.review_state
        ],
    )
    .map_err(db_err("saving a comment"))?;
    Ok(())
}

fn upsert_item(
    tx: &Transaction<'_>,
    repo_id: i64,
    new: Item,
    report: &mut IndexReport,
) -> Result<i64, WorkspaceError> {
    let existing: Option<(i64, Item)> = tx
        .query_row(
            "SELECT id, is_pr, title, body, state, author, labels, created_at, updated_at, closed_at,
                    merged_at, url, base_ref, head_ref, draft
             FROM issues WHERE repo_id = ?1 AND number = ?2",
            params![repo_id, new.number],
            |r| {
                let labels: String = r.get(6)?;
                Ok((
                    r.get(0)?,
                    Item {
                        number: new.number,
                        is_pr: r.get(1)?,
                        title: r.get(2)?,
                        body: r.get(3)?,
                        state: r.get(4)?,
                        author: r.get(5)?,
                        labels: serde_json::from_str(&labels).ok(),
                        created_at: r.get(7)?,
                        updated_at: r.get(8)?,
                        closed_at: r.get(9)?,
                        merged_at: r.get(10)?,
                        url: r.get(11)?,
                        base_ref: r.get(12)?,
                        head_ref: r.get(13)?,
                        draft: r.get(14)?,
                    },
                ))
            },
        )
        .optional()
        .map_err(db_err("reading an issue"))?;
    let item = match existing {
        Some((_, mut old)) => {
            old.merge(new);
            old
        }
        None => new,
    };
    if item.is_pr {
        report.pull_requests += 1;
    } else {
        report.issues += 1;
    }
    let labels = serde_json::to_string(&item.labels.clone().unwrap_or_default())
        .unwrap_or_else(|_| "[]".into());
    query_one(tx,
        "INSERT INTO issues (repo_id, number, is_pr, title, body, state, author, labels, created_at,
                             updated_at, closed_at, merged_at, url, base_ref, head_ref, draft)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
         ON CONFLICT (repo_id, number) DO UPDATE SET
            is_pr = excluded.is_pr, title = excluded.title, body = excluded.body,
            state = excluded.state, author = excluded.author, labels = excluded.labels,
            created_at = excluded.created_at, updated_at = excluded.updated_at,
            closed_at = excluded.closed_at, merged_at = excluded.merged_at, url = excluded.url,
            base_ref = excluded.base_ref, head_ref = excluded.head_ref, draft = excluded.draft
         RETURNING id",
        params![
            repo_id,
            item.number,
            item.is_pr,
            item.title.unwrap_or_default(),
            item.body.unwrap_or_default(),
            item.state.unwrap_or_else(|| "open".into()),
            item.author.unwrap_or_else(|| "ghost".into()),
            labels,
            item.created_at,
            item.updated_at,
            item.closed_at,
            item.merged_at,
            item.url,
            item.base_ref,
            item.head_ref,
            item.draft.unwrap_or(false)
        ],
        |r| r.get(0),
    )
    .map_err(db_err("saving an issue"))
}

struct IssueRow {
    repo_id: i64,
    number: i64,
    is_pr: bool,
    title: String,
    body: String,
    state: String,
    author: String,
    labels: String,
    created: Option<i64>,
}

struct CommentRow {
    id: i64,
    kind: String,
    author: String,
    body: String,
    created: Option<i64>,
    path: Option<String>,
    line: Option<i64>,
}

/// Rebuilds the search entries of one issue or pull request and its comments.
fn reindex_issue(tx: &Transaction<'_>, issue_id: i64) -> Result<(), WorkspaceError> {
    let i: IssueRow = tx
        .query_row(
            "SELECT repo_id, number, is_pr, title, body, state, author, labels, created_at FROM issues WHERE id = ?1",
            [issue_id],
            |r| {
                Ok(IssueRow {
                    repo_id: r.get(0)?,
                    number: r.get(1)?,
                    is_pr: r.get(2)?,
                    title: r.get(3)?,
                    body: r.get(4)?,
                    state: r.get(5)?,
                    author: r.get(6)?,
                    labels: r.get(7)?,
                    created: r.get(8)?,
                })
            },
        )
        .map_err(db_err("reading an issue"))?;
    let kind = if i.is_pr { "pr" } else { "issue" };
    delete_docs(tx, "issue", issue_id)?;
    let heading = format!("#{} {}", i.number, i.title);
    exec(tx,
        "INSERT INTO docs (repo_id, kind, source, source_id, number, state, author, labels, time, title, body, terms)
         VALUES (?1, ?2, 'issue', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            i.repo_id,
            kind,
            issue_id,
            i.number,
            i.state,
            i.author,
            i.labels,
            i.created,
            heading,
            i.body,
            identifier_terms(&format!("{}\n{}", i.title, i.body))
        ],
    )
    .map_err(db_err("indexing an issue"))?;
    let mut stmt = tx
        .prepare("SELECT id, kind, author, body, created_at, path, line FROM comments WHERE issue_id = ?1")
        .map_err(db_err("reading comments"))?;
    let comments: Vec<CommentRow> = stmt
        .query_map([issue_id], |r| {
            Ok(CommentRow {
                id: r.get(0)?,
                kind: r.get(1)?,
                author: r.get(2)?,
                body: r.get(3)?,
                created: r.get(4)?,
                path: r.get(5)?,
                line: r.get(6)?,
            })
        })
        .map_err(db_err("reading comments"))?
        .collect::<Result<_, _>>()
        .map_err(db_err("reading comments"))?;
    for c in comments {
        delete_docs(tx, "comment", c.id)?;
        if c.body.trim().is_empty() {
            continue;
        }
        let location = match (&c.path, c.line) {
            (Some(p), Some(l)) => format!("{p}:{l}\n"),
            (Some(p), None) => format!("{p}\n"),
            _ => String::new(),
        };
        let what = match c.kind.as_str() {
            "review" => "review",
            "review_comment" => "review comment",
            _ => "comment",
        };
        exec(tx,
            "INSERT INTO docs (repo_id, kind, source, source_id, number, comment_id, state, author, labels, time, path, line, title, body, terms)
             VALUES (?1, ?2, 'comment', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                i.repo_id,
                kind,
                c.id,
                i.number,
                c.id,
                i.state,
                c.author,
                i.labels,
                c.created,
                c.path,
                c.line,
                format!("{heading} ({what})"),
                format!("{location}{}", c.body),
                identifier_terms(&c.body)
            ],
        )
        .map_err(db_err("indexing a comment"))?;
    }
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
