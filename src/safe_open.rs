//! Opening files whose paths come from outside (a repository, a model folder, an import): only
//! regular files, and never in a way that can block. A FIFO named like a model or put in place
//! of an indexed file hung `models list`, `read_file` and `search_code` (issue 17): opening a
//! FIFO for reading waits for a writer, and reading a device may never end. And replacing
//! Burrow's own small files whole (`replace_file`).

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// The most a settings, config or manifest file may hold: a larger one is not Burrow's.
pub const SMALL_FILE_BYTES: u64 = 1 << 20;

/// Whether a symbolic link as the path's last component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    Follow,
    /// Refused (`O_NOFOLLOW`): for paths that must stay where they were found.
    Refuse,
}

/// Opens `path` for reading if it is a regular file. The open never blocks (`O_NONBLOCK`), and
/// the type is checked on the opened descriptor, so nothing can be swapped in between a check
/// and the open.
pub fn open_regular(path: &Path, links: Links) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut flags = libc::O_NONBLOCK;
        if links == Links::Refuse {
            flags |= libc::O_NOFOLLOW;
        }
        options.custom_flags(flags);
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if links == Links::Refuse && e.raw_os_error() == Some(libc::ELOOP) {
            return io::Error::new(io::ErrorKind::InvalidInput, "a symbolic link, not followed");
        }
        e
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", describe(&meta)),
        ));
    }
    Ok(file)
}

/// Reads a regular file whole, refusing one larger than `max` bytes without reading it all.
pub fn read_regular(path: &Path, links: Links, max: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path, links)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// Reads a regular file as UTF-8 text (see `read_regular`).
pub fn read_regular_text(path: &Path, links: Links, max: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, links, max)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

fn describe(meta: &Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if meta.is_dir() {
        "a folder"
    } else {
        "not a file"
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn a_fifo_is_refused_at_once_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("model.gguf");
        mkfifo(&fifo);
        let err = open_regular(&fifo, Links::Follow).unwrap_err();
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let err = read_regular(Path::new("/dev/zero"), Links::Follow, 10).unwrap_err();
        assert!(err.to_string().contains("a device"), "{err}");
        let err = open_regular(dir.path(), Links::Follow).unwrap_err();
        assert!(err.to_string().contains("folder") || err.kind() == io::ErrorKind::IsADirectory);
    }

    #[test]
    fn a_final_symlink_is_refused_when_asked_and_size_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "0123456789").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(
            read_regular(&link, Links::Follow, 100).unwrap(),
            b"0123456789"
        );
        let err = read_regular(&link, Links::Refuse, 100).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let err = read_regular(&target, Links::Refuse, 9).unwrap_err();
        assert!(err.to_string().contains("larger than 9 bytes"), "{err}");
        assert_eq!(read_regular(&target, Links::Refuse, 10).unwrap().len(), 10);
    }
}

/// Replaces the file at `path` with `bytes` whole: written beside it under a name of its own,
/// then renamed over it, so a crash mid-write leaves the old file and two writers never share
/// a temporary file. Where `path` is a symbolic link (a config kept with one's dotfiles), its
/// target is replaced and the link stays: renamed over the link, the file was cut off from the
/// copy it stood for.
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}-{n}", std::process::id()));
    let tmp = target.with_file_name(name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            use std::io::Write;
            f.write_all(bytes)?;
            f.sync_all()
        });
    match written.and_then(|()| std::fs::rename(&tmp, &target)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
