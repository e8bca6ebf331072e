//! Long JSON strings cut while they are read, before the JSON parser holds them: a 200 MB
//! issue body peaked at three times its size in memory although only its first 65,536
//! characters are kept (issue 17). What is cut is replaced by a marker carrying the string's
//! whole length, so the importer's note can still say how long it was.

use std::io::Read;

/// What a cut string ends with, then its whole length in characters (a control character
/// first, so no text a person writes ends this way by accident).
pub(super) const CUT_MARK: &str = "\u{1}burrow-cut:";

/// `CUT_MARK` as it is written inside a JSON string.
const CUT_MARK_JSON: &str = "\\u0001burrow-cut:";

/// The most bytes of one record (an element of a top-level array, or a top-level object) the
/// parser is handed once its long strings are cut: a record past it is refused, so memory
/// stays bounded whatever the file holds. Real records are far smaller (a pull request with
/// its reviews is kilobytes; 100 search results at GitHub's body limit are about 30 MB).
pub(super) const MAX_RECORD_BYTES: usize = 64 << 20;

enum Escape {
    None,
    Backslash,
    Hex { digits: u8, value: u32 },
}

/// A reader of JSON text that passes every string's first `keep` characters and drops the
/// rest (ending the string with `CUT_MARK` and its length), and refuses a record longer than
/// `MAX_RECORD_BYTES` after that.
pub(super) struct CutLongStrings<R> {
    inner: R,
    keep: usize,
    in_string: bool,
    escape: Escape,
    /// Characters of the current string so far, and of those passed on.
    total: usize,
    kept: usize,
    skipping: bool,
    /// The last character was the first half of a surrogate pair (`\uD83D`): its second half
    /// goes with it, so a cut never splits a pair into invalid JSON.
    after_high: bool,
    depth: usize,
    max_record: usize,
    /// The depth at which records sit: 1 inside a top-level array, else 0.
    base: Option<usize>,
    record_bytes: usize,
    /// A record passed `MAX_RECORD_BYTES`.
    pub(super) over: bool,
    pending: Vec<u8>,
    scratch: Vec<u8>,
}

impl<R: Read> CutLongStrings<R> {
    pub(super) fn new(inner: R, keep: usize) -> Self {
        CutLongStrings {
            inner,
            keep,
            in_string: false,
            escape: Escape::None,
            total: 0,
            kept: 0,
            skipping: false,
            after_high: false,
            depth: 0,
            max_record: MAX_RECORD_BYTES,
            base: None,
            record_bytes: 0,
            over: false,
            pending: Vec::new(),
            scratch: vec![0; 8 << 10],
        }
    }

    /// Starts a character: from here on it is dropped if the string already has `keep`.
    fn start_char(&mut self, backslash: bool) {
        if !self.skipping && self.kept >= self.keep && !(self.after_high && backslash) {
            self.skipping = true;
        }
    }

    /// Ends a character; a pair's second half is not counted again.
    fn end_char(&mut self, low_surrogate: bool, high_surrogate: bool) {
        if !(low_surrogate && self.after_high) {
            self.total += 1;
            if !self.skipping {
                self.kept += 1;
            }
        }
        self.after_high = high_surrogate;
    }

    /// Filters one byte into `pending`.
    fn filter(&mut self, b: u8) {
        if !self.in_string {
            match b {
                b'"' => {
                    self.in_string = true;
                    self.total = 0;
                    self.kept = 0;
                    self.skipping = false;
                    self.after_high = false;
                }
                b'[' | b'{' => {
                    if self.base.is_none() {
                        self.base = Some(usize::from(b == b'['));
                    }
                    self.depth += 1;
                }
                b']' | b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth <= self.base.unwrap_or(0) {
                        self.record_bytes = 0;
                    }
                }
                _ => {}
            }
            self.emit(b);
            return;
        }
        match self.escape {
            Escape::Backslash => {
                if b == b'u' {
                    self.escape = Escape::Hex {
                        digits: 0,
                        value: 0,
                    };
                } else {
                    self.escape = Escape::None;
                    self.end_char(false, false);
                }
                self.emit_in_string(b);
            }
            Escape::Hex { digits, value } => {
                let value = value * 16 + char::from(b).to_digit(16).unwrap_or(0);
                if digits + 1 == 4 || !b.is_ascii_hexdigit() {
                    self.escape = Escape::None;
                    self.end_char(
                        (0xDC00..0xE000).contains(&value),
                        (0xD800..0xDC00).contains(&value),
                    );
                } else {
                    self.escape = Escape::Hex {
                        digits: digits + 1,
                        value,
                    };
                }
                self.emit_in_string(b);
            }
            Escape::None => match b {
                b'"' => {
                    if self.skipping {
                        let mark = format!("{CUT_MARK_JSON}{}", self.total);
                        for m in mark.into_bytes() {
                            self.emit(m);
                        }
                    }
                    self.in_string = false;
                    self.emit(b);
                }
                b'\\' => {
                    self.start_char(true);
                    self.escape = Escape::Backslash;
                    self.emit_in_string(b);
                }
                // Not valid in a JSON string: passed on whatever the cut, so the parser says
                // where it is (and counts the lines right).
                0..=0x1f => self.emit(b),
                // The rest of a UTF-8 character goes where its first byte went.
                0x80..=0xbf => self.emit_in_string(b),
                _ => {
                    self.start_char(false);
                    self.end_char(false, false);
                    self.emit_in_string(b);
                }
            },
        }
    }

    fn emit_in_string(&mut self, b: u8) {
        if !self.skipping {
            self.emit(b);
        }
    }

    fn emit(&mut self, b: u8) {
        if self.depth > self.base.unwrap_or(0) {
            self.record_bytes += 1;
            if self.record_bytes > self.max_record {
                self.over = true;
            }
        }
        self.pending.push(b);
    }
}

impl<R: Read> Read for CutLongStrings<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.is_empty() {
            if self.over {
                return Err(std::io::Error::other(format!(
                    "a record is larger than {} MiB once its long texts are cut",
                    self.max_record >> 20
                )));
            }
            // serde_json reads a byte at a time: read no further ahead than asked, so the
            // next value of the file is left for the next parser.
            let want = buf.len().min(self.scratch.len());
            let n = self.inner.read(&mut self.scratch[..want])?;
            if n == 0 {
                return Ok(0);
            }
            for i in 0..n {
                let b = self.scratch[i];
                self.filter(b);
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

/// A string the reader cut: its text without the mark, and its whole length in characters.
pub(super) fn cut_length(text: &str) -> Option<(usize, usize)> {
    let at = text.rfind(CUT_MARK)?;
    let total = text[at + CUT_MARK.len()..].parse().ok()?;
    Some((at, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(json: &str, keep: usize) -> String {
        let mut out = String::new();
        CutLongStrings::new(json.as_bytes(), keep)
            .read_to_string(&mut out)
            .unwrap();
        out
    }

    /// Issue 17: the parser held a 200 MB string whole before the importer cut it.
    #[test]
    fn long_strings_are_cut_while_read_and_keep_their_length() {
        let long = "ab".repeat(500_000);
        let json = format!(r#"[{{"body": "{long}", "title": "short"}}]"#);
        let out = cut(&json, 10);
        assert!(out.len() < 100, "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let body = v[0]["body"].as_str().unwrap();
        assert_eq!(cut_length(body), Some((10, 1_000_000)));
        assert_eq!(&body[..10], "ababababab");
        assert_eq!(v[0]["title"], "short");
    }

    #[test]
    fn escapes_and_multibyte_characters_count_once_and_pairs_stay_whole() {
        // 'é' is two bytes, '\n' and '\u00e9' one character each, the emoji a surrogate pair.
        let json = r#""é\n\u00e9\ud83d\ude00xyz""#;
        for keep in 0..7 {
            let out = cut(json, keep);
            let s: String = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{keep}: {e}"));
            let full: String = serde_json::from_str(json).unwrap();
            match cut_length(&s) {
                Some((at, total)) => {
                    assert_eq!(total, 7, "{keep}");
                    assert_eq!(s[..at].chars().count(), keep, "{keep}");
                    assert!(full.starts_with(&s[..at]));
                }
                None => assert!(keep >= 7 && s == full, "{keep}: {s}"),
            }
        }
        // Quotes escaped inside a dropped part do not end the string.
        let out = cut(r#"["0123456789\"\\\"", "next"]"#, 4);
        let v: Vec<String> = serde_json::from_str(&out).unwrap();
        assert_eq!(cut_length(&v[0]).map(|c| c.1), Some(13));
        assert_eq!(v[1], "next");
    }

    #[test]
    fn a_record_past_the_limit_is_refused_and_short_ones_pass() {
        let item = format!(r#"{{"t": "{}"}}"#, "x".repeat(1000));
        let many = vec![item.as_str(); 2100].join(",");
        let limited = |json: String| {
            let mut reader = CutLongStrings::new(std::io::Cursor::new(json), 65_536);
            reader.max_record = 2 << 20;
            let copied = std::io::copy(&mut reader, &mut std::io::sink());
            (copied, reader.over)
        };
        let (copied, over) = limited(format!(r#"[{{"items": [{many}]}}]"#));
        let e = copied.unwrap_err();
        assert!(e.to_string().contains("2 MiB"), "{e}");
        assert!(over);
        // The same bytes as many records of a top-level array, or cut strings, are fine.
        assert!(limited(format!("[{many}]")).0.is_ok());
        let long = format!(r#"{{"body": "{}"}}"#, "x".repeat(3 << 20));
        assert!(limited(long).0.is_ok());
    }
}
