//! The SQLite database: connection settings and append-only migrations keyed on `user_version`
//! (as cargo keeps its own caches). A migration, once released, never changes: changes to the
//! schema are new migrations appended to the list.

use std::path::{Path, PathBuf};
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
    // 2: the filters move into the full-text index. Repository, kind, state, author and labels
    // become tokens of a `facets` column, so a filtered search intersects posting lists instead
    // of joining every match to `docs` and discarding most of them. A value is spelled as the
    // hex of its lowercase bytes with A and E written Q and Z: that alphabet (digits, b c d f q
    // z) has no vowel, `s`, `l` or `y`, so the porter stemmer the index runs leaves every such
    // token as it is. `facet_token` in search/query.rs spells them the same way. The index keeps no
    // content: search reads the text from `docs` (FTS5 cannot read an external content that
    // needs json_each, and nothing needs FTS5's own copy).
    r#"
    DROP TRIGGER docs_ai;
    DROP TRIGGER docs_ad;
    DROP TRIGGER docs_au;
    DROP TABLE docs_fts;
    CREATE VIEW docs_fts_source AS
    SELECT id, title, body, terms,
        'k' || replace(replace(hex(lower(kind)), 'A', 'Q'), 'E', 'Z')
        || ' r' || repo_id
        || CASE WHEN coalesce(state, '') <> ''
            THEN ' t' || replace(replace(hex(lower(state)), 'A', 'Q'), 'E', 'Z') ELSE '' END
        || CASE WHEN coalesce(author, '') <> ''
            THEN ' h' || replace(replace(hex(lower(author)), 'A', 'Q'), 'E', 'Z') ELSE '' END
        || CASE WHEN json_valid(labels) THEN coalesce((
            SELECT ' ' || group_concat('g' || replace(replace(hex(lower(value)), 'A', 'Q'), 'E', 'Z'), ' ')
            FROM json_each(labels) WHERE type = 'text' AND value <> ''), '') ELSE '' END
        AS facets
    FROM docs;
    CREATE VIRTUAL TABLE docs_fts USING fts5(
        title, body, terms, facets,
        content = '', contentless_delete = 1,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
        INSERT INTO docs_fts (rowid, title, body, terms, facets)
        SELECT id, title, body, terms, facets FROM docs_fts_source WHERE id = new.id;
    END;
    CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
        DELETE FROM docs_fts WHERE rowid = old.id;
    END;
    CREATE TRIGGER docs_au AFTER UPDATE ON docs BEGIN
        DELETE FROM docs_fts WHERE rowid = old.id;
        INSERT INTO docs_fts (rowid, title, body, terms, facets)
        SELECT id, title, body, terms, facets FROM docs_fts_source WHERE id = new.id;
    END;
    INSERT INTO docs_fts (rowid, title, body, terms, facets)
    SELECT id, title, body, terms, facets FROM docs_fts_source;
    -- How many rows hold each term: search weighs words by it (see rank.rs).
    CREATE VIRTUAL TABLE docs_vocab USING fts5vocab(docs_fts, 'row');
    "#,
    // 3: agent runs and their steps. The agent owns these tables (agent/store.rs); their
    // schema is kept beside that code and included here, as the one sequence of migrations
    // needs every part in order.
    include_str!("../agent/runs.sql"),
    // 4: search by meaning. A vector per searchable unit (`docs` row), kept by the hash of the
    // text it was made from, so a unit re-indexed with the same text keeps its vector and the
    // same text in two units is embedded once. `embedding_model` names the model the vectors
    // came from: another model's vectors are never compared with them (its change clears them).
    r#"
    CREATE TABLE embedding_model (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        name TEXT NOT NULL,
        dimension INTEGER NOT NULL,
        -- Counts the passes that changed the vectors, so searches know to reload them.
        generation INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE vectors (
        hash BLOB PRIMARY KEY,
        -- `dimension` little-endian f32, unit length.
        vec BLOB NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE doc_vectors (
        doc_id INTEGER PRIMARY KEY REFERENCES docs(id) ON DELETE CASCADE,
        hash BLOB NOT NULL
    );
    CREATE INDEX doc_vectors_hash ON doc_vectors (hash);
    -- Which pull request fixed which issue, where the data says so: the pull request's text
    -- says "fixes #N" (or closes, resolves), or the issue was closed by its merge commit.
    ALTER TABLE issues ADD COLUMN merge_commit TEXT;
    ALTER TABLE issues ADD COLUMN closed_by TEXT;
    CREATE TABLE links (
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        issue INTEGER NOT NULL,
        pr INTEGER NOT NULL,
        -- 'fixes' (the pull request says so) or 'merge' (its merge commit closed the issue).
        how TEXT NOT NULL,
        PRIMARY KEY (repo_id, issue, pr, how)
    );
    CREATE INDEX links_pr ON links (repo_id, pr);
    CREATE INDEX issues_merge_commit ON issues (repo_id, merge_commit)
        WHERE merge_commit IS NOT NULL;
    -- A linked pull request's unit, found by number (search, for each issue it ranks).
    CREATE INDEX docs_number ON docs (repo_id, number) WHERE number IS NOT NULL;
    "#,
    // 5: a counter of changes to the vectors, kept by triggers, so a search knows whether the
    // vectors it holds in memory are current from one row. It counted and summed every
    // `doc_vectors` row, up to four times a search: 5-10 ms over a 100,000-issue import.
    r#"
    CREATE TABLE vector_changes (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        n INTEGER NOT NULL
    );
    INSERT INTO vector_changes (id, n) VALUES (1, 0);
    CREATE TRIGGER doc_vectors_changes_ai AFTER INSERT ON doc_vectors BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER doc_vectors_changes_ad AFTER DELETE ON doc_vectors BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER doc_vectors_changes_au AFTER UPDATE ON doc_vectors BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_model_changes_ai AFTER INSERT ON embedding_model BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_model_changes_ad AFTER DELETE ON embedding_model BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_model_changes_au AFTER UPDATE ON embedding_model BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    "#,
    // 6: a counter of changes to the searchable units, kept by triggers. Search keeps the row
    // counts of the words and kinds it ranks by while the units are unchanged; it took any
    // commit (the vectors an embedding pass writes, each step of an agent run) for a change
    // of the units and counted again (a kind of 100,000 issues: about 15 ms a search).
    r#"
    CREATE TABLE docs_changes (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        n INTEGER NOT NULL
    );
    INSERT INTO docs_changes (id, n) VALUES (1, 0);
    CREATE TRIGGER docs_changes_ai AFTER INSERT ON docs BEGIN
        UPDATE docs_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER docs_changes_ad AFTER DELETE ON docs BEGIN
        UPDATE docs_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER docs_changes_au AFTER UPDATE ON docs BEGIN
        UPDATE docs_changes SET n = n + 1 WHERE id = 1;
    END;
    "#,
    // 7: a code file in several units gains one more, its outline (`text::outline_unit`), so
    // every file is cut again at the next index, as if changed. Its parts keep their vectors
    // (kept by their text's hash): an embedding pass gives the outlines theirs.
    r#"
    UPDATE files SET mtime_ns = -1, hash = '';
    "#,
    // 8: what a code unit is of its file (`text::Role`: 0 a part, 1 its outline, 2 a file of
    // one unit) is stored by the indexer, where it was read back from titles (an outline's
    // title differs from its path) and sibling rows in three places. Rows indexed before are
    // given theirs by that rule, once. Only the outlines and whole files are updated (about
    // one row a file): every row updated is taken out of the words index and put back by
    // `docs_au`, and the parts keep 0.
    r#"
    ALTER TABLE docs ADD COLUMN role INTEGER NOT NULL DEFAULT 0;
    UPDATE docs SET role = CASE WHEN title <> path THEN 1 ELSE 2 END
    WHERE kind = 'code' AND (title <> path OR NOT EXISTS (SELECT 1 FROM docs o
        WHERE o.source = docs.source AND o.source_id = docs.source_id AND o.id <> docs.id));
    "#,
    // 9: the abbreviations each unit defines ("Byte-Order Mark (BOM)"), so that a search for
    // one finds the other, read once per change to the units rather than looked for in the
    // text at each query. Kept with the units by triggers (`burrow_abbreviations`); the units
    // indexed before get theirs here.
    r#"
    CREATE TABLE abbreviations (
        doc_id INTEGER NOT NULL,
        abbr TEXT NOT NULL,
        long TEXT NOT NULL
    );
    CREATE INDEX abbreviations_doc ON abbreviations (doc_id);
    CREATE TRIGGER abbreviations_ai AFTER INSERT ON docs BEGIN
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body));
    END;
    CREATE TRIGGER abbreviations_ad AFTER DELETE ON docs BEGIN
        DELETE FROM abbreviations WHERE doc_id = old.id;
    END;
    CREATE TRIGGER abbreviations_au AFTER UPDATE OF title, body ON docs BEGIN
        DELETE FROM abbreviations WHERE doc_id = old.id;
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body));
    END;
    INSERT INTO abbreviations (doc_id, abbr, long)
    SELECT d.id, j.value ->> 0, j.value ->> 1
    FROM docs d, json_each(burrow_abbreviations(d.title, d.body)) j;
    "#,
    // 10: what the embedding model's file holds (`Embedder::fingerprint`), beside its name:
    // another file of the same name (llama.cpp's default `ggml-model-f16.gguf`, a file
    // replaced in place) passed for the model the vectors came from. Vectors kept from before
    // have none; the next pass of that name records its own.
    r#"
    ALTER TABLE embedding_model ADD COLUMN fingerprint TEXT;
    "#,
    // 11: a pass of another model writes here until it has a vector for every unit, then
    // takes the place of the vectors above in one transaction: switching models cleared them
    // first, and a pass stopped half way (Ctrl-C, a crash) left neither model's set whole.
    r#"
    CREATE TABLE next_embedding_model (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        name TEXT NOT NULL,
        dimension INTEGER NOT NULL,
        fingerprint TEXT
    );
    CREATE TABLE next_vectors (
        hash BLOB PRIMARY KEY,
        vec BLOB NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE next_doc_vectors (
        doc_id INTEGER PRIMARY KEY REFERENCES docs(id) ON DELETE CASCADE,
        hash BLOB NOT NULL
    );
    "#,
    // 12: how many rows hold each term in each column, so that search can tell a name written
    // as one word in the text (`.agignore`, `-debuglogfile`) from the joined form of an
    // identifier's parts the index adds to the `terms` column (`compressed_gzip`), whose
    // parts match already (`search::compound`).
    r#"
    CREATE VIRTUAL TABLE docs_vocab_col USING fts5vocab(docs_fts, 'col');
    "#,
    // 13: a commit is searched by the lines it changed as well as by its message (a second
    // unit, `text::Role::Changes`). The commits indexed before have none yet: the next index
    // of their repository reads them (`changes_read`), and their messages stay searchable
    // meanwhile.
    // The lines hold the abbreviations of files as they were ("Byte-Order Mark (BOM)" in a
    // line a commit removed), and the workspace defines only what its text does now: those
    // units define none.
    r#"
    ALTER TABLE commits ADD COLUMN changes_read INTEGER NOT NULL DEFAULT 0;
    DROP TRIGGER abbreviations_ai;
    DROP TRIGGER abbreviations_au;
    CREATE TRIGGER abbreviations_ai AFTER INSERT ON docs WHEN new.role <> 3 BEGIN
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body));
    END;
    CREATE TRIGGER abbreviations_au AFTER UPDATE OF title, body ON docs BEGIN
        DELETE FROM abbreviations WHERE doc_id = old.id;
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body))
        WHERE new.role <> 3;
    END;
    "#,
];

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
    fn version_1_data_is_reindexed_with_facets_by_migration_2() {
        let conn = Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        migrate_to(&conn, 1).unwrap();
        conn.execute_batch(
            "INSERT INTO repos (name, added_at) VALUES ('r', 0);
             INSERT INTO docs (repo_id, kind, source, source_id, number, state, author, labels,
                               title, body, terms)
             VALUES (1, 'issue', 'issue', 1, 7, 'open', 'Alice', '[\"Bug\", \"GUI\"]',
                     'Crash', 'wallet crashes', '');",
        )
        .unwrap();
        migrate(&conn).unwrap();
        let count = |q: &str| -> i64 {
            conn.query_row(
                "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?1",
                [q],
                |r| r.get(0),
            )
            .unwrap()
        };
        use crate::workspace::search::facet_token;
        let f = |p, v| format!("facets : \"{}\"", facet_token(p, v));
        assert_eq!(count("wallet"), 1, "the old rows are in the new index");
        assert_eq!(count(&format!("wallet AND {}", f('h', "alice"))), 1);
        assert_eq!(count(&format!("wallet AND {}", f('g', "gui"))), 1);
        assert_eq!(count(&format!("wallet AND {}", f('g', "bug"))), 1);
        assert_eq!(count(&format!("wallet AND {}", f('t', "open"))), 1);
        assert_eq!(count(&format!("wallet AND {}", f('k', "issue"))), 1);
        assert_eq!(count("wallet AND facets : \"r1\""), 1);
        assert_eq!(count(&format!("wallet AND {}", f('t', "closed"))), 0);
        assert_eq!(count(&format!("wallet AND {}", f('k', "pr"))), 0);
        // Searches for words name the text columns, so a word never matches a facet.
        assert_eq!(count(&facet_token('h', "alice")), 1);
        assert_eq!(
            count(&format!(
                "{{title body terms}} : ({})",
                facet_token('h', "alice")
            )),
            0
        );
        conn.execute("UPDATE docs SET state = 'closed'", [])
            .unwrap();
        assert_eq!(count(&format!("wallet AND {}", f('t', "open"))), 0);
        assert_eq!(count(&format!("wallet AND {}", f('t', "closed"))), 1);
        conn.execute("DELETE FROM docs", []).unwrap();
        assert_eq!(count("wallet"), 0);
    }

    #[test]
    fn facet_values_are_matched_exactly_whatever_their_spelling() {
        let conn = open_in_memory().unwrap();
        conn.execute("INSERT INTO repos (name, added_at) VALUES ('r', 0)", [])
            .unwrap();
        // Values a stemmer would fold together if they were words, and ones outside ASCII.
        let values = [
            "jo",
            "joed",
            "jos",
            "josses",
            "joing",
            "e",
            "ee",
            "a",
            "Connect",
            "connected",
            "connection",
            "ÄÖ–ü",
            "äö–ü",
            "bug fix",
            "bug",
            "fix",
            "a-b_c",
            "dependabot[bot]",
        ];
        for (i, v) in values.iter().enumerate() {
            conn.execute(
                "INSERT INTO docs (repo_id, kind, source, source_id, author, title, body, terms)
                 VALUES (1, 'issue', 'issue', ?1, ?2, 't', 'same words', '')",
                rusqlite::params![i as i64, v],
            )
            .unwrap();
        }
        for (i, v) in values.iter().enumerate() {
            let token = crate::workspace::search::facet_token('h', v);
            let ids: Vec<i64> = conn
                .prepare("SELECT docs.source_id FROM docs_fts JOIN docs ON docs.id = docs_fts.rowid WHERE docs_fts MATCH ?1")
                .unwrap()
                .query_map([format!("facets : \"{token}\"")], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            // SQLite folds ASCII case only: "Connect" and "connect" would be one author, the
            // two spellings of ÄÖ–Ü are two.
            assert_eq!(ids, vec![i as i64], "{v:?} as {token}");
        }
    }

    /// Migration 8 gives rows indexed before it the role the indexer now stores: a code unit
    /// titled other than its path is an outline, one with no sibling is a whole file.
    #[test]
    fn units_indexed_before_roles_were_stored_get_theirs() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        migrate_to(&conn, 7).unwrap();
        conn.execute("INSERT INTO repos (name, added_at) VALUES ('r', 0)", [])
            .unwrap();
        for (kind, source_id, path, title) in [
            ("code", 1, "a.rs", "a.rs"),
            ("code", 1, "a.rs", "a.rs"),
            ("code", 1, "a.rs", "a.rs (outline)"),
            ("code", 2, "b.rs", "b.rs"),
            ("doc", 3, "c.md", "Usage"),
        ] {
            conn.execute(
                "INSERT INTO docs (repo_id, kind, source, source_id, path, title, body, terms)
                 VALUES (1, ?1, 'file', ?2, ?3, ?4, 'text', '')",
                rusqlite::params![kind, source_id, path, title],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO docs (repo_id, kind, source, source_id, title, body, terms)
             VALUES (1, 'issue', 'issue', 4, 'An issue', 'text', '')",
            [],
        )
        .unwrap();
        migrate(&conn).unwrap();
        let roles: Vec<i64> = conn
            .prepare("SELECT role FROM docs ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        use crate::workspace::text::Role;
        let expected = [
            Role::Part,
            Role::Part,
            Role::Outline,
            Role::Whole,
            Role::Part,
            Role::Part,
        ];
        assert_eq!(roles, expected.map(Role::to_db));
        // The rows updated are still found by their words.
        let found: i64 = conn
            .query_row(
                "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH 'text'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, 6);
    }

    /// Migration 9 gives the units written before it the abbreviations they define, and the
    /// triggers keep the table with the units after.
    #[test]
    fn abbreviations_are_kept_with_the_units_that_define_them() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        migrate_to(&conn, 8).unwrap();
        conn.execute_batch(
            "INSERT INTO repos (name, added_at) VALUES ('r', 0);
             INSERT INTO docs (repo_id, kind, source, source_id, title, body, terms)
             VALUES (1, 'issue', 'issue', 1, 'Slow Initial Block Download (IBD)', 'text', ''),
                    (1, 'issue', 'issue', 2, 'Nothing here (fn)', 'BOM (byte order mark)', '');",
        )
        .unwrap();
        migrate(&conn).unwrap();
        let pairs = |conn: &Connection| -> Vec<(i64, String, String)> {
            conn.prepare("SELECT doc_id, abbr, long FROM abbreviations ORDER BY doc_id, abbr")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            pairs(&conn),
            [
                (1, "ibd".into(), "initial block download".into()),
                (2, "bom".into(), "byte order mark".into())
            ]
        );
        conn.execute_batch(
            "DELETE FROM docs WHERE id = 1;
             UPDATE docs SET body = 'The Graphical User Interface (GUI).' WHERE id = 2;
             INSERT INTO docs (repo_id, kind, source, source_id, title, body, terms)
             VALUES (1, 'issue', 'issue', 3, 'Out of memory (OOM)', '', '');",
        )
        .unwrap();
        assert_eq!(
            pairs(&conn),
            [
                (2, "gui".into(), "graphical user interface".into()),
                (3, "oom".into(), "out of memory".into())
            ]
        );
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
