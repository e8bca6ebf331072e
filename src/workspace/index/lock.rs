//! The lock across processes that an indexing run, an import or an agent run holds.

use std::path::{Path, PathBuf};

use crate::workspace::WorkspaceError;

/// An exclusive lock across processes (`flock` on a file under `locks/` beside the database):
/// one repository's indexing (a second run waits for the first), or a running agent run (so a
/// later process can tell a run whose process died from one still going). The kernel drops it
/// when the process dies, so a killed process never leaves a stale lock.
pub(crate) struct FileLock {
    /// Held, not read: closing the file releases the lock.
    _file: std::fs::File,
}

impl FileLock {
    /// Waits for the lock.
    pub(crate) fn acquire(db_path: &Path, key: &str) -> Result<Self, WorkspaceError> {
        // A waiting flock never reports the lock as held; if it did, say so rather than panic.
        Self::lock(db_path, key, true)?
            .ok_or_else(|| WorkspaceError::Refused(format!("the lock {key} is held elsewhere")))
    }

    /// Takes the lock if no one holds it.
    pub(crate) fn try_acquire(db_path: &Path, key: &str) -> Result<Option<Self>, WorkspaceError> {
        Self::lock(db_path, key, false)
    }

    fn lock(db_path: &Path, key: &str, wait: bool) -> Result<Option<Self>, WorkspaceError> {
        let dir = db_path
            .parent()
            .map(|d| d.join("locks"))
            .unwrap_or_else(|| PathBuf::from("locks"));
        std::fs::create_dir_all(&dir).map_err(|source| WorkspaceError::Io {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(format!("{key}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| WorkspaceError::Io {
                path: path.clone(),
                source,
            })?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let op = if wait {
                libc::LOCK_EX
            } else {
                libc::LOCK_EX | libc::LOCK_NB
            };
            loop {
                // SAFETY: flock on a descriptor we own.
                let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
                if rc == 0 {
                    break;
                }
                let err = std::io::Error::last_os_error();
                match err.kind() {
                    std::io::ErrorKind::Interrupted => continue,
                    std::io::ErrorKind::WouldBlock => return Ok(None),
                    _ => return Err(WorkspaceError::Io { path, source: err }),
                }
            }
        }
        Ok(Some(FileLock { _file: file }))
    }
}
