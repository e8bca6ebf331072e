//! Reading tensors out of a `.safetensors` file: an 8-byte little-endian header length, a JSON
//! header naming each tensor's dtype, shape and byte range, then the raw data. Only what a
//! conversion reads is supported (F32, F16 and BF16, little-endian); every size and range is
//! checked before anything is allocated or read.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConvertError;
use crate::safe_open::{open_regular, Links};

/// Far larger than any real header (MiniLM's is 12 KiB); a larger claim is a broken file.
const MAX_HEADER: u64 = 64 << 20;

#[derive(Debug, Clone, Deserialize)]
pub struct TensorEntry {
    pub dtype: String,
    pub shape: Vec<u64>,
    pub data_offsets: [u64; 2],
}

/// An open safetensors file and its header.
pub struct SafeTensors {
    path: PathBuf,
    file: File,
    data_start: u64,
    pub tensors: BTreeMap<String, TensorEntry>,
}

impl SafeTensors {
    pub fn open(path: &Path) -> Result<Self, ConvertError> {
        let bad = |message: String| ConvertError::Safetensors {
            path: path.to_path_buf(),
            message,
        };
        let io = |source| ConvertError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = open_regular(path, Links::Follow).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let mut len = [0u8; 8];
        file.read_exact(&mut len)
            .map_err(|_| bad("shorter than its 8-byte header length".into()))?;
        let header_len = u64::from_le_bytes(len);
        if header_len > MAX_HEADER || 8 + header_len > file_len {
            return Err(bad(format!(
                "a header of {header_len} bytes in a file of {file_len}"
            )));
        }
        let mut header = vec![0u8; header_len as usize];
        file.read_exact(&mut header).map_err(io)?;
        let raw: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&header)
            .map_err(|e| bad(format!("the header is not JSON: {e}")))?;
        let data_start = 8 + header_len;
        let data_len = file_len - data_start;
        let mut tensors = BTreeMap::new();
        for (name, value) in raw {
            if name == "__metadata__" {
                continue;
            }
            let entry: TensorEntry =
                serde_json::from_value(value).map_err(|e| bad(format!("tensor {name}: {e}")))?;
            let [begin, end] = entry.data_offsets;
            if begin > end || end > data_len {
                return Err(bad(format!(
                    "tensor {name}: bytes {begin}..{end} of {data_len}"
                )));
            }
            if let Some(size) = dtype_size(&entry.dtype) {
                let n = entry
                    .shape
                    .iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .and_then(|n| n.checked_mul(size));
                if n != Some(end - begin) {
                    return Err(bad(format!(
                        "tensor {name}: shape {:?} of {} takes other than its {} bytes",
                        entry.shape,
                        entry.dtype,
                        end - begin
                    )));
                }
            }
            tensors.insert(name, entry);
        }
        Ok(SafeTensors {
            path: path.to_path_buf(),
            file,
            data_start,
            tensors,
        })
    }

    /// The tensor `name` as f32 values, with its shape.
    pub fn read_f32(&mut self, name: &str) -> Result<(Vec<u64>, Vec<f32>), ConvertError> {
        let entry = self
            .tensors
            .get(name)
            .ok_or_else(|| ConvertError::Tensor {
                name: name.to_string(),
                message: "missing".into(),
            })?
            .clone();
        let unsupported = || ConvertError::Tensor {
            name: name.to_string(),
            message: format!("dtype {} (F32, F16 or BF16 are read)", entry.dtype),
        };
        let size = dtype_size(&entry.dtype).ok_or_else(unsupported)?;
        let [begin, end] = entry.data_offsets;
        let io = |source| ConvertError::Io {
            path: self.path.clone(),
            source,
        };
        self.file
            .seek(SeekFrom::Start(self.data_start + begin))
            .map_err(io)?;
        let mut bytes = vec![0u8; (end - begin) as usize];
        self.file
            .read_exact(&mut bytes)
            .map_err(|source| ConvertError::Io {
                path: self.path.clone(),
                source,
            })?;
        let values = match (entry.dtype.as_str(), size) {
            ("F32", 4) => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            ("F16", 2) => bytes
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            ("BF16", 2) => bytes
                .chunks_exact(2)
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                .collect(),
            _ => return Err(unsupported()),
        };
        Ok((entry.shape, values))
    }
}

fn dtype_size(dtype: &str) -> Option<u64> {
    match dtype {
        "F32" => Some(4),
        "F16" | "BF16" => Some(2),
        _ => None,
    }
}

/// IEEE half to single precision (exact: every half is a single).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: normalise the mantissa.
            let shift = man.leading_zeros() - 21;
            let man = (man << shift) & 0x3ff;
            sign | ((113 - shift) << 23) | (man << 13)
        }
        (0x1f, _) => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// Single to half precision, rounding to nearest even (as ggml and numpy do); too large is
/// infinity, a NaN stays a NaN.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        let nan = if man != 0 {
            0x200 | (man >> 13) as u16
        } else {
            0
        };
        return sign | 0x7c00 | nan;
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rounded = m + half - 1 + ((m >> shift) & 1);
        return sign | (rounded >> shift) as u16;
    }
    let rounded = man + 0xfff + ((man >> 13) & 1);
    // A carry out of the mantissa moves the exponent up, to infinity at the top.
    sign | (((e as u32) << 10) + (rounded >> 13)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_round_to_nearest_even_and_come_back_exactly() {
        for (x, h) in [
            (0.0f32, 0x0000u16),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (0.1, 0x2e66),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (1e6, 0x7c00),
            (5.960_464_5e-8, 0x0001),
            (6.097_555e-5, 0x03ff),
            (6.103_515_6e-5, 0x0400),
            (f32::INFINITY, 0x7c00),
            (f32::NEG_INFINITY, 0xfc00),
            // Halfway between 1 and the next half (1 + 2^-10): ties go to even (1).
            (1.0 + 2f32.powi(-11), 0x3c00),
            (1.0 + 3.0 * 2f32.powi(-11), 0x3c02),
        ] {
            assert_eq!(f32_to_f16(x), h, "{x}");
        }
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
        for h in (0u16..0x7c00).step_by(7).chain([0x0001, 0x03ff, 0x7bff]) {
            let x = f16_to_f32(h);
            assert_eq!(f32_to_f16(x), h, "{h:#06x} -> {x}");
            assert_eq!(f32_to_f16(-x), h | 0x8000);
        }
    }
}
