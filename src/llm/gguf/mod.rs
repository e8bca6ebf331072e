//! A validating reader for GGUF headers (metadata and tensor directory).
//!
//! llama.cpp aborts or misbehaves on some malformed files and only explains itself in its log, so
//! every file is read here first: the header is parsed with every length and count checked against
//! the bytes that remain, and the tensor directory is checked against the file size, so a truncated
//! download is caught before llama.cpp ever maps it. Tensor data is never read: the cost is the
//! size of the header (a few MB for a large vocabulary), whatever the size of the weights.

mod reader;
#[cfg(test)]
mod tests;
// The writer builds test fixtures (valid, corrupt and edge-case models) without shipping
// binary files, and the converted embedding model (see `llm::convert`).
mod write;

pub use write::GgufWriter;
#[cfg(any(test, feature = "testing"))]
pub use write::{rewrite_metadata, MetaEdit};

use reader::HeaderReader;

use std::fmt;
use std::io::{self, BufReader, Read};
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
    /// directory: where the header's parts lie, for tools that copy them verbatim.
    pub kv_ranges: Vec<std::ops::Range<u64>>,
    pub tensor_dir_range: std::ops::Range<u64>,
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
        // A FIFO named like a model hung `models list` (issue 17).
        let file = crate::safe_open::open_regular(path, crate::safe_open::Links::Follow)
            .map_err(io_err)?;
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

fn align(offset: u64, alignment: u64) -> u64 {
    offset.div_ceil(alignment) * alignment
}
