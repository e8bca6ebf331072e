//! The small project the app tests index: one Rust file and a README. Shared by `tests/app.rs`
//! (the core) and `src-tauri/tests/commands.rs` (the same calls over IPC), which include it with
//! `#[path]`, so both test the same workspace.

use std::path::{Path, PathBuf};

/// Writes the project under `dir` and returns its folder.
pub fn project(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        "/// Parses the wallet file.\npub fn parse_wallet() {}\n",
    )
    .unwrap();
    std::fs::write(project.join("README.md"), "# Project\nA wallet parser.\n").unwrap();
    project
}
