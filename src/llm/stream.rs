//! Streaming text helpers for the decode loop: token bytes to UTF-8 text (a character can span
//! tokens), and stop strings (which can span tokens too), both fed one piece at a time.

/// Turns a stream of byte pieces into text, holding back an incomplete trailing character until
/// the piece that completes it arrives. Invalid bytes become U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The prefix was just validated.
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // Incomplete at the end: keep it for the next piece.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// What is left at the end of the stream (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            String::new()
        } else {
            self.pending.clear();
            "\u{FFFD}".into()
        }
    }
}

/// Result of feeding text to a `StopMatcher`.
#[derive(Debug, PartialEq, Eq)]
pub struct StopStep {
    /// Text that is safe to show: it cannot be part of a stop string.
    pub emit: String,
    /// A stop string was found; `emit` ends right before it.
    pub stopped: Option<String>,
}

/// Finds stop strings in streamed text. Text that might be the start of a stop string is held
/// back until it is clear either way, so a stop string is never partly shown.
#[derive(Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    pending: String,
}

impl StopMatcher {
    pub fn new(stops: &[String]) -> Self {
        StopMatcher {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            pending: String::new(),
        }
    }

    pub fn push(&mut self, text: &str) -> StopStep {
        self.pending.push_str(text);
        let earliest = self
            .stops
            .iter()
            .filter_map(|s| self.pending.find(s.as_str()).map(|i| (i, s)))
            .min_by_key(|(i, _)| *i);
        if let Some((i, stop)) = earliest {
            let emit = self.pending[..i].to_string();
            let stop = stop.clone();
            self.pending.clear();
            return StopStep {
                emit,
                stopped: Some(stop),
            };
        }
        // Hold back the longest suffix that is a prefix of some stop string.
        let mut hold = 0;
        for stop in &self.stops {
            let max = stop.len().min(self.pending.len());
            for len in (1..=max).rev() {
                let start = self.pending.len() - len;
                if self.pending.is_char_boundary(start)
                    && stop.is_char_boundary(len)
                    && stop.as_bytes()[..len] == self.pending.as_bytes()[start..]
                {
                    hold = hold.max(len);
                    break;
                }
            }
        }
        let cut = self.pending.len() - hold;
        let emit = self.pending[..cut].to_string();
        self.pending.drain(..cut);
        StopStep {
            emit,
            stopped: None,
        }
    }

    /// Text held back when the stream ends without a stop string.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` split at every possible pair of points and checks the result is the same.
    fn all_splits(text: &str, f: impl Fn(&[&str]) -> String) -> Vec<String> {
        let idx: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let mut outs = Vec::new();
        for &a in &idx {
            for &b in idx.iter().filter(|&&b| b >= a) {
                outs.push(f(&[&text[..a], &text[a..b], &text[b..]]));
            }
        }
        outs
    }

    #[test]
    fn utf8_across_pieces() {
        let text = "héllo 😀 wörld";
        let bytes = text.as_bytes();
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                let mut d = Utf8Stream::default();
                let mut out = d.push(&bytes[..a]);
                out += &d.push(&bytes[a..b]);
                out += &d.push(&bytes[b..]);
                out += &d.finish();
                assert_eq!(out, text, "split at {a},{b}");
            }
        }
    }

    #[test]
    fn utf8_invalid_bytes_are_replaced() {
        let mut d = Utf8Stream::default();
        assert_eq!(d.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(d.push(b"\xe2\x82"), "");
        assert_eq!(d.finish(), "\u{FFFD}");
    }

    #[test]
    fn stop_string_found_in_any_split() {
        let stops = vec!["Observation:".to_string(), "\n\n".to_string()];
        let text = "Thought: look\nAction: search\nObservation: x";
        for out in all_splits(text, |pieces| {
            let mut m = StopMatcher::new(&stops);
            let mut out = String::new();
            for p in pieces {
                let step = m.push(p);
                out += &step.emit;
                if let Some(s) = step.stopped {
                    return format!("{out}|{s}");
                }
            }
            out + &m.finish()
        }) {
            assert_eq!(out, "Thought: look\nAction: search\n|Observation:");
        }
    }

    #[test]
    fn partial_stop_is_held_then_released() {
        let stops = vec!["</answer>".to_string()];
        let mut m = StopMatcher::new(&stops);
        assert_eq!(m.push("a </an").emit, "a ");
        let step = m.push("d more");
        assert_eq!(step.emit, "</and more");
        assert_eq!(step.stopped, None);
        assert_eq!(m.finish(), "");
    }

    #[test]
    fn earliest_stop_wins() {
        let stops = vec!["bb".to_string(), "ab".to_string()];
        let mut m = StopMatcher::new(&stops);
        let step = m.push("xabb");
        assert_eq!(step.emit, "x");
        assert_eq!(step.stopped.as_deref(), Some("ab"));
    }
}
