//! Indexing runs that overlap (they take turns) or are killed (the next one resumes).

use std::process::Command;

use burrow::workspace::Kind;

use crate::{build_repo, open, search};

#[test]
fn concurrent_indexing_runs_are_serialized() {
    let dir = tempfile::tempdir().unwrap();
    let repo = build_repo(dir.path());
    let home = dir.path().join("home");
    open(&home).add_repo(&repo, None).unwrap();
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let home = home.clone();
            std::thread::spawn(move || open(&home).index_repo("demo", &mut |_| {}))
        })
        .collect();
    let reports: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    // One run indexed everything; the others, after it, found nothing to do.
    assert_eq!(reports.iter().map(|r| r.files_indexed).sum::<u64>(), 6);
    assert_eq!(reports.iter().map(|r| r.commits_added).sum::<u64>(), 3);
    let ws = open(&home);
    let s = &ws.status().unwrap()[0];
    assert_eq!((s.files, s.commits), (6, 3));
    let dupes: i64 = rusqlite::Connection::open(home.join("workspace.db"))
        .unwrap()
        // A commit's message and its changed lines are two units of one source, told by role.
        .query_row("SELECT count(*) - count(DISTINCT source || ':' || source_id || ':' || coalesce(line, 0) || ':' || role) FROM docs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(dupes, 0);
}

#[test]
fn a_killed_index_run_leaves_a_consistent_database_and_the_next_run_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("big");
    std::fs::create_dir_all(&repo).unwrap();
    for i in 0..3000 {
        std::fs::write(
            repo.join(format!("file{i:04}.rs")),
            format!("// file {i}\npub fn function_{i}() -> u32 {{\n    {i}\n}}\n").repeat(20),
        )
        .unwrap();
    }
    let home = dir.path().join("home");
    let db = home.join("workspace.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["workspace", "add", repo.to_str().unwrap(), "--json"])
        .env("BURROW_HOME", &home)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once some batches are committed but before it is done.
    let count = || -> i64 {
        rusqlite::Connection::open(&db)
            .and_then(|c| c.query_row("SELECT count(*) FROM files", [], |r| r.get(0)))
            .unwrap_or(0)
    };
    let started = std::time::Instant::now();
    while count() < 300 && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = count();
    assert!(
        (256..3000).contains(&partial),
        "killed mid-run with {partial} files indexed"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    // The next run picks up where the killed one stopped.
    let ws = open(&home);
    let r = ws.index_repo("big", &mut |_| {}).unwrap();
    assert_eq!(r.files_unchanged as i64, partial);
    assert_eq!((r.files_unchanged + r.files_indexed) as i64, 3000);
    assert_eq!(ws.status().unwrap()[0].files, 3000);
    let hits = search(&ws, "function_2999", &[Kind::Code]);
    assert_eq!(hits[0].path.as_deref(), Some("file2999.rs"));
}
