//! The local workspace: an index of the user's git repositories and imported issue trackers in
//! one SQLite database, and the queries the agent's tools run over it.

pub mod db;
pub mod git;
pub mod grep;
pub mod import;
pub mod index;
pub mod queries;
pub mod rank;
pub mod search;
pub mod text;
pub mod vectors;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::config::BurrowHome;

pub use index::{IndexEvent, IndexPhase, IndexReport};
pub use search::{day_start, Kind, SearchHit, SearchMode, SearchPage, SearchQuery};
pub use vectors::{EmbedProgress, EmbedReport, Embedder, QueryEmbedder, MAX_EMBED_TOKENS};

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("database error while {context}: {source}")]
    Database {
        context: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{}: the database was written by a newer Burrow (schema {found}; this build knows up to {supported})", path.display())]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("{path}: git: {reason}")]
    Git { path: PathBuf, reason: String },
    #[error("{path}: cannot import: {reason}")]
    Import { path: PathBuf, reason: String },
    #[error("{path}: not a folder")]
    NotAFolder { path: PathBuf },
    #[error("no repository named {name:?} in the workspace{}", if .known.is_empty() { String::new() } else { format!(" (known: {})", .known.join(", ")) })]
    UnknownRepo { name: String, known: Vec<String> },
    #[error("invalid repository slug {slug:?}: expected OWNER/NAME")]
    BadSlug { slug: String },
    #[error("invalid request: {0}")]
    BadQuery(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    Refused(String),
    /// SQLite's full-text search failed or lacks what Burrow needs (ours to fix, not the
    /// user's).
    #[error("full-text search: {0}")]
    Fts(String),
    /// The embedding model failed (search by meaning).
    #[error("embedding: {0}")]
    Embed(String),
}

impl WorkspaceError {
    /// Whether trying again may work (the database was busy or locked by another writer).
    pub fn is_transient(&self) -> bool {
        match self {
            WorkspaceError::Database { source, .. } => db::is_busy(source),
            WorkspaceError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
            ),
            _ => false,
        }
    }
}

pub(crate) fn db_err(context: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> WorkspaceError {
    let context = context.into();
    move |source| WorkspaceError::Database { context, source }
}

/// A repository (or an import-only tracker) in the workspace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repo {
    pub id: i64,
    pub name: String,
    /// The local checkout, when there is one.
    pub root: Option<PathBuf>,
    pub is_git: bool,
    /// owner/name, for imported issues.
    pub remote: Option<String>,
    pub status: String,
    pub error: Option<String>,
    pub indexed_at: Option<i64>,
    pub head: Option<String>,
}

/// A repository with its counts, for `workspace status`.
#[derive(Debug, Clone, Serialize)]
pub struct RepoStatus {
    #[serde(flatten)]
    pub repo: Repo,
    pub files: i64,
    pub skipped_files: i64,
    pub commits: i64,
    pub branches: i64,
    pub tags: i64,
    pub issues: i64,
    pub pull_requests: i64,
    pub comments: i64,
    pub documents: i64,
}

/// The workspace database. Cheap to share: searches and tool calls take the connection for the
/// length of one query; indexing uses a connection of its own, so the two never wait on each
/// other (WAL).
pub struct Workspace {
    db_path: PathBuf,
    conn: Mutex<Connection>,
    /// How many rows hold each phrase searched for lately (see `search::PhraseRows`).
    phrase_rows: Mutex<search::PhraseRows>,
    /// How many matches a search ranks at most (`search::RANK_ROWS`; smaller in tests).
    rank_rows: std::sync::atomic::AtomicUsize,
    /// Every unit's vector, for search by meaning (loaded on the first such search).
    vectors: Mutex<Option<vectors::VectorIndex>>,
    /// Gives searches by meaning their query's vector (none: searches rank by words).
    query_embedder: std::sync::RwLock<Option<Arc<dyn QueryEmbedder>>>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("db", &self.db_path)
            .finish()
    }
}

pub const DB_FILE: &str = "workspace.db";

impl Workspace {
    /// The workspace of a Burrow home (`$BURROW_HOME/workspace.db`).
    pub fn open(home: &BurrowHome) -> Result<Self, WorkspaceError> {
        Self::open_at(&home.path().join(DB_FILE))
    }

    pub fn open_at(db_path: &Path) -> Result<Self, WorkspaceError> {
        let conn = db::open(db_path)?;
        Ok(Workspace {
            db_path: db_path.to_path_buf(),
            conn: Mutex::new(conn),
            phrase_rows: Mutex::new(search::PhraseRows::default()),
            rank_rows: std::sync::atomic::AtomicUsize::new(search::RANK_ROWS),
            vectors: Mutex::new(None),
            query_embedder: std::sync::RwLock::new(None),
        })
    }

    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the connection cannot leave SQLite inconsistent (transactions
        // roll back), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new connection to the same database (for long writes).
    pub(crate) fn connect(&self) -> Result<Connection, WorkspaceError> {
        db::open(&self.db_path)
    }

    /// Adds a local folder (a git repository, or a plain folder). Adding it again returns the
    /// existing entry. A folder whose `origin` is a tracker already imported joins that entry.
    pub fn add_repo(&self, path: &Path, name: Option<&str>) -> Result<Repo, WorkspaceError> {
        let root = std::fs::canonicalize(path).map_err(|source| WorkspaceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if !root.is_dir() {
            return Err(WorkspaceError::NotAFolder { path: root });
        }
        let root_str = root.to_string_lossy().to_string();
        let conn = self.conn();
        if let Some(existing) = repo_where(&conn, "root = ?1", params![root_str])? {
            return Ok(existing);
        }
        let git = git::GitRepo::open(&root)?;
        let slug = git.as_ref().and_then(|g| g.origin_slug());
        let default_name = root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| root_str.clone());
        let name = name.map(str::to_string).unwrap_or(default_name);
        if let Some(slug) = &slug {
            if let Some(r) = repo_where(
                &conn,
                "remote = ?1 COLLATE NOCASE AND root IS NULL",
                params![slug],
            )? {
                conn.execute(
                    "UPDATE repos SET root = ?1, is_git = 1 WHERE id = ?2",
                    params![root_str, r.id],
                )
                .map_err(db_err("attaching a folder to an imported repository"))?;
                return repo_where(&conn, "id = ?1", params![r.id])?
                    .ok_or_else(|| WorkspaceError::Refused("the repository vanished".into()));
            }
        }
        let name = unique_name(&conn, &name)?;
        let slug_free = match &slug {
            Some(s) => repo_where(&conn, "remote = ?1 COLLATE NOCASE", params![s])?.is_none(),
            None => false,
        };
        conn.execute(
            "INSERT INTO repos (name, root, is_git, remote, added_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                name,
                root_str,
                git.is_some(),
                if slug_free { slug } else { None },
                now()
            ],
        )
        .map_err(db_err("adding a repository"))?;
        let id = conn.last_insert_rowid();
        repo_where(&conn, "id = ?1", params![id])?
            .ok_or_else(|| WorkspaceError::Refused("the repository vanished".into()))
    }

    /// The repository an import of `slug` (owner/name) attaches to, created if needed.
    pub fn repo_for_slug(&self, slug: &str) -> Result<Repo, WorkspaceError> {
        index::check_slug(slug)?;
        let conn = self.conn();
        if let Some(r) = repo_where(&conn, "remote = ?1 COLLATE NOCASE", params![slug])? {
            return Ok(r);
        }
        let name = unique_name(&conn, slug)?;
        conn.execute(
            "INSERT INTO repos (name, remote, added_at, status) VALUES (?1, ?2, ?3, 'ready')",
            params![name, slug, now()],
        )
        .map_err(db_err("adding an imported repository"))?;
        let id = conn.last_insert_rowid();
        repo_where(&conn, "id = ?1", params![id])?
            .ok_or_else(|| WorkspaceError::Refused("the repository vanished".into()))
    }

    pub fn repos(&self) -> Result<Vec<Repo>, WorkspaceError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!("SELECT {REPO_COLUMNS} FROM repos ORDER BY name"))
            .map_err(db_err("listing repositories"))?;
        let rows = stmt
            .query_map([], repo_from_row)
            .map_err(db_err("listing repositories"))?;
        let mut repos: Vec<Repo> = rows
            .collect::<Result<_, _>>()
            .map_err(db_err("listing repositories"))?;
        for repo in &mut repos {
            self.settle_status(repo)?;
        }
        Ok(repos)
    }

    /// A repository left "indexing" by a run whose process died (its lock is free) is shown as
    /// interrupted, not as indexing until the next run (issue 17).
    fn settle_status(&self, repo: &mut Repo) -> Result<(), WorkspaceError> {
        if repo.status != "indexing" {
            return Ok(());
        }
        if index::FileLock::try_acquire(&self.db_path, &index::repo_lock_key(repo.id))?.is_some() {
            repo.status = "interrupted".into();
            repo.error = Some(
                "indexing stopped before it finished (its process ended); \
                 index it again to finish"
                    .into(),
            );
        }
        Ok(())
    }

    /// A repository by name, owner/name, or path.
    pub fn repo(&self, name: &str) -> Result<Repo, WorkspaceError> {
        let conn = self.conn();
        let by_path = std::fs::canonicalize(name)
            .ok()
            .map(|p| p.to_string_lossy().to_string());
        let found = repo_where(
            &conn,
            "name = ?1 OR remote = ?1 COLLATE NOCASE OR root = ?2",
            params![name, by_path.unwrap_or_default()],
        )?;
        drop(conn);
        match found {
            Some(mut r) => {
                self.settle_status(&mut r)?;
                Ok(r)
            }
            None => Err(WorkspaceError::UnknownRepo {
                name: name.to_string(),
                known: self.repos()?.into_iter().map(|r| r.name).collect(),
            }),
        }
    }

    pub fn status(&self) -> Result<Vec<RepoStatus>, WorkspaceError> {
        let repos = self.repos()?;
        let conn = self.conn();
        let count = |sql: &str, id: i64| -> Result<i64, WorkspaceError> {
            conn.query_row(sql, [id], |r| r.get(0))
                .map_err(db_err("counting"))
        };
        let mut out = Vec::new();
        for repo in repos {
            let id = repo.id;
            out.push(RepoStatus {
                files: count("SELECT count(*) FROM files WHERE repo_id = ?1", id)?,
                skipped_files: count("SELECT count(*) FROM skipped_files WHERE repo_id = ?1", id)?,
                commits: count("SELECT count(*) FROM commits WHERE repo_id = ?1", id)?,
                branches: count("SELECT count(*) FROM refs WHERE repo_id = ?1 AND kind = 'branch'", id)?,
                tags: count("SELECT count(*) FROM refs WHERE repo_id = ?1 AND kind = 'tag'", id)?,
                issues: count("SELECT count(*) FROM issues WHERE repo_id = ?1 AND is_pr = 0", id)?,
                pull_requests: count("SELECT count(*) FROM issues WHERE repo_id = ?1 AND is_pr = 1", id)?,
                comments: count(
                    "SELECT count(*) FROM comments c JOIN issues i ON i.id = c.issue_id WHERE i.repo_id = ?1",
                    id,
                )?,
                documents: count("SELECT count(*) FROM docs WHERE repo_id = ?1", id)?,
                repo,
            });
        }
        Ok(out)
    }
}

const REPO_COLUMNS: &str = "id, name, root, is_git, remote, status, error, indexed_at, head";

fn repo_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Repo> {
    Ok(Repo {
        id: r.get(0)?,
        name: r.get(1)?,
        root: r.get::<_, Option<String>>(2)?.map(PathBuf::from),
        is_git: r.get(3)?,
        remote: r.get(4)?,
        status: r.get(5)?,
        error: r.get(6)?,
        indexed_at: r.get(7)?,
        head: r.get(8)?,
    })
}

pub(crate) fn repo_where(
    conn: &Connection,
    condition: &str,
    params: impl rusqlite::Params,
) -> Result<Option<Repo>, WorkspaceError> {
    conn.query_row(
        &format!("SELECT {REPO_COLUMNS} FROM repos WHERE {condition}"),
        params,
        repo_from_row,
    )
    .optional()
    .map_err(db_err("finding a repository"))
}

/// `name`, or `name-2`, `name-3`... if taken.
pub(crate) fn unique_name(conn: &Connection, name: &str) -> Result<String, WorkspaceError> {
    let mut candidate = name.to_string();
    let mut n = 1;
    while repo_where(conn, "name = ?1", params![candidate])?.is_some() {
        n += 1;
        candidate = format!("{name}-{n}");
    }
    Ok(candidate)
}

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
