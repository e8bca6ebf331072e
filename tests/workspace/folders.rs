//! Folders that are not git repositories, and files the walk cannot or must not read.

use burrow::workspace::WorkspaceError;

use crate::{open, search};

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

/// Only the ignore files within the folder added count. With the walk not requiring git, it
/// read every .gitignore above the folder up to `/`, so a `*` in one (a home folder kept
/// under git for its dotfiles) left a repository and a plain folder below it with no file
/// indexed, said nowhere (found in review).
#[test]
fn ignore_files_above_the_folder_do_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".gitignore"), "*\n").unwrap();
    let plain = dir.path().join("notes");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("todo.md"), "# Todo\n\nwrite the report\n").unwrap();
    // Ignore files within the folder still apply.
    std::fs::write(plain.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(plain.join("build.log"), "noise\n").unwrap();
    let repo = crate::build_repo(dir.path());
    let ws = open(&dir.path().join("home"));
    ws.add_repo(&plain, None).unwrap();
    ws.add_repo(&repo, None).unwrap();
    let notes = ws.index_repo("notes", &mut |_| {}).unwrap();
    let demo = ws.index_repo("demo", &mut |_| {}).unwrap();
    // todo.md and the folder's own .gitignore; the demo repository's six files.
    assert_eq!(
        (notes.files_indexed, demo.files_indexed),
        (2, 6),
        "{notes:?} {demo:?}"
    );
    assert_eq!(search(&ws, "report", &[]).len(), 1);
    assert!(search(&ws, "noise", &[]).is_empty());
}

/// An edit of the same size that leaves the file's time as it was (file times tick coarsely:
/// a save, an index, then a formatter's save within the tick) was taken for no change, and
/// search kept the old text for good. A file read within a tick of its time is read again.
#[test]
fn a_same_size_edit_within_the_files_time_tick_is_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("notes");
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("plan.md");
    std::fs::write(&file, "alpha bravo\n").unwrap();
    let ws = crate::open(&dir.path().join("home"));
    ws.add_repo(&root, None).unwrap();
    ws.index_repo("notes", &mut |_| {}).unwrap();
    let tick = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, "delta bravo\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(tick)
        .unwrap();
    ws.index_repo("notes", &mut |_| {}).unwrap();
    let hits = crate::search(&ws, "delta", &[]);
    assert_eq!(hits.len(), 1, "the edit was missed: {hits:?}");
    assert!(crate::search(&ws, "alpha", &[]).is_empty());
}

/// How many files a path's end names, which the evaluation asks before it counts an answer's
/// `src/lib.rs` as the accepted crate's (it was nine crates').
#[test]
fn files_ending_counts_the_files_a_paths_end_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    for f in ["a/src/lib.rs", "b/src/lib.rs", "c/main.rs", "xsrc/lib.rs"] {
        let path = root.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "fn x() {}\n").unwrap();
    }
    let ws = crate::open(&dir.path().join("home"));
    ws.add_repo(&root, None).unwrap();
    ws.index_repo("p", &mut |_| {}).unwrap();
    let n = |end: &str| ws.files_ending(end).unwrap();
    assert_eq!(
        (
            n("src/lib.rs"),
            n("a/src/lib.rs"),
            n("main.rs"),
            n("lib.rs")
        ),
        (2, 1, 1, 3)
    );
}
