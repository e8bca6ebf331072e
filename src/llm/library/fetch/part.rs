//! The files a fetch writes beside the destination: the model being assembled (hashed as it
//! is written, renamed into place once verified), temporary files and folders removed when
//! dropped, and the leftovers of fetches that were killed.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{hex, io_error, with_suffix, FetchError};
use crate::llm::library::catalogue::CatalogueEntry;

/// `PartFile` as an `io::Write`, for writers that take one.
pub(super) struct PartSink<'a>(pub(super) &'a mut PartFile);

impl Write for PartSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .write_all(buf)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A folder that is removed, with what it holds, when dropped.
pub(super) struct TempDir {
    pub(super) path: PathBuf,
}

impl TempDir {
    pub(super) fn create(path: PathBuf) -> Result<Self, FetchError> {
        if path.exists() {
            fs::remove_dir_all(&path).map_err(io_error(&path))?;
        }
        fs::create_dir_all(&path).map_err(io_error(&path))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_dir_all(&self.path) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!("{} could not be removed: {e}", self.path.display());
            }
        }
    }
}

/// Removes what fetches of `file` that are no longer running left in `dir` (a fetch killed,
/// by Ctrl-C or otherwise, before its temporary files were dropped): each is named for its
/// process, so no later fetch reuses one, and a killed download of hundreds of megabytes
/// stayed for good. Those of a fetch still running are left to it.
pub(super) fn remove_stale_parts(dir: &Path, file: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(file) else {
            continue;
        };
        // `.part-PID-N`, `.source.part-PID-N`, `.whl.part-PID-N`.
        let Some((_, tail)) = rest.split_once(".part-") else {
            continue;
        };
        let Some(pid) = tail.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !process_alive(pid) {
            if let Err(err) = fs::remove_file(e.path()) {
                tracing::warn!("{} could not be removed: {err}", e.path().display());
            }
        }
    }
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    // Unknown here: left in place rather than taken from a fetch that may be running.
    true
}

/// A file that is removed when dropped.
pub(super) struct TempFile {
    pub(super) path: PathBuf,
    pub(super) file: File,
}

impl TempFile {
    /// A new file named `path` and a suffix of its own (this process, a counter), created
    /// exclusively: two fetches of one model (the app and `burrow models fetch`, which share
    /// no lock) each write their own. With one shared `FILE.part`, the second truncated what
    /// the first was writing, and the first, which had hashed the bytes it sent, renamed the
    /// damaged file into place as verified.
    pub(super) fn create(path: PathBuf) -> Result<Self, FetchError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = with_suffix(&path, &format!("-{}-{n}", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_error(&path))?;
        Ok(TempFile { path, file })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.path) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!("{} could not be removed: {e}", self.path.display());
            }
        }
    }
}

/// The model being assembled, hashed as it is written so the bytes are read once. Removed
/// when dropped, unless [`PartFile::commit`] renamed it into place.
pub(super) struct PartFile {
    file: Option<BufWriter<TempFile>>,
    path: PathBuf,
    name: String,
    hasher: Sha256,
    len: u64,
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl PartFile {
    pub(super) fn create(path: PathBuf, name: &str) -> Result<Self, FetchError> {
        let file = TempFile::create(path)?;
        let path = file.path.clone();
        Ok(PartFile {
            file: Some(BufWriter::with_capacity(1 << 20, file)),
            path,
            name: name.to_string(),
            hasher: Sha256::new(),
            len: 0,
        })
    }

    pub(super) fn write_all(&mut self, buf: &[u8]) -> Result<(), FetchError> {
        let file = self.file.as_mut().ok_or_else(|| FetchError::Io {
            path: self.path.clone(),
            source: io::Error::other("already closed"),
        })?;
        file.write_all(buf).map_err(io_error(&self.path))?;
        self.hasher.update(buf);
        self.len += buf.len() as u64;
        Ok(())
    }

    /// Checks the catalogue's size and sha256, then renames the file to `dest`.
    pub(super) fn commit(mut self, entry: &CatalogueEntry, dest: &Path) -> Result<(), FetchError> {
        let writer = self.file.take().ok_or_else(|| FetchError::Io {
            path: self.path.clone(),
            source: io::Error::other("already closed"),
        })?;
        // The TempFile is dropped (and the .part removed) on every early return below.
        let temp = writer.into_inner().map_err(|e| FetchError::Io {
            path: self.path.clone(),
            source: e.into_error(),
        })?;
        if self.len != entry.size {
            return Err(FetchError::Size {
                file: self.name.clone(),
                expected: entry.size,
                actual: self.len,
            });
        }
        let actual = hex(&std::mem::take(&mut self.hasher).finalize());
        if !actual.eq_ignore_ascii_case(&entry.sha256) {
            return Err(FetchError::Digest {
                file: self.name.clone(),
                expected: entry.sha256.clone(),
                actual,
            });
        }
        temp.file.sync_all().map_err(io_error(&self.path))?;
        fs::rename(&self.path, dest).map_err(io_error(dest))?;
        // Renamed: nothing to remove (the drop finds no file and says nothing).
        drop(temp);
        Ok(())
    }
}
