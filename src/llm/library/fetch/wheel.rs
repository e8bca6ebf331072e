//! One member read out of a wheel (a zip archive), checked against its CRC-32 and size as it is
//! read. Only what packaging tools write is supported: stored or deflated members, zip64 for
//! large archives, no encryption. Malformed input is an `InvalidData` error, never a panic.

use std::io::{self, Read, Seek, SeekFrom};

use flate2::read::DeflateDecoder;
use flate2::Crc;

const EOCD: u32 = 0x0605_4b50;
const ZIP64_LOCATOR: u32 = 0x0706_4b50;
const ZIP64_EOCD: u32 = 0x0606_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const LOCAL: u32 = 0x0403_4b50;
/// The end record is 22 bytes and may be followed by a comment of up to 64 KiB.
const EOCD_SEARCH: u64 = 22 + 0xFFFF;
/// Far more than any wheel's listing; a larger claim is a corrupt archive, not a reason to
/// allocate.
const MAX_CENTRAL_DIRECTORY: u64 = 64 << 20;

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Little-endian fields of a record, bounds-checked.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn bytes(&self, at: usize, len: usize) -> io::Result<&[u8]> {
        at.checked_add(len)
            .and_then(|end| self.0.get(at..end))
            .ok_or_else(|| invalid("a zip record is cut short"))
    }
    fn u16(&self, at: usize) -> io::Result<u16> {
        let b = self.bytes(at, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&self, at: usize) -> io::Result<u32> {
        let b = self.bytes(at, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&self, at: usize) -> io::Result<u64> {
        let b = self.bytes(at, 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

fn read_at<R: Read + Seek>(r: &mut R, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    r.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf)?;
    if buf.len() as u64 != len {
        return Err(invalid("the archive ends before its records do"));
    }
    Ok(buf)
}

/// Where the central directory is: (offset, size).
fn central_directory<R: Read + Seek>(r: &mut R) -> io::Result<(u64, u64)> {
    let len = r.seek(SeekFrom::End(0))?;
    let start = len.saturating_sub(EOCD_SEARCH);
    let tail = read_at(r, start, len - start)?;
    let at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..i + 4] == EOCD.to_le_bytes())
        .ok_or_else(|| invalid("not a zip archive (no end of central directory)"))?;
    let eocd = Fields(&tail[at..]);
    let (size, offset) = (eocd.u32(12)?, eocd.u32(16)?);
    if size != u32::MAX && offset != u32::MAX {
        return Ok((u64::from(offset), u64::from(size)));
    }
    // Zip64: a locator just before the end record points at the 64-bit end record.
    let locator = at
        .checked_sub(20)
        .map(|l| Fields(&tail[l..at]))
        .ok_or_else(|| invalid("a zip64 archive without its locator"))?;
    if locator.u32(0)? != ZIP64_LOCATOR {
        return Err(invalid("a zip64 archive without its locator"));
    }
    let record = read_at(r, locator.u64(8)?, 56)?;
    let record = Fields(&record);
    if record.u32(0)? != ZIP64_EOCD {
        return Err(invalid("the zip64 end of central directory is missing"));
    }
    Ok((record.u64(48)?, record.u64(40)?))
}

/// A member's entry in the central directory.
struct Entry {
    flags: u16,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local_header: u64,
}

fn find_entry(directory: &[u8], name: &str) -> io::Result<Option<Entry>> {
    let mut pos = 0usize;
    while pos < directory.len() {
        let f = Fields(&directory[pos..]);
        if f.u32(0)? != CENTRAL {
            return Err(invalid("a central directory entry is malformed"));
        }
        let (name_len, extra_len, comment_len) = (
            usize::from(f.u16(28)?),
            usize::from(f.u16(30)?),
            usize::from(f.u16(32)?),
        );
        if f.bytes(46, name_len)? == name.as_bytes() {
            let mut entry = Entry {
                flags: f.u16(8)?,
                method: f.u16(10)?,
                crc: f.u32(16)?,
                compressed: u64::from(f.u32(20)?),
                size: u64::from(f.u32(24)?),
                local_header: u64::from(f.u32(42)?),
            };
            read_zip64_extra(&mut entry, f.bytes(46 + name_len, extra_len)?)?;
            return Ok(Some(entry));
        }
        pos += 46 + name_len + extra_len + comment_len;
    }
    Ok(None)
}

/// Fields too large for 32 bits are 0xFFFFFFFF in the entry and follow, in this order, in the
/// zip64 extra field.
fn read_zip64_extra(entry: &mut Entry, extra: &[u8]) -> io::Result<()> {
    let mut pos = 0usize;
    while pos + 4 <= extra.len() {
        let f = Fields(&extra[pos..]);
        let (id, len) = (f.u16(0)?, usize::from(f.u16(2)?));
        if id == 0x0001 {
            let data = Fields(f.bytes(4, len)?);
            let mut at = 0;
            for field in [
                &mut entry.size,
                &mut entry.compressed,
                &mut entry.local_header,
            ] {
                if *field == u64::from(u32::MAX) {
                    *field = data.u64(at)?;
                    at += 8;
                }
            }
            return Ok(());
        }
        pos += 4 + len;
    }
    Ok(())
}

enum Body<R: Read> {
    Stored(io::Take<R>),
    Deflated(DeflateDecoder<io::Take<R>>),
}

/// A member's content; the end of the member is an error unless its size and CRC-32 match.
pub(super) struct MemberReader<R: Read> {
    body: Body<R>,
    crc: Crc,
    read: u64,
    expected_crc: u32,
    expected_size: u64,
}

impl<R: Read> MemberReader<R> {
    /// The member's size once extracted, as the archive states it.
    pub(super) fn size(&self) -> u64 {
        self.expected_size
    }
}

impl<R: Read> Read for MemberReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.body {
            Body::Stored(r) => r.read(buf)?,
            Body::Deflated(r) => r.read(buf)?,
        };
        self.read += n as u64;
        if self.read > self.expected_size {
            return Err(invalid("the member is longer than its entry says"));
        }
        if n > 0 {
            self.crc.update(&buf[..n]);
        } else if !buf.is_empty() {
            if self.read != self.expected_size {
                return Err(invalid(format!(
                    "the member ends after {} of its {} bytes",
                    self.read, self.expected_size
                )));
            }
            if self.crc.sum() != self.expected_crc {
                return Err(invalid("the member's CRC-32 does not match its content"));
            }
        }
        Ok(n)
    }
}

/// The member `name` of the archive, or `None` when it has none by that name.
pub(super) fn open_member<R: Read + Seek>(
    mut archive: R,
    name: &str,
) -> io::Result<Option<MemberReader<R>>> {
    let (offset, size) = central_directory(&mut archive)?;
    if size > MAX_CENTRAL_DIRECTORY {
        return Err(invalid(format!("a central directory of {size} bytes")));
    }
    let directory = read_at(&mut archive, offset, size)?;
    let Some(entry) = find_entry(&directory, name)? else {
        return Ok(None);
    };
    if entry.flags & 1 != 0 {
        return Err(invalid("the member is encrypted"));
    }
    let local = read_at(&mut archive, entry.local_header, 30)?;
    let local = Fields(&local);
    if local.u32(0)? != LOCAL {
        return Err(invalid("the member's local header is missing"));
    }
    let data = entry.local_header + 30 + u64::from(local.u16(26)?) + u64::from(local.u16(28)?);
    archive.seek(SeekFrom::Start(data))?;
    let raw = archive.take(entry.compressed);
    let body = match entry.method {
        0 => Body::Stored(raw),
        8 => Body::Deflated(DeflateDecoder::new(raw)),
        m => return Err(invalid(format!("the member uses compression method {m}"))),
    };
    Ok(Some(MemberReader {
        body,
        crc: Crc::new(),
        read: 0,
        expected_crc: entry.crc,
        expected_size: entry.size,
    }))
}
