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
