//! The SQLite database: connection settings and append-only migrations keyed on `user_version`
//! (as cargo keeps its own caches). A migration, once released, never changes: changes to the
//! schema are new migrations appended to the list.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::WorkspaceError;

/// The schema, one migration per entry; `user_version` is the number applied.
const MIGRATIONS: &[&str] = &[
    // 1: repositories, files, commits, issues and pull requests, and the search index.
    r#"
    CREATE TABLE repos (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        -- Absolute path of a local checkout; NULL for a repository known only by imports.
        root TEXT UNIQUE,
        is_git INTEGER NOT NULL DEFAULT 0,
        -- owner/name, for imported issues and pull requests.
        remote TEXT UNIQUE,
        added_at INTEGER NOT NULL,
        indexed_at INTEGER,
        head TEXT,
        status TEXT NOT NULL DEFAULT 'new',
        error TEXT
    );

    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        language TEXT,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        hash TEXT NOT NULL,
        lines INTEGER NOT NULL,
        UNIQUE (repo_id, path)
    );

    -- Files seen but not indexed, and why (binary, too large, unreadable, not UTF-8).
    CREATE TABLE skipped_files (
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (repo_id, path)
    );

    CREATE TABLE commits (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        hash TEXT NOT NULL,
        author_name TEXT NOT NULL,
        author_email TEXT NOT NULL,
        time INTEGER NOT NULL,
        summary TEXT NOT NULL,
        message TEXT NOT NULL,
        parents TEXT NOT NULL,
        UNIQUE (repo_id, hash)
    );
    CREATE INDEX commits_time ON commits (repo_id, time);
    CREATE INDEX commits_author ON commits (repo_id, author_email);

    CREATE TABLE commit_files (
        commit_id INTEGER NOT NULL REFERENCES commits(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        change TEXT NOT NULL,
        additions INTEGER NOT NULL,
        deletions INTEGER NOT NULL
    );
    CREATE INDEX commit_files_commit ON commit_files (commit_id);
    CREATE INDEX commit_files_path ON commit_files (path);

    CREATE TABLE refs (
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        PRIMARY KEY (repo_id, name)
    );

    -- Issues and pull requests (is_pr); GitHub numbers them in one sequence per repository.
    CREATE TABLE issues (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        number INTEGER NOT NULL,
        is_pr INTEGER NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        state TEXT NOT NULL,
        author TEXT NOT NULL,
        labels TEXT NOT NULL,
        created_at INTEGER,
        updated_at INTEGER,
        closed_at INTEGER,
        merged_at INTEGER,
        url TEXT,
        base_ref TEXT,
        head_ref TEXT,
        draft INTEGER NOT NULL DEFAULT 0,
        UNIQUE (repo_id, number)
    );

    -- Comments on issues and pull requests, reviews, and review comments on the diff.
    CREATE TABLE comments (
        id INTEGER PRIMARY KEY,
        issue_id INTEGER NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        external_id TEXT NOT NULL,
        author TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER,
        path TEXT,
        line INTEGER,
        diff_hunk TEXT,
        review_state TEXT,
        UNIQUE (issue_id, kind, external_id)
    );
    CREATE INDEX comments_issue ON comments (issue_id, created_at);

    -- Everything searchable, one row per unit: a chunk of a source file, a section of a document,
    -- a commit, an issue or pull request, or one of their comments. `source` and `source_id`
    -- point at the row the unit was made from, so re-indexing it replaces its units.
    CREATE TABLE docs (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        source TEXT NOT NULL,
        source_id INTEGER NOT NULL,
        path TEXT,
        line INTEGER,
        number INTEGER,
        comment_id INTEGER,
        hash TEXT,
        state TEXT,
        author TEXT,
        labels TEXT,
        time INTEGER,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        terms TEXT NOT NULL
    );
    CREATE INDEX docs_source ON docs (source, source_id);
    CREATE INDEX docs_repo_kind ON docs (repo_id, kind);

    CREATE VIRTUAL TABLE docs_fts USING fts5(
        title, body, terms,
        content = 'docs', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
        INSERT INTO docs_fts (rowid, title, body, terms) VALUES (new.id, new.title, new.body, new.terms);
    END;
    CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
        INSERT INTO docs_fts (docs_fts, rowid, title, body, terms)
        VALUES ('delete', old.id, old.title, old.body, old.terms);
    END;
    CREATE TRIGGER docs_au AFTER UPDATE ON docs BEGIN
        INSERT INTO docs_fts (docs_fts, rowid, title, body, terms)
        VALUES ('delete', old.id, old.title, old.body, old.terms);
        INSERT INTO docs_fts (rowid, title, body, terms) VALUES (new.id, new.title, new.body, new.terms);
    END;
    "#,
];

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
    configure(&conn)?;
    migrate(&conn)?;
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
    // WAL: readers (search, the agent's tools) never wait for the indexer, and a killed process
    // leaves a consistent database. NORMAL synchronous is durable at each checkpoint and
    // crash-safe, at a fraction of FULL's fsyncs.
    conn.busy_timeout(Duration::from_secs(30))
        .and_then(|_| {
            conn.execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = NORMAL;
                 PRAGMA foreign_keys = ON;
                 PRAGMA temp_store = MEMORY;",
            )
        })
        .map_err(|e| WorkspaceError::Database {
            context: "configuring the connection".into(),
            source: e,
        })
}

/// Applies the migrations this database has not seen, each in its own transaction.
pub fn migrate(conn: &Connection) -> Result<(), WorkspaceError> {
    let db_err = |context: String| move |source| WorkspaceError::Database { context, source };
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db_err("reading the schema version".into()))?;
    if version > latest_version() {
        return Err(WorkspaceError::NewerSchema {
            found: version,
            supported: latest_version(),
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let to = i as i64 + 1;
        let batch = format!("BEGIN IMMEDIATE;\n{sql}\nPRAGMA user_version = {to};\nCOMMIT;");
        if let Err(e) = conn.execute_batch(&batch) {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(WorkspaceError::Database {
                context: format!("migrating the schema to version {to}"),
                source: e,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_in_memory_and_are_idempotent() {
        let conn = open_in_memory().unwrap();
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, latest_version());
        // Running them again changes nothing.
        migrate(&conn).unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for t in [
            "repos", "files", "commits", "issues", "comments", "docs", "docs_fts",
        ] {
            assert!(tables.iter().any(|x| x == t), "{t} in {tables:?}");
        }
    }

    #[test]
    fn fts5_search_follows_the_content_table() {
        let conn = open_in_memory().unwrap();
        conn.execute("INSERT INTO repos (name, added_at) VALUES ('r', 0)", [])
            .unwrap();
        conn.execute(
            "INSERT INTO docs (repo_id, kind, source, source_id, title, body, terms)
             VALUES (1, 'code', 'file', 1, 'main.rs', 'fn parse_args() {}', 'parse args parseargs')",
            [],
        )
        .unwrap();
        let hits = |q: &str| -> i64 {
            conn.query_row(
                "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?1",
                [q],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(hits("parse"), 1);
        assert_eq!(hits("parseargs"), 1);
        conn.execute("DELETE FROM docs", []).unwrap();
        assert_eq!(hits("parse"), 0, "deleting a doc removes it from the index");
    }

    #[test]
    fn a_newer_database_is_refused() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA user_version = 999").unwrap();
        assert!(matches!(
            migrate(&conn),
            Err(WorkspaceError::NewerSchema { found: 999, .. })
        ));
    }

    #[test]
    fn a_failed_migration_leaves_the_old_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        // A table that the first migration will try to create: it fails, and nothing of it stays.
        conn.execute_batch("CREATE TABLE repos (x INTEGER)")
            .unwrap();
        assert!(migrate(&conn).is_err());
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 0);
        let files: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'files'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(files, 0);
    }
}
