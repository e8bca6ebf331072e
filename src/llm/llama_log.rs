//! llama.cpp's log, captured. llama.cpp explains failures (why a file did not load, why a
//! grammar did not parse) only in its log, and by default writes it all to stderr. Burrow keeps
//! the recent warnings and errors in memory, so a failure can carry llama.cpp's reason, and
//! forwards every line to `tracing` at debug level instead of printing it.

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;

const KEEP_LINES: usize = 256;

struct Ring {
    /// (sequence number, level, line)
    lines: VecDeque<(u64, u32, String)>,
    next: u64,
    /// A line without its trailing newline yet (llama.cpp continues lines with LEVEL_CONT).
    partial: Option<(u32, String)>,
}

static RING: Mutex<Ring> = Mutex::new(Ring {
    lines: VecDeque::new(),
    next: 0,
    partial: None,
});

const LEVEL_WARN: u32 = llama_cpp_sys_2::GGML_LOG_LEVEL_WARN;
const LEVEL_CONT: u32 = llama_cpp_sys_2::GGML_LOG_LEVEL_CONT;

unsafe extern "C" fn on_log(
    level: llama_cpp_sys_2::ggml_log_level,
    text: *const c_char,
    _: *mut c_void,
) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string valid for this call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    let Ok(mut ring) = RING.lock() else {
        return;
    };
    let (level, mut line) = match (level, ring.partial.take()) {
        (LEVEL_CONT, Some((l, mut s))) => {
            s.push_str(&text);
            (l, s)
        }
        (LEVEL_CONT, None) => (LEVEL_WARN, text.into_owned()),
        (l, Some((pl, ps))) => {
            // A new line started before the previous one ended: keep both.
            push_line(&mut ring, pl, ps);
            (l, text.into_owned())
        }
        (l, None) => (l, text.into_owned()),
    };
    if !line.ends_with('\n') {
        ring.partial = Some((level, line));
        return;
    }
    line.pop();
    push_line(&mut ring, level, line);
}

fn push_line(ring: &mut Ring, level: u32, line: String) {
    tracing::debug!(target: "llama.cpp", level, "{line}");
    if level < LEVEL_WARN {
        return;
    }
    let seq = ring.next;
    ring.next += 1;
    ring.lines.push_back((seq, level, line));
    while ring.lines.len() > KEEP_LINES {
        ring.lines.pop_front();
    }
}

/// Routes llama.cpp's (and ggml's) log here. Called once, when the backend starts.
pub(crate) fn install() {
    // SAFETY: on_log is a valid callback for the life of the process and ignores user data.
    unsafe { llama_cpp_sys_2::llama_log_set(Some(on_log), std::ptr::null_mut()) };
}

/// A position in the log; `since` returns the warnings and errors logged after it.
#[derive(Debug, Clone, Copy)]
pub struct LogMark(u64);

pub fn mark() -> LogMark {
    LogMark(RING.lock().map(|r| r.next).unwrap_or(0))
}

const LEVEL_ERROR: u32 = llama_cpp_sys_2::GGML_LOG_LEVEL_ERROR;

/// Warnings and errors logged since `mark`, oldest first, with their level.
fn since(mark: LogMark) -> Vec<(u32, String)> {
    let Ok(ring) = RING.lock() else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = ring
        .lines
        .iter()
        .filter(|(seq, _, _)| *seq >= mark.0)
        .map(|(_, level, l)| (*level, l.trim().to_string()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    if let Some((level, p)) = &ring.partial {
        out.push((*level, p.trim().to_string()));
    }
    out
}

/// llama.cpp's own explanation since `mark`: its error lines (the last few), else its last
/// warnings, else `fallback`.
pub fn reason_since(mark: LogMark, fallback: &str) -> String {
    let lines = since(mark);
    let errors: Vec<&str> = lines
        .iter()
        .filter(|(level, _)| *level >= LEVEL_ERROR)
        .map(|(_, l)| l.as_str())
        .collect();
    let pick: Vec<&str> = if errors.is_empty() {
        lines.iter().map(|(_, l)| l.as_str()).collect()
    } else {
        errors
    };
    let tail = &pick[pick.len().saturating_sub(3)..];
    if tail.is_empty() {
        fallback.to_string()
    } else {
        tail.join("; ")
    }
}
