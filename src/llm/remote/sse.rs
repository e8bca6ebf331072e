//! Server-sent events read from the bytes of a streamed response.

/// Reads server-sent events from a byte stream: complete `data:` payloads, one per event.
#[derive(Default)]
pub(super) struct SseReader {
    buf: Vec<u8>,
    /// The last byte was a CR, read as a line's end: an LF now is the same end.
    after_cr: bool,
}

/// An event of a stream: its data, or an error the server sent in a field of its own.
#[derive(Debug, PartialEq)]
pub(super) enum SseEvent {
    Data(String),
    /// `error: …`, how llama-server before its HTTP rewrite sent a failure mid-stream (then
    /// `[DONE]`): dropped, the reply looked complete.
    Error(String),
}

impl SseReader {
    pub(super) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        // Lines may end in CR LF, LF or CR alone (the SSE standard's three): all read as LF.
        for &b in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            match b {
                b'\n' if after_cr => {}
                b'\r' => self.buf.push(b'\n'),
                _ => self.buf.push(b),
            }
        }
        let mut events = Vec::new();
        while let Some(at) = self.buf.windows(2).position(|w| w == b"\n\n") {
            let raw: Vec<u8> = self.buf.drain(..at + 2).collect();
            let text = String::from_utf8_lossy(&raw[..at]);
            let field = |name: &str| -> Vec<String> {
                text.split('\n')
                    .filter_map(|l| l.strip_prefix(name))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d).to_string())
                    .collect()
            };
            let error = field("error:");
            if !error.is_empty() {
                events.push(SseEvent::Error(error.join("\n")));
                continue;
            }
            // An empty data buffer dispatches nothing (a heartbeat `data:` failed as a
            // malformed event).
            let data = field("data:").join("\n");
            if !data.is_empty() {
                events.push(SseEvent::Data(data));
            }
        }
        events
    }
}
