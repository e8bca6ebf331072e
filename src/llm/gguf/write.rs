//! Writing GGUF files: test fixtures from metadata and tensor shapes, copies of a real model
//! with its metadata edited (realistic bad inputs), and converted models with their weights.

use std::fs::File;
use std::io::Write;

use super::*;

/// A change to a model's metadata, for `rewrite_metadata`.
#[cfg(any(test, feature = "testing"))]
#[derive(Debug, Clone)]
pub enum MetaEdit {
    Set(String, MetaValue),
    Remove(String),
}

/// Copies the GGUF at `src` to `dst` with its metadata edited and everything else (tensor
/// directory, weights) byte for byte. Used to build realistic bad inputs from a real model (an
/// unknown architecture, a broken chat template) and to fix up metadata.
#[cfg(any(test, feature = "testing"))]
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
        let header = self.header();
        let mut file = File::create(path)?;
        file.write_all(&header)?;
        let total = header.len() as u64 + self.data_len();
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

    /// Writes the whole file to `out`: the header, then each tensor's data as `data` writes it
    /// (called once per tensor, in the order they were added), aligned. A tensor whose data is
    /// not the size its shape and type say is an `InvalidData` error naming it: the file
    /// would otherwise be one llama.cpp reads wrong.
    pub fn write_with_data(
        &self,
        out: &mut dyn Write,
        data: &mut dyn FnMut(usize, &mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        out.write_all(&self.header())?;
        let mut offset = 0u64;
        let zeros = [0u8; 64];
        for (i, (name, dims, ty)) in self.tensors.iter().enumerate() {
            let aligned = align(offset, self.alignment);
            let mut pad = aligned - offset;
            while pad > 0 {
                let n = pad.min(zeros.len() as u64) as usize;
                out.write_all(&zeros[..n])?;
                pad -= n as u64;
            }
            let (block, bytes) = ggml_type_layout(*ty).unwrap_or((1, 1));
            let expected = dims.iter().product::<u64>() / block * bytes;
            let mut counted = Counted {
                inner: &mut *out,
                n: 0,
            };
            data(i, &mut counted)?;
            if counted.n != expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "tensor {name}: {} bytes of data where its shape takes {expected}",
                        counted.n
                    ),
                ));
            }
            offset = aligned + expected;
        }
        Ok(())
    }

    /// The header: metadata and the tensor directory, padded to where the data starts.
    fn header(&self) -> Vec<u8> {
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
        out
    }
}

/// A writer that counts what passes through it.
struct Counted<'a> {
    inner: &'a mut dyn Write,
    n: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
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
