//! The workspace index over a small git repository built here (known commits, files, and the
//! awkward cases), and over the real bitcoin-core/gui issue backup.
//!
//! This file holds what the tests share: the demo repository, the fixtures and the search
//! helper. The tests are grouped by area: `git_repo` (indexing, searching and grepping a git
//! repository, and indexing it again), `history_edges` (the history index at its edges),
//! `folders` (plain folders and files that cannot be read), `runs` (runs that overlap or are
//! killed), `imports` (issue and pull request exports), `meaning` (search by meaning) and
//! `reliability` (nothing lost, nothing hangs).

// Shared with the other test files, so it stays one level up rather than beside main.rs.
#[path = "../common/mod.rs"]
mod common;

mod folders;
mod git_repo;
mod history_edges;
mod imports;
mod meaning;
mod reliability;
mod runs;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burrow::workspace::{Kind, SearchQuery, Workspace};
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
