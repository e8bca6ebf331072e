//! The header reader: every length and count checked against the bytes that remain.

use super::*;

pub(super) struct HeaderReader<R> {
    pub(super) inner: R,
    pub(super) pos: u64,
    pub(super) file_size: u64,
    pub(super) path: PathBuf,
}

impl<R: Read> HeaderReader<R> {
    pub(super) fn corrupt_at(&self, offset: u64, reason: String) -> GgufError {
        GgufError::Corrupt {
            path: self.path.clone(),
            offset,
            reason,
        }
    }

    pub(super) fn truncated(&self, what: &str, needed: u64) -> GgufError {
        GgufError::Truncated {
            path: self.path.clone(),
            what: what.to_string(),
            offset: self.pos,
            needed,
            file_size: self.file_size,
        }
    }

    pub(super) fn remaining(&self) -> u64 {
        self.file_size.saturating_sub(self.pos)
    }

    /// Fails unless `n` bytes remain in the file and the header stays under its size bound.
    pub(super) fn ensure(&self, n: u64, what: &str) -> Result<(), GgufError> {
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
    pub(super) fn check_count(
        &self,
        count: u64,
        min_bytes_each: u64,
        what: &str,
    ) -> Result<(), GgufError> {
        let needed = count.saturating_mul(min_bytes_each);
        if needed > self.remaining() {
            return Err(self.truncated(&format!("{what} of {count}"), needed));
        }
        Ok(())
    }

    pub(super) fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), GgufError> {
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

    pub(super) fn bytes_or_short(&mut self, n: usize) -> Result<Vec<u8>, GgufError> {
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

    pub(super) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let mut buf = [0u8; N];
        self.fill(&mut buf, what)?;
        Ok(buf)
    }

    pub(super) fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(super) fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub(super) fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let at = self.pos;
        let len = self.u64(what)?;
        self.ensure(len, what)?;
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf, what)?;
        String::from_utf8(buf)
            .map_err(|_| self.corrupt_at(at, format!("{what} is not valid UTF-8")))
    }

    pub(super) fn skip_string(
        &mut self,
        what: &str,
        scratch: &mut Vec<u8>,
    ) -> Result<(), GgufError> {
        let len = self.u64(what)?;
        self.ensure(len, what)?;
        scratch.resize(len as usize, 0);
        self.fill(scratch, what)
    }

    pub(super) fn value(&mut self, vt: ValueType, key: &str) -> Result<MetaValue, GgufError> {
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
