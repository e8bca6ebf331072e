//! Wheels already downloaded into a folder (as `pip download` leaves them), served as the
//! index would: for machines that cannot reach PyPI, and for tests.

use std::fs;
use std::path::PathBuf;

use super::{best_wheel, is_wheel_of, Download, FetchError, Fetcher, RemoteFile};

pub struct WheelDir {
    dir: PathBuf,
}

impl WheelDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WheelDir { dir: dir.into() }
    }
}

impl Fetcher for WheelDir {
    fn find_wheel(&self, package: &str, version: &str) -> Result<RemoteFile, FetchError> {
        let entries = fs::read_dir(&self.dir).map_err(|source| FetchError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| is_wheel_of(n, package, version))
            .collect();
        names.sort();
        let (name, ()) = best_wheel(names.iter().map(|n| (n.as_str(), ()))).ok_or_else(|| {
            FetchError::Index {
                index: self.dir.display().to_string(),
                message: format!("no wheel of {package} {version} in this folder"),
            }
        })?;
        let path = self.dir.join(name);
        // The folder is trusted as it is: it lists no digest of its own to check against (the
        // model's own sha256 is still checked once assembled).
        Ok(RemoteFile {
            url: path.display().to_string(),
            filename: name.to_string(),
            sha256: None,
            size: fs::metadata(&path).ok().map(|m| m.len()),
        })
    }

    fn open(&self, url: &str) -> Result<Download, FetchError> {
        let path = PathBuf::from(url);
        if !path.starts_with(&self.dir) {
            return Err(FetchError::Http {
                url: url.to_string(),
                message: format!("not in the folder of wheels {}", self.dir.display()),
            });
        }
        let file = crate::safe_open::open_regular(&path, crate::safe_open::Links::Follow).map_err(
            |source| FetchError::Io {
                path: path.clone(),
                source,
            },
        )?;
        let length = file.metadata().ok().map(|m| m.len());
        Ok(Download {
            reader: Box::new(file),
            length,
        })
    }
}
