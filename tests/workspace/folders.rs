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
