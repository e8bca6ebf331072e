//! The SQLite database: connection settings and append-only migrations keyed on `user_version`
//! (as cargo keeps its own caches). A migration, once released, never changes: changes to the
//! schema are new migrations appended to the list.

mod migrations;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use super::WorkspaceError;
use migrations::MIGRATIONS;

/// Whether SQLite refused for another connection's lock (trying again may work).
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// How long a statement waits for another connection's write lock before failing as busy.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The schema version this build writes.
pub fn latest_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Opens (creating if needed) the database at `path`, with the settings every connection needs,
/// and brings its schema up to date.
pub fn open(path: &Path) -> Result<Connection, WorkspaceError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| WorkspaceError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let conn = Connection::open(path).map_err(|e| WorkspaceError::Database {
        context: format!("opening {}", path.display()),
        source: e,
    })?;
    // Which file failed is said: "file is not a database" alone named none.
    let named = |e: WorkspaceError| match e {
        WorkspaceError::Database { context, source } => WorkspaceError::Database {
            context: format!("{context} of {}", path.display()),
            source,
        },
        WorkspaceError::NewerSchema {
            found, supported, ..
        } => WorkspaceError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported,
        },
        other => other,
    };
    configure(&conn).map_err(named)?;
    migrate(&conn).map_err(named)?;
    Ok(conn)
}

/// An in-memory database with the full schema (tests).
pub fn open_in_memory() -> Result<Connection, WorkspaceError> {
    let conn = Connection::open_in_memory().map_err(|e| WorkspaceError::Database {
        context: "opening an in-memory database".into(),
        source: e,
    })?;
    configure(&conn)?;
    migrate(&conn)?;
    Ok(conn)
}

fn configure(conn: &Connection) -> Result<(), WorkspaceError> {
    // Indexing runs a few dozen distinct statements per row kind; all of them stay compiled.
    conn.set_prepared_statement_cache_capacity(64);
    // WAL: readers (search, the agent's tools) never wait for the indexer, and a killed process
    // leaves a consistent database. NORMAL synchronous is durable at each checkpoint and
    // crash-safe, at a fraction of FULL's fsyncs.
    conn.busy_timeout(BUSY_TIMEOUT)
        .and_then(|_| wal(conn))
        .and_then(|_| {
            conn.execute_batch(
                "PRAGMA synchronous = NORMAL;
                 PRAGMA foreign_keys = ON;
                 PRAGMA temp_store = MEMORY;
                 PRAGMA journal_size_limit = 67108864;",
            )
        })
        .map_err(|e| WorkspaceError::Database {
            context: "configuring the connection".into(),
            source: e,
        })?;
    super::rank::register(conn)?;
    register_abbreviations(conn)
}

/// `burrow_abbreviations(title, body)`: the abbreviations a unit defines
/// (`text::abbreviations`), as a JSON array of `[abbreviation, long form]` pairs, or NULL for
/// none. The triggers of migration 9 keep the `abbreviations` table with it, so every way a
/// unit is written (files, commits, issues, imports) records them, and no other SQLite client
/// can write a unit without Burrow's functions (nor rank one: `burrow_rank`).
fn register_abbreviations(conn: &Connection) -> Result<(), WorkspaceError> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "burrow_abbreviations",
        2,
        // Innocuous: no side effects, so the triggers run it under `trusted_schema = OFF` too.
        FunctionFlags::SQLITE_UTF8
            | FunctionFlags::SQLITE_DETERMINISTIC
            | FunctionFlags::SQLITE_INNOCUOUS,
        |ctx| {
            let mut found = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for i in 0..2 {
                let text = ctx.get_raw(i).as_str().unwrap_or("");
                for pair in super::text::abbreviations(text) {
                    if seen.insert(pair.clone()) {
                        found.push(pair);
                    }
                }
            }
            Ok((!found.is_empty()).then(|| serde_json::json!(found).to_string()))
        },
    )
    .map_err(|e| WorkspaceError::Database {
        context: "registering burrow_abbreviations".into(),
        source: e,
    })
}

/// Switches a new database to WAL. The switch needs the database to itself and SQLite does not
/// wait for it (no busy handler): commands started together on a fresh home failed with
/// "database is locked" (issue 17), so it is tried again for as long as the busy timeout.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())) {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Applies the migrations this database has not seen, each in its own transaction.
pub fn migrate(conn: &Connection) -> Result<(), WorkspaceError> {
    migrate_to(conn, latest_version())
}

/// The schema version the database is at, refused when a newer build wrote it.
fn schema_version(conn: &Connection) -> Result<i64, WorkspaceError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|source| WorkspaceError::Database {
            context: "reading the schema version".into(),
            source,
        })?;
    if version > latest_version() {
        return Err(WorkspaceError::NewerSchema {
            path: PathBuf::new(),
            found: version,
            supported: latest_version(),
        });
    }
    Ok(version)
}

fn migrate_to(conn: &Connection, target: i64) -> Result<(), WorkspaceError> {
    let db_err = |context: String| move |source| WorkspaceError::Database { context, source };
    // Up to date, the usual case: no write lock, so opening never waits for an indexer.
    if schema_version(conn)? >= target {
        return Ok(());
    }
    // Several commands started at once on a fresh home all find version 0. The version is read
    // again inside each migration's write transaction, so a migration another process applied
    // while this one waited for the lock is skipped instead of failing ("table repos already
    // exists", issue 17).
    loop {
        conn.execute_batch("BEGIN IMMEDIATE")
            .map_err(db_err("locking the database to migrate its schema".into()))?;
        let step = (|| {
            let version = schema_version(conn)?;
            let Some(sql) = MIGRATIONS
                .get(version as usize)
                .filter(|_| version < target)
            else {
                return Ok(false);
            };
            let to = version + 1;
            conn.execute_batch(&format!("{sql}\nPRAGMA user_version = {to};"))
                .map_err(db_err(format!("migrating the schema to version {to}")))?;
            Ok(true)
        })();
        match step {
            Ok(more) => {
                conn.execute_batch("COMMIT")
                    .map_err(db_err("saving the migrated schema".into()))?;
                if !more {
                    return Ok(());
                }
            }
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
    }
}
