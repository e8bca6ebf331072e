//! Issue #3: the workspace index over a small git repository built here (known commits, files,
//! and the awkward cases), and over the real bitcoin-core/gui issue backup.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use burrow::workspace::grep::GrepQuery;
use burrow::workspace::{Kind, SearchQuery, Workspace, WorkspaceError};
use common::git;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/issues")
}

const ANN: (&str, &str) = ("Ann Author", "ann@example.com");
const BOB: (&str, &str) = ("Bob Builder", "bob@example.com");

/// A repository with three commits by two people, code, docs, and the awkward cases.
fn build_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("demo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    git(
        &repo,
        &["init", "-q", "-b", "main"],
        "2024-01-01T10:00:00Z",
        ANN,
    );
    std::fs::write(
        repo.join("src/main.rs"),
        "use demo::ParseArgs;\n\nfn main() {\n    let args = parse_args();\n    run(args);\n}\n\nfn parse_args() -> ParseArgs {\n    ParseArgs::from_env()\n}\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("src/lib.rs"),
        "/// Command line options.\npub struct ParseArgs {\n    pub verbose: bool,\n}\n\nimpl ParseArgs {\n    pub fn from_env() -> Self {\n        ParseArgs { verbose: false }\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(repo.join("README.md"), "# Demo\n\nA demo tool.\n\n## Installing\n\nRun cargo install.\n\n## Configuration\n\nThe config file lives in ~/.demo.toml and sets the retry limit.\n").unwrap();
    git(&repo, &["add", "-A"], "2024-01-01T10:00:00Z", ANN);
    git(
        &repo,
        &["commit", "-q", "-m", "Initial commit: argument parsing"],
        "2024-01-01T10:00:00Z",
        ANN,
    );

    std::fs::write(repo.join("docs/guide.md"), "# Guide\n\n## Retries\n\nFailed downloads are retried three times with exponential backoff.\n").unwrap();
    std::fs::write(
        repo.join("src/net.rs"),
        "pub fn download(url: &str) -> Result<(), String> {\n    Err(format!(\"connection refused by {url}\"))\n}\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"], "2024-02-01T10:00:00Z", BOB);
    git(
        &repo,
        &[
            "commit",
            "-q",
            "-m",
            "Add downloads with retries\n\nThe network layer retries failed downloads.",
        ],
        "2024-02-01T10:00:00Z",
        BOB,
    );

    std::fs::write(repo.join("src/net.rs"), "pub fn download(url: &str) -> Result<(), String> {\n    // Give up after three attempts.\n    Err(format!(\"connection refused by {url}\"))\n}\n").unwrap();
    git(
        &repo,
        &["commit", "-q", "-am", "Document the retry limit"],
        "2024-03-01T10:00:00Z",
        ANN,
    );
    git(&repo, &["tag", "v0.1.0"], "2024-03-01T10:00:00Z", ANN);

    // Untracked files the index must handle: binary, huge, ignored, a symlink pointing outside,
    // a name that is not UTF-8.
    std::fs::write(repo.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    std::fs::write(repo.join("huge.txt"), "x".repeat(2 << 20)).unwrap();
    std::fs::write(repo.join(".gitignore"), "secret.env\n").unwrap();
    std::fs::write(repo.join("secret.env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(dir.join("outside.txt"), "outside the repository\n").unwrap();
    std::os::unix::fs::symlink(dir.join("outside.txt"), repo.join("escape.txt")).unwrap();
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"bad-\xff-name.txt");
        std::fs::write(repo.join(name), "odd name\n").unwrap();
    }
    repo
}

fn open(home: &Path) -> Arc<Workspace> {
    Arc::new(Workspace::open_at(&home.join("workspace.db")).unwrap())
}

fn search(ws: &Workspace, text: &str, kinds: &[Kind]) -> Vec<burrow::workspace::SearchHit> {
    ws.search(&SearchQuery {
        text: text.into(),
        kinds: kinds.to_vec(),
        limit: 10,
        ..Default::default()
    })
    .unwrap()
    .hits
}

#[test]
fn indexes_files_commits_and_refs_of_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = build_repo(dir.path());
    let ws = open(&dir.path().join("home"));
    let r = ws.add_repo(&repo, None).unwrap();
    assert_eq!(r.name, "demo");
    assert!(r.is_git);
    let mut events = Vec::new();
    let report = ws.index_repo("demo", &mut |e| events.push(e)).unwrap();
    assert!(!report.plain_folder);
    // src/main.rs, src/lib.rs, src/net.rs, README.md, docs/guide.md, .gitignore
    assert_eq!(report.files_indexed, 6, "{report:?}");
    assert_eq!(report.commits_added, 3);
    assert_eq!(report.files_skipped.get("binary"), Some(&1));
    assert_eq!(report.files_skipped.get("larger than 1 MiB"), Some(&1));
    assert_eq!(report.files_skipped.get("symbolic link"), Some(&1));
    assert_eq!(report.files_skipped.get("file name is not UTF-8"), Some(&1));
    assert!(events.iter().any(|e| matches!(e, burrow::workspace::IndexEvent::Progress { done, total, .. } if done == total)));

    let status = ws.status().unwrap();
    assert_eq!(status[0].commits, 3);
    assert_eq!(status[0].branches, 1);
    assert_eq!(status[0].tags, 1);

    // Identifier-aware search: every spelling finds both definitions.
    for q in ["parse_args", "ParseArgs", "parse"] {
        let hits = search(&ws, q, &[Kind::Code]);
        let paths: Vec<&str> = hits.iter().filter_map(|h| h.path.as_deref()).collect();
        assert!(
            paths.contains(&"src/main.rs") && paths.contains(&"src/lib.rs"),
            "{q}: {paths:?}"
        );
    }
    // The location is the line of the match.
    let hits = search(&ws, "from_env", &[Kind::Code]);
    let lib = hits
        .iter()
        .find(|h| h.path.as_deref() == Some("src/lib.rs"))
        .unwrap();
    assert_eq!(lib.line, Some(7));
    assert!(lib.snippet.contains("«from_env»"), "{}", lib.snippet);
    // Documents are split at headings.
    let hits = search(&ws, "config file retry limit", &[Kind::Doc]);
    assert_eq!(hits[0].path.as_deref(), Some("README.md"));
    assert_eq!(hits[0].title, "Configuration");
    assert_eq!(
        hits[0].line,
        Some(9),
        "the heading line, where the section and the match start"
    );
    // Commits, with their changed files.
    let hits = search(&ws, "retries downloads", &[Kind::Commit]);
    assert_eq!(hits[0].title, "Add downloads with retries");
    assert_eq!(hits[0].author.as_deref(), Some("Bob Builder"));
    // Ignored and skipped files are not searchable.
    assert!(search(&ws, "hunter2", &[]).is_empty());
    assert!(search(&ws, "outside repository", &[]).is_empty());

    // Filters.
    let by_path = ws
        .search(&SearchQuery {
            text: "download".into(),
            path: Some("src/*.rs".into()),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert!(by_path
        .hits
        .iter()
        .all(|h| h.path.as_deref().unwrap_or("").starts_with("src/")));
    let by_author = ws
        .search(&SearchQuery {
            text: "retries".into(),
            kinds: vec![Kind::Commit],
            author: Some("ann author".into()),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert!(!by_author.hits.is_empty());
    assert!(
        by_author
            .hits
            .iter()
            .all(|h| h.author.as_deref() == Some("Ann Author")),
        "only Ann's commits: {:?}",
        by_author.hits
    );
    let since = chrono::NaiveDate::from_ymd_opt(2024, 2, 15)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
        .timestamp();
    let recent = ws
        .search(&SearchQuery {
            text: "retry retries".into(),
            kinds: vec![Kind::Commit],
            since: Some(since),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(recent.hits.len(), 1);
    assert_eq!(recent.hits[0].title, "Document the retry limit");
    // Pagination.
    let p1 = ws
        .search(&SearchQuery {
            text: "parse args download retries".into(),
            limit: 2,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(p1.hits.len(), 2);
    let p2 = ws
        .search(&SearchQuery {
            text: "parse args download retries".into(),
            limit: 2,
            offset: p1.next_offset.unwrap(),
            ..Default::default()
        })
        .unwrap();
    assert!(p2.hits.iter().all(|h| !p1.hits.contains(h)));

    // Exact and regex search over the files.
    let g = ws
        .grep(&GrepQuery {
            pattern: "connection refused".into(),
            regex: false,
            case_sensitive: true,
            repo: None,
            path: None,
            limit: 10,
        })
        .unwrap();
    assert_eq!(g.hits.len(), 1);
    assert_eq!((g.hits[0].path.as_str(), g.hits[0].line), ("src/net.rs", 3));
    let g = ws
        .grep(&GrepQuery {
            pattern: r"fn \w+_args".into(),
            regex: true,
            case_sensitive: true,
            repo: None,
            path: Some("*.rs".into()),
            limit: 10,
        })
        .unwrap();
    assert_eq!(g.hits.len(), 1);
    assert!(ws
        .grep(&GrepQuery {
            pattern: "(".into(),
            regex: true,
            case_sensitive: true,
            repo: None,
            path: None,
            limit: 10
        })
        .is_err());
}

#[test]
fn reindexing_is_incremental() {
    let dir = tempfile::tempdir().unwrap();
    let repo = build_repo(dir.path());
    let ws = open(&dir.path().join("home"));
    ws.add_repo(&repo, None).unwrap();
    ws.index_repo("demo", &mut |_| {}).unwrap();
    let docs_before = ws.status().unwrap()[0].documents;

    let again = ws.index_repo("demo", &mut |_| {}).unwrap();
    assert_eq!(
        (
            again.files_indexed,
            again.commits_added,
            again.files_removed
        ),
        (0, 0, 0)
    );
    assert_eq!(again.files_unchanged, 6);
    assert_eq!(ws.status().unwrap()[0].documents, docs_before);

    // Change one file, delete one, add a commit.
    std::fs::write(repo.join("src/lib.rs"), "pub struct Options;\n").unwrap();
    std::fs::remove_file(repo.join("docs/guide.md")).unwrap();
    git(
        &repo,
        &["commit", "-q", "-am", "Rename to Options"],
        "2024-04-01T10:00:00Z",
        BOB,
    );
    let r = ws.index_repo("demo", &mut |_| {}).unwrap();
    assert_eq!(
        (r.files_indexed, r.files_removed, r.commits_added),
        (1, 1, 1),
        "{r:?}"
    );
    assert!(
        search(&ws, "exponential backoff", &[Kind::Doc]).is_empty(),
        "the deleted file left the index"
    );
    let lib_hits = search(&ws, "ParseArgs", &[Kind::Code]);
    assert!(lib_hits
        .iter()
        .all(|h| h.path.as_deref() != Some("src/lib.rs")));
    // Touching a file without changing it re-reads it but indexes nothing.
    let content = std::fs::read(repo.join("src/main.rs")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(repo.join("src/main.rs"), content).unwrap();
    let r = ws.index_repo("demo", &mut |_| {}).unwrap();
    assert_eq!(r.files_indexed, 0);
}

#[test]
fn a_plain_folder_is_indexed_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("notes");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("todo.md"),
        "# Todo\n\nFix the flaky scheduler test.\n",
    )
    .unwrap();
    let ws = open(&dir.path().join("home"));
    let r = ws.add_repo(&folder, Some("my notes")).unwrap();
    assert!(!r.is_git);
    let mut notes = Vec::new();
    let report = ws
        .index_repo("my notes", &mut |e| {
            if let burrow::workspace::IndexEvent::Note { message, .. } = e {
                notes.push(message)
            }
        })
        .unwrap();
    assert!(report.plain_folder);
    assert!(
        notes.iter().any(|n| n.contains("not a git repository")),
        "{notes:?}"
    );
    assert_eq!(search(&ws, "flaky scheduler", &[])[0].repo, "my notes");
    assert!(matches!(
        ws.add_repo(&folder.join("todo.md"), None),
        Err(WorkspaceError::NotAFolder { .. })
    ));
    assert!(matches!(
        ws.index_repo("nope", &mut |_| {}),
        Err(WorkspaceError::UnknownRepo { .. })
    ));
}

#[test]
fn unreadable_and_special_files_are_skipped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("f");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("ok.txt"), "fine\n").unwrap();
    let locked = folder.join("locked.txt");
    std::fs::write(&locked, "secret\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let fifo = folder.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let ws = open(&dir.path().join("home"));
    ws.add_repo(&folder, None).unwrap();
    let report = ws.index_repo("f", &mut |_| {}).unwrap();
    assert_eq!(
        report.files_skipped.get("not a regular file"),
        Some(&1),
        "{report:?}"
    );
    // Root reads any file whatever its mode; for anyone else the locked file is unreadable.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert_eq!(
            report.files_skipped.get("unreadable"),
            Some(&1),
            "{report:?}"
        );
    } else {
        assert_eq!(report.files_indexed, 2, "{report:?}");
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
}

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
        .query_row("SELECT count(*) - count(DISTINCT source || ':' || source_id || ':' || coalesce(line, 0)) FROM docs", [], |r| r.get(0))
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

#[test]
fn the_bitcoin_core_gui_backup_imports_and_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let ws = open(dir.path());
    let report = ws
        .import(
            &fixtures().join("bitcoin-core-gui-backup"),
            "bitcoin-core/gui",
            &mut |_| {},
        )
        .unwrap();
    assert_eq!((report.issues, report.pull_requests), (341, 537));
    assert!(report.comments > 5000, "{report:?}");
    let status = &ws.status().unwrap()[0];
    assert_eq!((status.issues, status.pull_requests), (341, 537));
    let comments = status.comments;

    // Re-importing updates, never duplicates.
    ws.import(
        &fixtures().join("bitcoin-core-gui-backup/pulls/138.json"),
        "bitcoin-core/gui",
        &mut |_| {},
    )
    .unwrap();
    let again = ws
        .import(
            &fixtures().join("bitcoin-core-gui-backup"),
            "bitcoin-core/gui",
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(again.issues, 341);
    let status = &ws.status().unwrap()[0];
    assert_eq!(
        (status.issues, status.pull_requests, status.comments),
        (341, 537, comments)
    );

    // A paraphrase finds the issue among the top results.
    for (query, number) in [
        ("traffic graph legend has no colors with some themes", 371),
        ("transaction list sort order is wrong by default", 244),
        (
            "new encrypted wallet cannot generate a receiving address",
            105,
        ),
        (
            "only one notification shown for several wallet transactions",
            853,
        ),
        ("crash in QTimer stop on mac release candidate", 779),
    ] {
        let hits = search(&ws, query, &[Kind::Issue]);
        let top: Vec<i64> = hits.iter().take(5).filter_map(|h| h.number).collect();
        assert!(
            top.contains(&number),
            "{query:?}: #{number} not in the top 5: {top:?}"
        );
    }
    // Pull request details: merged state, reviews.
    let pr = ws.issue(Some("bitcoin-core/gui"), 138, 50).unwrap();
    assert!(pr.is_pr);
    assert_eq!(pr.state, "merged");
    assert!(pr
        .comments
        .iter()
        .any(|c| c.kind == "review" && c.review_state.as_deref() == Some("APPROVED")));
    // Filters over issues.
    let open_only = ws
        .search(&SearchQuery {
            text: "wallet".into(),
            kinds: vec![Kind::Issue],
            state: Some("open".into()),
            limit: 20,
            ..Default::default()
        })
        .unwrap();
    assert!(
        !open_only.hits.is_empty()
            && open_only
                .hits
                .iter()
                .all(|h| h.state.as_deref() == Some("open"))
    );
    let labelled = ws
        .search(&SearchQuery {
            text: "wallet".into(),
            label: Some("Bug".into()),
            limit: 20,
            ..Default::default()
        })
        .unwrap();
    assert!(!labelled.hits.is_empty());
    let by_author = ws
        .search(&SearchQuery {
            text: "wallet".into(),
            author: Some("hebasto".into()),
            limit: 20,
            ..Default::default()
        })
        .unwrap();
    assert!(by_author
        .hits
        .iter()
        .all(|h| h.author.as_deref().map(str::to_lowercase) == Some("hebasto".into())));
}

#[test]
fn rest_pages_from_recorded_github_traffic_import() {
    // The recorded responses of GET /repos/{owner}/{repo}/issues, written one after another as
    // `gh api --paginate` prints them.
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("octokit-rest/paginate-issues/raw-fixture.json"))
            .unwrap(),
    )
    .unwrap();
    let pages: Vec<String> = raw
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "get" && r["path"].as_str().unwrap_or("").contains("/issues"))
        .map(|r| serde_json::to_string(&r["response"]).unwrap())
        .collect();
    assert!(pages.len() >= 5);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("issues.json");
    std::fs::write(&file, pages.join("\n")).unwrap();
    let ws = open(dir.path());
    let report = ws
        .import(&file, "octokit-fixture-org/paginate-issues", &mut |_| {})
        .unwrap();
    assert_eq!(report.issues + report.pull_requests, 13);
}

#[test]
fn a_broken_import_names_the_problem_and_imports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export");
    std::fs::create_dir_all(&export).unwrap();
    std::fs::copy(
        fixtures().join("bitcoin-core-gui-backup/issues/1.json"),
        export.join("1.json"),
    )
    .unwrap();
    std::fs::write(
        export.join("2.json"),
        "{\"type\": \"issue\", \"issue\": {\"number\": 2,\n  \"title\": \"x\",",
    )
    .unwrap();
    let ws = open(dir.path());
    let e = ws
        .import(&export, "o/r", &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("2.json") && e.contains("line 2"), "{e}");
    assert!(
        ws.repos().unwrap().is_empty(),
        "nothing was imported, not even the repository"
    );
    // A wrongly shaped file: valid JSON, but not an export.
    std::fs::write(
        export.join("2.json"),
        "{\"type\": \"issue\", \"issue\": {\"title\": \"no number\"}}",
    )
    .unwrap();
    let e = ws
        .import(&export, "o/r", &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("2.json") && e.contains("number"), "{e}");
    assert!(ws.repos().unwrap().is_empty());
    let e = ws
        .import(&export.join("1.json"), "not-a-slug", &mut |_| {})
        .unwrap_err();
    assert!(matches!(e, WorkspaceError::BadSlug { .. }), "{e}");

    // A re-import that breaks part-way through a REST page leaves the earlier import as it was,
    // even though the page's first records were read (and written) before the error.
    let first = ws
        .import(&export.join("1.json"), "o/r", &mut |_| {})
        .unwrap();
    assert_eq!(first.issues + first.pull_requests, 1, "{first:?}");
    let before = ws.status().unwrap();
    let page = dir.path().join("page.json");
    std::fs::write(
        &page,
        "[\n{\"number\": 7, \"title\": \"seven\", \"state\": \"open\", \"user\": {\"login\": \"a\"},\n \
         \"created_at\": \"2024-01-01T00:00:00Z\", \"updated_at\": \"2024-01-01T00:00:00Z\", \"body\": \"b\"},\n\
         {\"number\": 8, \"title\": oops}\n]",
    )
    .unwrap();
    let e = ws
        .import(&page, "o/r", &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("page.json") && e.contains("line 4"), "{e}");
    let after = ws.status().unwrap();
    assert_eq!(before[0].issues, after[0].issues);
    assert_eq!(before[0].pull_requests, after[0].pull_requests);
    assert_eq!(before[0].comments, after[0].comments);
}
