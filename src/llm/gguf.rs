//! A validating reader for GGUF headers (metadata and tensor directory).
//!
//! llama.cpp aborts or misbehaves on some malformed files and only explains itself in its log, so
//! every file is read here first: the header is parsed with every length and count checked against
//! the bytes that remain, and the tensor directory is checked against the file size, so a truncated
//! download is caught before llama.cpp ever maps it. Tensor data is never read: the cost is the
//! size of the header (a few MB for a large vocabulary), whatever the size of the weights.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The largest header we accept. Real headers are a few MB (vocabularies of ~250k tokens); a
/// length field beyond this is corruption, not a model.
const MAX_HEADER_BYTES: u64 = 512 * 1024 * 1024;
/// Bounds from ggml: names longer than GGML_MAX_NAME or more than GGML_MAX_DIMS dims cannot load.
const GGML_MAX_NAME: u64 = 64;
const GGML_MAX_DIMS: u32 = 4;
const DEFAULT_ALIGNMENT: u64 = 32;
/// Arrays up to this many elements keep their values; longer ones (vocabularies, merges) keep only
/// their type and length, which is all the library needs from them.
const KEEP_ARRAY_VALUES: u64 = 64;

#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: is a directory, not a GGUF file")]
    IsDirectory { path: PathBuf },
    #[error(
        "{path}: not a GGUF file (starts with {found:02x?}, expected the magic bytes \"GGUF\")"
    )]
    BadMagic { path: PathBuf, found: Vec<u8> },
    #[error("{path}: {}", version_problem(*.version))]
    UnsupportedVersion { path: PathBuf, version: u32 },
    #[error("{path}: truncated: {what} at byte {offset} needs {needed} bytes but the file is {file_size} bytes long")]
    Truncated {
        path: PathBuf,
        what: String,
        offset: u64,
        needed: u64,
        file_size: u64,
    },
    #[error("{path}: corrupt header at byte {offset}: {reason}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
}

/// Says what a version field that is not 2 or 3 most likely means: a version 1 file (llama.cpp
/// dropped it), a newer format, a big-endian file (its version reads byte-swapped), or a file that
/// only starts with "GGUF" (text that happens to, or a damaged header).
fn version_problem(version: u32) -> String {
    const SUPPORTED: &str = "supported: 2 and 3";
    match version {
        1 => format!("GGUF version 1 is no longer supported ({SUPPORTED}): convert the model again with a current llama.cpp"),
        4..=255 => format!("GGUF version {version} is newer than this build reads ({SUPPORTED})"),
        v if (2..=3).contains(&v.swap_bytes()) => format!(
            "a big-endian GGUF file (version {}): this build reads little-endian ones",
            v.swap_bytes()
        ),
        v => format!(
            "not a GGUF file: it starts with \"GGUF\" but its version field reads {v} ({SUPPORTED})"
        ),
    }
}

impl GgufError {
    pub fn path(&self) -> &Path {
        match self {
            GgufError::Io { path, .. }
            | GgufError::IsDirectory { path }
            | GgufError::BadMagic { path, .. }
            | GgufError::UnsupportedVersion { path, .. }
            | GgufError::Truncated { path, .. }
            | GgufError::Corrupt { path, .. } => path,
        }
    }
}

/// GGUF metadata value types, as numbered in the file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl ValueType {
    fn from_u32(v: u32) -> Option<Self> {
        use ValueType::*;
        Some(match v {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// Size of a fixed-size value; strings and arrays have none.
    fn fixed_size(self) -> Option<u64> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(MetaArray),
    U64(u64),
    I64(i64),
    F64(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct MetaArray {
    pub elem_type: ValueType,
    pub len: u64,
    /// The elements, for arrays short enough to keep (see `KEEP_ARRAY_VALUES`).
    pub values: Option<Vec<MetaValue>>,
}

impl MetaValue {
    pub fn value_type(&self) -> ValueType {
        match self {
            MetaValue::U8(_) => ValueType::U8,
            MetaValue::I8(_) => ValueType::I8,
            MetaValue::U16(_) => ValueType::U16,
            MetaValue::I16(_) => ValueType::I16,
            MetaValue::U32(_) => ValueType::U32,
            MetaValue::I32(_) => ValueType::I32,
            MetaValue::F32(_) => ValueType::F32,
            MetaValue::Bool(_) => ValueType::Bool,
            MetaValue::String(_) => ValueType::String,
            MetaValue::Array(_) => ValueType::Array,
            MetaValue::U64(_) => ValueType::U64,
            MetaValue::I64(_) => ValueType::I64,
            MetaValue::F64(_) => ValueType::F64,
        }
    }

    /// Any integer type as u64, when it is non-negative. Writers disagree on integer widths
    /// (context_length is u32 in some files and u64 in others), so readers must not care.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::U8(v) => Some(v.into()),
            MetaValue::U16(v) => Some(v.into()),
            MetaValue::U32(v) => Some(v.into()),
            MetaValue::U64(v) => Some(v),
            MetaValue::I8(v) => u64::try_from(v).ok(),
            MetaValue::I16(v) => u64::try_from(v).ok(),
            MetaValue::I32(v) => u64::try_from(v).ok(),
            MetaValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::String(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for MetaValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaValue::U8(v) => write!(f, "{v}"),
            MetaValue::I8(v) => write!(f, "{v}"),
            MetaValue::U16(v) => write!(f, "{v}"),
            MetaValue::I16(v) => write!(f, "{v}"),
            MetaValue::U32(v) => write!(f, "{v}"),
            MetaValue::I32(v) => write!(f, "{v}"),
            MetaValue::F32(v) => write!(f, "{v}"),
            MetaValue::Bool(v) => write!(f, "{v}"),
            MetaValue::String(s) => write!(f, "{s:?}"),
            MetaValue::U64(v) => write!(f, "{v}"),
            MetaValue::I64(v) => write!(f, "{v}"),
            MetaValue::F64(v) => write!(f, "{v}"),
            MetaValue::Array(a) => match &a.values {
                Some(values) => {
                    write!(f, "[")?;
                    for (i, v) in values.iter().enumerate() {
                        if i > 0 {
                            write!(f, ", ")?;
                        }
                        write!(f, "{v}")?;
                    }
                    write!(f, "]")
                }
                None => write!(f, "[{:?}; {}]", a.elem_type, a.len),
            },
        }
    }
}

/// ggml tensor types: (name, elements per block, bytes per block), indexed by type id.
/// Sizes are those of the pinned llama.cpp (ggml-common.h); removed ids are `None`.
const GGML_TYPES: [Option<(&str, u64, u64)>; 43] = [
    Some(("F32", 1, 4)),
    Some(("F16", 1, 2)),
    Some(("Q4_0", 32, 18)),
    Some(("Q4_1", 32, 20)),
    None,
    None,
    Some(("Q5_0", 32, 22)),
    Some(("Q5_1", 32, 24)),
    Some(("Q8_0", 32, 34)),
    Some(("Q8_1", 32, 36)),
    Some(("Q2_K", 256, 84)),
    Some(("Q3_K", 256, 110)),
    Some(("Q4_K", 256, 144)),
    Some(("Q5_K", 256, 176)),
    Some(("Q6_K", 256, 210)),
    Some(("Q8_K", 256, 292)),
    Some(("IQ2_XXS", 256, 66)),
    Some(("IQ2_XS", 256, 74)),
    Some(("IQ3_XXS", 256, 98)),
    Some(("IQ1_S", 256, 50)),
    Some(("IQ4_NL", 32, 18)),
    Some(("IQ3_S", 256, 110)),
    Some(("IQ2_S", 256, 82)),
    Some(("IQ4_XS", 256, 136)),
    Some(("I8", 1, 1)),
    Some(("I16", 1, 2)),
    Some(("I32", 1, 4)),
    Some(("I64", 1, 8)),
    Some(("F64", 1, 8)),
    Some(("IQ1_M", 256, 56)),
    Some(("BF16", 1, 2)),
    None,
    None,
    None,
    Some(("TQ1_0", 256, 54)),
    Some(("TQ2_0", 256, 66)),
    None,
    None,
    None,
    Some(("MXFP4", 32, 17)),
    Some(("NVFP4", 64, 36)),
    Some(("Q1_0", 128, 18)),
    Some(("Q2_0", 64, 18)),
];

/// The name of a ggml tensor type id, if the pinned llama.cpp knows it.
pub fn ggml_type_name(id: u32) -> Option<&'static str> {
    GGML_TYPES
        .get(id as usize)
        .and_then(|t| t.as_ref())
        .map(|t| t.0)
}

fn ggml_type_layout(id: u32) -> Option<(u64, u64)> {
    GGML_TYPES
        .get(id as usize)
        .and_then(|t| t.as_ref())
        .map(|t| (t.1, t.2))
}

#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    /// Offset of the tensor's data, relative to the start of the data section.
    pub offset: u64,
    pub size_bytes: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    pub fn type_name(&self) -> &'static str {
        ggml_type_name(self.ggml_type).unwrap_or("?")
    }
}

/// A parsed and validated GGUF header.
#[derive(Debug, Clone)]
pub struct GgufHeader {
    pub path: PathBuf,
    pub version: u32,
    pub metadata: Vec<(String, MetaValue)>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Absolute offset of the data section.
    pub data_offset: u64,
    pub file_size: u64,
    /// Bytes of the file actually read to parse the header.
    pub header_bytes_read: u64,
    /// Byte range of each metadata entry (same order as `metadata`), and of the tensor
    /// directory: what `rewrite_metadata` copies verbatim.
    kv_ranges: Vec<std::ops::Range<u64>>,
    tensor_dir_range: std::ops::Range<u64>,
}

impl GgufHeader {
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(MetaValue::as_str)
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(MetaValue::as_u64)
    }

    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// An architecture-scoped key such as `llama.context_length`.
    pub fn arch_u64(&self, suffix: &str) -> Option<u64> {
        let arch = self.architecture()?;
        self.get_u64(&format!("{arch}.{suffix}"))
    }

    pub fn n_parameters(&self) -> u64 {
        self.tensors.iter().map(TensorInfo::n_elements).sum()
    }

    pub fn tensor_data_bytes(&self) -> u64 {
        self.tensors.iter().map(|t| t.size_bytes).sum()
    }

    /// Reads and validates the header of the GGUF file at `path`.
    pub fn read(path: &Path) -> Result<Self, GgufError> {
        let io_err = |source| GgufError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io_err)?;
        if meta.is_dir() {
            return Err(GgufError::IsDirectory {
                path: path.to_path_buf(),
            });
        }
        let file = File::open(path).map_err(io_err)?;
        Self::from_reader(path, BufReader::with_capacity(256 * 1024, file), meta.len())
    }

    /// Parses a header from any reader; `file_size` is the total size of what it reads from, which
    /// every length field is checked against.
    pub fn from_reader<R: Read>(path: &Path, reader: R, file_size: u64) -> Result<Self, GgufError> {
        let mut r = HeaderReader {
            inner: reader,
            pos: 0,
            file_size,
            path: path.to_path_buf(),
        };
        let magic = r.bytes_or_short(4)?;
        if magic != b"GGUF" {
            return Err(GgufError::BadMagic {
                path: path.to_path_buf(),
                found: magic,
            });
        }
        let version = r.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(GgufError::UnsupportedVersion {
                path: path.to_path_buf(),
                version,
            });
        }
        let n_tensors = r.u64("tensor count")?;
        let n_kv = r.u64("metadata count")?;
        // Each KV pair takes at least 8 (key length) + 1 (key) + 4 (type) + 1 (value) bytes and each
        // tensor at least 8 + 1 + 4 + 8 + 4 + 8: a count beyond what the file can hold is corruption,
        // and checking it now stops us from allocating for a forged count.
        r.check_count(n_kv, 14, "metadata count")?;
        r.check_count(n_tensors, 33, "tensor count")?;

        let mut metadata: Vec<(String, MetaValue)> = Vec::with_capacity(n_kv as usize);
        let mut kv_ranges = Vec::with_capacity(n_kv as usize);
        for _ in 0..n_kv {
            let key_at = r.pos;
            let key = r.string("metadata key")?;
            if key.is_empty() {
                return Err(r.corrupt_at(key_at, "empty metadata key".into()));
            }
            if metadata.iter().any(|(k, _)| *k == key) {
                return Err(r.corrupt_at(key_at, format!("duplicate metadata key {key:?}")));
            }
            let type_at = r.pos;
            let raw_type = r.u32("metadata value type")?;
            let vt = ValueType::from_u32(raw_type).ok_or_else(|| {
                r.corrupt_at(
                    type_at,
                    format!("metadata key {key:?} has unknown value type {raw_type}"),
                )
            })?;
            let value = r.value(vt, &key)?;
            metadata.push((key, value));
            kv_ranges.push(key_at..r.pos);
        }

        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some((_, MetaValue::U32(a))) if a.is_power_of_two() => u64::from(*a),
            Some((_, v)) => {
                return Err(r.corrupt_at(
                    r.pos,
                    format!("general.alignment must be a power-of-two u32, found {v}"),
                ))
            }
        };

        let mut tensors: Vec<TensorInfo> = Vec::with_capacity(n_tensors as usize);
        let mut names = std::collections::HashSet::with_capacity(n_tensors as usize);
        let mut expected_offset = 0u64;
        let tensor_dir_start = r.pos;
        for _ in 0..n_tensors {
            let at = r.pos;
            let name = r.string("tensor name")?;
            if name.len() as u64 >= GGML_MAX_NAME {
                return Err(r.corrupt_at(
                    at,
                    format!(
                        "tensor name {name:?} is {} bytes; ggml allows at most {}",
                        name.len(),
                        GGML_MAX_NAME - 1
                    ),
                ));
            }
            if !names.insert(name.clone()) {
                return Err(r.corrupt_at(at, format!("duplicate tensor {name:?}")));
            }
            let n_dims = r.u32("tensor dimension count")?;
            if n_dims == 0 || n_dims > GGML_MAX_DIMS {
                return Err(r.corrupt_at(
                    at,
                    format!(
                        "tensor {name:?} has {n_dims} dimensions (1 to {GGML_MAX_DIMS} allowed)"
                    ),
                ));
            }
            let mut dims = Vec::with_capacity(n_dims as usize);
            for _ in 0..n_dims {
                dims.push(r.u64("tensor dimension")?);
            }
            let type_at = r.pos;
            let ggml_type = r.u32("tensor type")?;
            let offset = r.u64("tensor offset")?;
            let (block, block_bytes) = ggml_type_layout(ggml_type).ok_or_else(|| {
                r.corrupt_at(
                    type_at,
                    format!("tensor {name:?} has unknown ggml type {ggml_type}"),
                )
            })?;
            let n_elements = dims
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .filter(|&n| n < (i64::MAX as u64))
                .ok_or_else(|| {
                    r.corrupt_at(
                        at,
                        format!("tensor {name:?} has absurd dimensions {dims:?}"),
                    )
                })?;
            if dims[0] % block != 0 {
                return Err(r.corrupt_at(
                    at,
                    format!(
                        "tensor {name:?}: first dimension {} is not a multiple of the {} block size {block}",
                        dims[0],
                        ggml_type_name(ggml_type).unwrap_or("?")
                    ),
                ));
            }
            let size_bytes = (n_elements / block)
                .checked_mul(block_bytes)
                .ok_or_else(|| r.corrupt_at(at, format!("tensor {name:?} is too large")))?;
            if offset != expected_offset {
                return Err(r.corrupt_at(
                    at,
                    format!("tensor {name:?} has data offset {offset}, expected {expected_offset}"),
                ));
            }
            expected_offset = align(offset + size_bytes, alignment);
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
                size_bytes,
            });
        }

        let data_offset = align(r.pos, alignment);
        let data_end = data_offset + tensors.last().map_or(0, |t| t.offset + t.size_bytes);
        if data_end > file_size {
            let last = tensors.last().map(|t| t.name.clone()).unwrap_or_default();
            return Err(GgufError::Truncated {
                path: path.to_path_buf(),
                what: format!(
                    "tensor data ({} tensors, the last is {last:?}; {} bytes missing)",
                    tensors.len(),
                    data_end - file_size
                ),
                offset: data_offset,
                needed: data_end - data_offset,
                file_size,
            });
        }

        Ok(GgufHeader {
            path: path.to_path_buf(),
            version,
            metadata,
            tensors,
            alignment,
            data_offset,
            file_size,
            header_bytes_read: r.pos,
            kv_ranges,
            tensor_dir_range: tensor_dir_start..r.pos,
        })
    }
}

/// A change to a model's metadata, for `rewrite_metadata`.
#[derive(Debug, Clone)]
pub enum MetaEdit {
    Set(String, MetaValue),
    Remove(String),
}

/// Copies the GGUF at `src` to `dst` with its metadata edited and everything else (tensor
/// directory, weights) byte for byte. Used to build realistic bad inputs from a real model (an
/// unknown architecture, a broken chat template) and to fix up metadata.
pub fn rewrite_metadata(src: &Path, dst: &Path, edits: &[MetaEdit]) -> Result<(), GgufError> {
    let header = GgufHeader::read(src)?;
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GgufError::Io { path, source }
    };
    let raw_header = {
        let mut f = File::open(src).map_err(io_err(src))?;
        let mut buf = vec![0u8; header.tensor_dir_range.end as usize];
        f.read_exact(&mut buf).map_err(io_err(src))?;
        buf
    };
    let mut entries: Vec<Vec<u8>> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for ((key, _), range) in header.metadata.iter().zip(&header.kv_ranges) {
        keys.push(key.clone());
        entries.push(raw_header[range.start as usize..range.end as usize].to_vec());
    }
    for edit in edits {
        match edit {
            MetaEdit::Remove(k) => {
                if let Some(i) = keys.iter().position(|x| x == k) {
                    keys.remove(i);
                    entries.remove(i);
                }
            }
            MetaEdit::Set(k, v) => {
                let mut raw = Vec::new();
                put_string(&mut raw, k);
                raw.extend_from_slice(&(v.value_type() as u32).to_le_bytes());
                put_value(&mut raw, v);
                match keys.iter().position(|x| x == k) {
                    Some(i) => entries[i] = raw,
                    None => {
                        keys.push(k.clone());
                        entries.push(raw);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(&raw_header[..8]);
    out.extend_from_slice(&(header.tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for e in &entries {
        out.extend_from_slice(e);
    }
    let dir =
        &raw_header[header.tensor_dir_range.start as usize..header.tensor_dir_range.end as usize];
    out.extend_from_slice(dir);
    let data_offset = align(out.len() as u64, header.alignment);
    out.resize(data_offset as usize, 0);
    let mut dst_file = File::create(dst).map_err(io_err(dst))?;
    dst_file.write_all(&out).map_err(io_err(dst))?;
    let mut src_file = File::open(src).map_err(io_err(src))?;
    std::io::Seek::seek(&mut src_file, std::io::SeekFrom::Start(header.data_offset))
        .map_err(io_err(src))?;
    std::io::copy(&mut src_file, &mut dst_file).map_err(io_err(dst))?;
    Ok(())
}

fn align(offset: u64, alignment: u64) -> u64 {
    offset.div_ceil(alignment) * alignment
}

struct HeaderReader<R> {
    inner: R,
    pos: u64,
    file_size: u64,
    path: PathBuf,
}

impl<R: Read> HeaderReader<R> {
    fn corrupt_at(&self, offset: u64, reason: String) -> GgufError {
        GgufError::Corrupt {
            path: self.path.clone(),
            offset,
            reason,
        }
    }

    fn truncated(&self, what: &str, needed: u64) -> GgufError {
        GgufError::Truncated {
            path: self.path.clone(),
            what: what.to_string(),
            offset: self.pos,
            needed,
            file_size: self.file_size,
        }
    }

    fn remaining(&self) -> u64 {
        self.file_size.saturating_sub(self.pos)
    }

    /// Fails unless `n` bytes remain in the file and the header stays under its size bound.
    fn ensure(&self, n: u64, what: &str) -> Result<(), GgufError> {
        if n > self.remaining() {
            return Err(self.truncated(what, n));
        }
        if self.pos + n > MAX_HEADER_BYTES {
            return Err(self.corrupt_at(
                self.pos,
                format!("{what} of {n} bytes would make the header larger than {MAX_HEADER_BYTES} bytes"),
            ));
        }
        Ok(())
    }

    /// A count the rest of the file cannot hold means the file was cut short (or the count is
    /// forged); either way nothing is allocated for it.
    fn check_count(&self, count: u64, min_bytes_each: u64, what: &str) -> Result<(), GgufError> {
        let needed = count.saturating_mul(min_bytes_each);
        if needed > self.remaining() {
            return Err(self.truncated(&format!("{what} of {count}"), needed));
        }
        Ok(())
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), GgufError> {
        self.ensure(buf.len() as u64, what)?;
        self.inner.read_exact(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                // The file shrank under us, or the reader is shorter than the size we were told.
                self.truncated(what, buf.len() as u64)
            } else {
                GgufError::Io {
                    path: self.path.clone(),
                    source: e,
                }
            }
        })?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn bytes_or_short(&mut self, n: usize) -> Result<Vec<u8>, GgufError> {
        if (n as u64) > self.remaining() {
            // Too short even for the magic: report what is there, it is usually not a GGUF at all.
            let mut found = Vec::new();
            self.inner
                .by_ref()
                .take(n as u64)
                .read_to_end(&mut found)
                .map_err(|source| GgufError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if found.is_empty() {
                return Err(self.truncated("magic bytes (the file is empty)", n as u64));
            }
            return Err(GgufError::BadMagic {
                path: self.path.clone(),
                found,
            });
        }
        let mut buf = vec![0u8; n];
        self.fill(&mut buf, "magic bytes")?;
        Ok(buf)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let mut buf = [0u8; N];
        self.fill(&mut buf, what)?;
        Ok(buf)
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let at = self.pos;
        let len = self.u64(what)?;
        self.ensure(len, what)?;
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf, what)?;
        String::from_utf8(buf)
            .map_err(|_| self.corrupt_at(at, format!("{what} is not valid UTF-8")))
    }

    fn skip_string(&mut self, what: &str, scratch: &mut Vec<u8>) -> Result<(), GgufError> {
        let len = self.u64(what)?;
        self.ensure(len, what)?;
        scratch.resize(len as usize, 0);
        self.fill(scratch, what)
    }

    fn value(&mut self, vt: ValueType, key: &str) -> Result<MetaValue, GgufError> {
        let what = format!("value of {key:?}");
        Ok(match vt {
            ValueType::U8 => MetaValue::U8(u8::from_le_bytes(self.array(&what)?)),
            ValueType::I8 => MetaValue::I8(i8::from_le_bytes(self.array(&what)?)),
            ValueType::U16 => MetaValue::U16(u16::from_le_bytes(self.array(&what)?)),
            ValueType::I16 => MetaValue::I16(i16::from_le_bytes(self.array(&what)?)),
            ValueType::U32 => MetaValue::U32(u32::from_le_bytes(self.array(&what)?)),
            ValueType::I32 => MetaValue::I32(i32::from_le_bytes(self.array(&what)?)),
            ValueType::F32 => MetaValue::F32(f32::from_le_bytes(self.array(&what)?)),
            ValueType::U64 => MetaValue::U64(u64::from_le_bytes(self.array(&what)?)),
            ValueType::I64 => MetaValue::I64(i64::from_le_bytes(self.array(&what)?)),
            ValueType::F64 => MetaValue::F64(f64::from_le_bytes(self.array(&what)?)),
            ValueType::Bool => {
                let at = self.pos;
                match self.array::<1>(&what)?[0] {
                    0 => MetaValue::Bool(false),
                    1 => MetaValue::Bool(true),
                    b => return Err(self.corrupt_at(at, format!("{what} is bool but holds {b}"))),
                }
            }
            ValueType::String => MetaValue::String(self.string(&what)?),
            ValueType::Array => {
                let at = self.pos;
                let raw = self.u32(&what)?;
                let elem_type = ValueType::from_u32(raw).ok_or_else(|| {
                    self.corrupt_at(at, format!("array {key:?} has unknown element type {raw}"))
                })?;
                if elem_type == ValueType::Array {
                    // llama.cpp's gguf reader rejects nested arrays as well.
                    return Err(self.corrupt_at(at, format!("array {key:?} nests arrays")));
                }
                let len = self.u64(&what)?;
                let min_each = elem_type.fixed_size().unwrap_or(8);
                self.check_count(len, min_each, &format!("length of array {key:?}"))?;
                if len <= KEEP_ARRAY_VALUES {
                    let mut values = Vec::with_capacity(len as usize);
                    for _ in 0..len {
                        values.push(self.value(elem_type, key)?);
                    }
                    MetaValue::Array(MetaArray {
                        elem_type,
                        len,
                        values: Some(values),
                    })
                } else {
                    match elem_type.fixed_size() {
                        Some(size) => {
                            let total = len * size;
                            self.ensure(total, &what)?;
                            io::copy(&mut self.inner.by_ref().take(total), &mut io::sink())
                                .map_err(|source| GgufError::Io {
                                    path: self.path.clone(),
                                    source,
                                })
                                .and_then(|copied| {
                                    if copied == total {
                                        Ok(())
                                    } else {
                                        Err(self.truncated(&what, total))
                                    }
                                })?;
                            self.pos += total;
                        }
                        None => {
                            let mut scratch = Vec::new();
                            for _ in 0..len {
                                self.skip_string(&what, &mut scratch)?;
                            }
                        }
                    }
                    MetaValue::Array(MetaArray {
                        elem_type,
                        len,
                        values: None,
                    })
                }
            }
        })
    }
}

/// Writes GGUF files: used to build test fixtures (valid, corrupt and edge-case models) without
/// shipping binary files, and by tools that rewrite metadata.
#[derive(Debug, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, MetaValue, Option<Vec<MetaValue>>)>,
    tensors: Vec<(String, Vec<u64>, u32)>,
    alignment: u64,
}

impl GgufWriter {
    pub fn new() -> Self {
        GgufWriter {
            alignment: DEFAULT_ALIGNMENT,
            ..Default::default()
        }
    }

    pub fn meta(mut self, key: &str, value: MetaValue) -> Self {
        self.metadata.push((key.to_string(), value, None));
        self
    }

    pub fn meta_str(self, key: &str, value: &str) -> Self {
        self.meta(key, MetaValue::String(value.to_string()))
    }

    pub fn meta_u32(self, key: &str, value: u32) -> Self {
        self.meta(key, MetaValue::U32(value))
    }

    /// An array whose elements are all written (unlike `MetaArray`, which may hold only a length).
    pub fn meta_array(mut self, key: &str, elem_type: ValueType, values: Vec<MetaValue>) -> Self {
        let len = values.len() as u64;
        self.metadata.push((
            key.to_string(),
            MetaValue::Array(MetaArray {
                elem_type,
                len,
                values: None,
            }),
            Some(values),
        ));
        self
    }

    pub fn tensor(mut self, name: &str, dims: &[u64], ggml_type: u32) -> Self {
        self.tensors
            .push((name.to_string(), dims.to_vec(), ggml_type));
        self
    }

    /// Total bytes of tensor data, laid out as the reader expects.
    pub fn data_len(&self) -> u64 {
        let mut end = 0;
        for (_, dims, ty) in &self.tensors {
            let (block, bytes) = ggml_type_layout(*ty).unwrap_or((1, 1));
            let n: u64 = dims.iter().product();
            end = align(end, self.alignment) + n / block * bytes;
        }
        end
    }

    /// Writes the header, then `data_len()` bytes of data: zeros, or a sparse hole when `sparse`
    /// (so a test can make a "50 GB model" that takes no disk).
    pub fn write_to(&self, path: &Path, sparse: bool) -> io::Result<()> {
        let mut out = Vec::new();
        out.extend_from_slice(b"GGUF");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value, elems) in &self.metadata {
            put_string(&mut out, key);
            out.extend_from_slice(&(value.value_type() as u32).to_le_bytes());
            match (value, elems) {
                (MetaValue::Array(a), Some(elems)) => {
                    out.extend_from_slice(&(a.elem_type as u32).to_le_bytes());
                    out.extend_from_slice(&(elems.len() as u64).to_le_bytes());
                    for e in elems {
                        put_value(&mut out, e);
                    }
                }
                _ => put_value(&mut out, value),
            }
        }
        let mut offset = 0u64;
        for (name, dims, ty) in &self.tensors {
            put_string(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&ty.to_le_bytes());
            offset = align(offset, self.alignment);
            out.extend_from_slice(&offset.to_le_bytes());
            let (block, bytes) = ggml_type_layout(*ty).unwrap_or((1, 1));
            offset += dims.iter().product::<u64>() / block * bytes;
        }
        let data_offset = align(out.len() as u64, self.alignment);
        out.resize(data_offset as usize, 0);
        let mut file = File::create(path)?;
        file.write_all(&out)?;
        let total = data_offset + self.data_len();
        if sparse {
            file.set_len(total)?;
        } else {
            let zeros = vec![0u8; 1 << 16];
            let mut left = self.data_len();
            while left > 0 {
                let n = left.min(zeros.len() as u64) as usize;
                file.write_all(&zeros[..n])?;
                left -= n as u64;
            }
        }
        Ok(())
    }
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &MetaValue) {
    match v {
        MetaValue::U8(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I8(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::Bool(x) => out.push(u8::from(*x)),
        MetaValue::String(s) => put_string(out, s),
        MetaValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::Array(a) => {
            out.extend_from_slice(&(a.elem_type as u32).to_le_bytes());
            let values = a.values.as_deref().unwrap_or(&[]);
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            for e in values {
                put_value(out, e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> GgufWriter {
        GgufWriter::new()
            .meta_str("general.architecture", "llama")
            .meta_str("general.name", "Tiny")
            .meta_u32("llama.context_length", 2048)
            .meta_array(
                "tokenizer.ggml.tokens",
                ValueType::String,
                (0..100)
                    .map(|i| MetaValue::String(format!("t{i}")))
                    .collect(),
            )
            .tensor("token_embd.weight", &[64, 100], 3)
            .tensor("output_norm.weight", &[64], 0)
    }

    fn write(dir: &Path, name: &str, w: &GgufWriter) -> PathBuf {
        let p = dir.join(name);
        w.write_to(&p, false).unwrap();
        p
    }

    #[test]
    fn reads_what_the_writer_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "tiny.gguf", &tiny());
        let h = GgufHeader::read(&p).unwrap();
        assert_eq!(h.version, 3);
        assert_eq!(h.architecture(), Some("llama"));
        assert_eq!(h.arch_u64("context_length"), Some(2048));
        assert_eq!(h.n_parameters(), 64 * 100 + 64);
        assert_eq!(h.tensors[0].type_name(), "Q4_1");
        assert_eq!(h.tensors[0].size_bytes, 64 * 100 / 32 * 20);
        match h.get("tokenizer.ggml.tokens") {
            Some(MetaValue::Array(a)) => {
                assert_eq!(a.len, 100);
                assert!(a.values.is_none(), "long arrays keep only their length");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn every_truncation_is_rejected_without_panicking() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "tiny.gguf", &tiny());
        let bytes = std::fs::read(&p).unwrap();
        for cut in 0..bytes.len() {
            let short = dir.path().join("short.gguf");
            std::fs::write(&short, &bytes[..cut]).unwrap();
            let err = GgufHeader::read(&short).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("short.gguf"), "error names the file: {msg}");
            assert!(
                matches!(
                    err,
                    GgufError::Truncated { .. } | GgufError::BadMagic { .. }
                ),
                "cut at {cut}: {msg}"
            );
        }
    }

    #[test]
    fn random_bytes_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("noise.gguf");
        // A fixed pseudo-random stream: deterministic, and not a GGUF.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(&p, &noise).unwrap();
        assert!(matches!(
            GgufHeader::read(&p),
            Err(GgufError::BadMagic { .. })
        ));
        // Random bytes behind a valid magic and version exercise the length checks.
        let mut forged = b"GGUF".to_vec();
        forged.extend_from_slice(&3u32.to_le_bytes());
        forged.extend_from_slice(&noise);
        std::fs::write(&p, &forged).unwrap();
        let err = GgufHeader::read(&p).unwrap_err();
        assert!(
            matches!(err, GgufError::Corrupt { .. } | GgufError::Truncated { .. }),
            "{err}"
        );
    }

    #[test]
    fn flipped_bytes_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "tiny.gguf", &tiny());
        let bytes = std::fs::read(&p).unwrap();
        let header_len = GgufHeader::read(&p).unwrap().header_bytes_read as usize;
        let q = dir.path().join("flipped.gguf");
        for i in 0..header_len {
            for v in [0x00u8, 0xff, 0x80] {
                let mut b = bytes.clone();
                b[i] = v;
                std::fs::write(&q, &b).unwrap();
                // Either it still parses (the byte did not matter) or it is a typed error.
                let _ = GgufHeader::read(&q);
            }
        }
    }

    #[test]
    fn a_header_claiming_huge_counts_is_corrupt_not_an_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("forged.gguf");
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&p, &b).unwrap();
        let err = GgufHeader::read(&p).unwrap_err();
        assert!(matches!(err, GgufError::Truncated { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("metadata count of 18446744073709551615"),
            "{err}"
        );
    }

    #[test]
    fn bad_version_and_directory_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v1.gguf");
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&[0u8; 16]);
        std::fs::write(&p, &b).unwrap();
        let err = GgufHeader::read(&p).unwrap_err();
        assert!(
            matches!(err, GgufError::UnsupportedVersion { version: 1, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("convert the model again"), "{err}");
        assert!(matches!(
            GgufHeader::read(dir.path()),
            Err(GgufError::IsDirectory { .. })
        ));
        let missing = dir.path().join("nope.gguf");
        let err = GgufHeader::read(&missing).unwrap_err();
        assert!(err.to_string().contains("nope.gguf"));
    }

    /// What a version field outside 2..=3 says: a text file that starts with "GGUF" (the e2e's
    /// broken.gguf was reported as "GGUF version 1953459744 is not supported"), a big-endian file,
    /// a newer format.
    #[test]
    fn a_version_field_is_read_for_what_it_means() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&str, Vec<u8>, &str); 3] = [
            (
                "text.gguf",
                b"GGUF not really a model".to_vec(),
                "not a GGUF file: it starts with \"GGUF\" but its version field reads 1953459744",
            ),
            (
                "big-endian.gguf",
                [b"GGUF".as_slice(), &3u32.to_be_bytes(), &[0u8; 16]].concat(),
                "a big-endian GGUF file (version 3)",
            ),
            (
                "future.gguf",
                [b"GGUF".as_slice(), &4u32.to_le_bytes(), &[0u8; 16]].concat(),
                "GGUF version 4 is newer than this build reads",
            ),
        ];
        for (name, bytes, says) in cases {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            let err = GgufHeader::read(&p).unwrap_err();
            assert!(matches!(err, GgufError::UnsupportedVersion { .. }), "{err}");
            let msg = err.to_string();
            assert!(msg.contains(says) && msg.contains(name), "{name}: {msg}");
        }
    }

    #[test]
    fn rewrite_keeps_everything_but_the_edits() {
        let dir = tempfile::tempdir().unwrap();
        let src = write(dir.path(), "src.gguf", &tiny());
        let dst = dir.path().join("dst.gguf");
        rewrite_metadata(
            &src,
            &dst,
            &[
                MetaEdit::Set(
                    "general.architecture".into(),
                    MetaValue::String("frobnicator".into()),
                ),
                MetaEdit::Remove("general.name".into()),
                MetaEdit::Set("x.new".into(), MetaValue::U32(7)),
            ],
        )
        .unwrap();
        let a = GgufHeader::read(&src).unwrap();
        let b = GgufHeader::read(&dst).unwrap();
        assert_eq!(b.architecture(), Some("frobnicator"));
        assert_eq!(b.get("general.name"), None);
        assert_eq!(b.get_u64("x.new"), Some(7));
        assert_eq!(
            b.get("tokenizer.ggml.tokens"),
            a.get("tokenizer.ggml.tokens")
        );
        assert_eq!(a.tensors, b.tensors);
        let data =
            |p: &Path, h: &GgufHeader| std::fs::read(p).unwrap()[h.data_offset as usize..].to_vec();
        assert_eq!(data(&src, &a), data(&dst, &b));
    }

    #[test]
    fn tensor_directory_is_validated() {
        let dir = tempfile::tempdir().unwrap();
        // A Q4_1 tensor whose row is not a whole number of blocks.
        let w = GgufWriter::new().tensor("bad", &[33, 2], 3);
        let p = write(dir.path(), "rows.gguf", &w);
        let err = GgufHeader::read(&p).unwrap_err().to_string();
        assert!(err.contains("not a multiple"), "{err}");
        // An unknown tensor type.
        let w = GgufWriter::new().tensor("odd", &[32], 99);
        let p = write(dir.path(), "type.gguf", &w);
        let err = GgufHeader::read(&p).unwrap_err().to_string();
        assert!(err.contains("unknown ggml type 99"), "{err}");
        // Duplicate keys.
        let w = GgufWriter::new().meta_u32("a", 1).meta_u32("a", 2);
        let p = write(dir.path(), "dup.gguf", &w);
        let err = GgufHeader::read(&p).unwrap_err().to_string();
        assert!(err.contains("duplicate metadata key"), "{err}");
    }

    #[test]
    fn a_huge_sparse_model_reads_only_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.gguf");
        // 5 GiB of F16 weights, as a hole in a sparse file.
        let w = tiny().tensor("blk.0.ffn.weight", &[65536, 40960], 1);
        w.write_to(&p, true).unwrap();
        let h = GgufHeader::read(&p).unwrap();
        assert!(h.file_size > 5 << 30);
        assert!(
            h.header_bytes_read < 4096,
            "read {} bytes",
            h.header_bytes_read
        );
    }
}
