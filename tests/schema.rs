//! Databases written by an earlier release open unchanged. Issue 15 moved the runs' storage
//! into the agent (a `RunStore` over the workspace database, the runs' schema beside the
//! agent's code); `fixtures/workspace-v3.db` was written by the build before that move (schema
//! version 3: a git repository, two imported issues and one two-step agent run).

use std::path::Path;

use burrow::agent::record::RunStatus;
use burrow::agent::RunStore;
use burrow::workspace::{Kind, SearchQuery, Workspace};

/// The schema version and every schema object's text, as SQLite keeps them.
fn schema(db: &Path) -> (i64, Vec<(String, String, Option<String>)>) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let version = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    let mut st = conn
        .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap();
    let objects = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (version, objects)
}

#[test]
fn a_database_written_by_the_release_before_the_run_store_opens_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workspace.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workspace-v3.db"),
        &db,
    )
    .unwrap();
    let before = schema(&db);
    assert_eq!(before.0, 3, "the fixture is a version 3 database");
    assert!(before.1.iter().any(|(_, name, _)| name == "runs"));

    let ws = Workspace::open_at(&db).unwrap();
    let runs = ws.runs(10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::MaxSteps);
    assert_eq!(
        runs[0].task,
        "Which issue reports that wallet flags are ignored?"
    );
    let run = ws.run(runs[0].id).unwrap();
    assert_eq!(run.steps.len(), 2);
    assert!(run.steps.iter().all(|s| !s.output.is_empty()));
    let hits = ws
        .search(&SearchQuery {
            text: "wallet flags ignored".into(),
            kinds: vec![Kind::Issue],
            limit: 5,
            ..Default::default()
        })
        .unwrap()
        .hits;
    assert_eq!(hits.first().and_then(|h| h.number), Some(7), "{hits:?}");
    let code = ws
        .search(&SearchQuery {
            text: "parse_args".into(),
            kinds: vec![Kind::Code],
            limit: 5,
            ..Default::default()
        })
        .unwrap()
        .hits;
    assert_eq!(
        code.first().and_then(|h| h.path.as_deref()),
        Some("main.rs")
    );
    // A new run goes into the same tables.
    let handle = ws.start_run("a new task", None, "text").unwrap();
    ws.finish_run(&handle, RunStatus::Succeeded, Some("done"), None)
        .unwrap();
    assert_eq!(ws.runs(10).unwrap().len(), 2);
    drop(handle);
    drop(ws);

    // Opening applied the migrations after 3 (issue 18: vectors and links, the triggers that
    // count changes to the vectors and to the units, the abbreviations the units define, the
    // set another embedding model's vectors are made in, and the vocabulary by column)
    // and changed nothing else: every object of the old schema is as it was, but `issues`,
    // which gained two columns, `docs`, which gained one (a unit's role), and `commits`,
    // which gained one (whether its changed lines were read).
    let after = schema(&db);
    assert_eq!(after.0, burrow::workspace::db::latest_version());
    for object in &before.1 {
        if !matches!(object.1.as_str(), "issues" | "docs" | "commits") {
            assert!(after.1.contains(object), "changed: {object:?}");
        }
    }
    let added: Vec<&str> = after
        .1
        .iter()
        .filter(|(_, name, _)| !before.1.iter().any(|(_, n, _)| n == name))
        .map(|(_, name, _)| name.as_str())
        .collect();
    assert_eq!(
        added,
        [
            "abbreviations_doc",
            "doc_vectors_hash",
            "docs_number",
            "issues_merge_commit",
            "links_pr",
            "sqlite_autoindex_links_1",
            "abbreviations",
            "doc_vectors",
            "docs_changes",
            "docs_vocab_col",
            "embedding_model",
            "links",
            "next_doc_vectors",
            "next_embedding_model",
            "next_vectors",
            "vector_changes",
            "vectors",
            "abbreviations_ad",
            "abbreviations_ai",
            "abbreviations_au",
            "doc_vectors_changes_ad",
            "doc_vectors_changes_ai",
            "doc_vectors_changes_au",
            "docs_changes_ad",
            "docs_changes_ai",
            "docs_changes_au",
            "embedding_model_changes_ad",
            "embedding_model_changes_ai",
            "embedding_model_changes_au"
        ]
    );
}
