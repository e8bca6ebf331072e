//! The thought of a step, streamed out while the model is still writing the step.

use super::Protocol;

/// Pulls the thought out of a step while the model is still writing it, so it can be shown as
/// it comes: the `thinking`/`thought` string of the JSON dialects (escapes decoded), the
/// `Thought:` line of `text`, and the text before the call in `tool-calls`. Fed the output in
/// pieces, however they are cut; returns the new part of the thought each time.
#[derive(Debug, Clone)]
pub struct ThoughtStream {
    protocol: Protocol,
    /// Everything seen so far.
    seen: String,
    /// How much of `seen` is consumed.
    pos: usize,
    state: ThoughtState,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ThoughtState {
    /// Looking for where the thought starts.
    Before,
    /// Inside it.
    In,
    /// Past it: nothing more to emit.
    Done,
}

impl ThoughtStream {
    pub fn new(protocol: Protocol) -> Self {
        ThoughtStream {
            protocol,
            seen: String::new(),
            pos: 0,
            state: ThoughtState::Before,
        }
    }

    pub fn push(&mut self, piece: &str) -> String {
        self.seen.push_str(piece);
        let mut out = String::new();
        loop {
            match self.state {
                ThoughtState::Done => return out,
                ThoughtState::Before => {
                    let rest = &self.seen[self.pos..];
                    let start = match self.protocol {
                        Protocol::Text => rest.find("Thought:").map(|i| {
                            let after = i + "Thought:".len();
                            after + rest[after..].len()
                                - rest[after..].trim_start_matches(' ').len()
                        }),
                        // The call starts the structured part; what comes before is thought.
                        Protocol::ToolCalls => Some(0),
                        _ => json_string_start(rest, &["\"thinking\"", "\"thought\""]),
                    };
                    match start {
                        // Text: wait for the first character after "Thought: ", so the spaces
                        // before it are not taken for thought.
                        Some(i) if self.protocol == Protocol::Text && i >= rest.len() => {
                            return out
                        }
                        Some(i) => {
                            self.pos += i;
                            self.state = ThoughtState::In;
                        }
                        None => return out,
                    }
                }
                ThoughtState::In => {
                    let rest = &self.seen[self.pos..];
                    match self.protocol {
                        Protocol::Text => match rest.find('\n') {
                            Some(i) => {
                                out.push_str(&rest[..i]);
                                self.state = ThoughtState::Done;
                            }
                            None => {
                                out.push_str(rest);
                                self.pos = self.seen.len();
                                return out;
                            }
                        },
                        Protocol::ToolCalls => {
                            let marks = ["<tool_call>", "[TOOL_CALLS]", "{"];
                            if let Some(i) = marks.iter().filter_map(|m| rest.find(m)).min() {
                                out.push_str(&rest[..i]);
                                self.state = ThoughtState::Done;
                                continue;
                            }
                            // Hold back what could be the start of a mark.
                            let keep = marks
                                .iter()
                                .flat_map(|m| (1..m.len()).map(move |n| &m[..n]))
                                .filter(|p| rest.ends_with(p))
                                .map(|p| p.len())
                                .max()
                                .unwrap_or(0);
                            let cut = rest.len() - keep;
                            out.push_str(&rest[..cut]);
                            self.pos += cut;
                            return out;
                        }
                        _ => {
                            let (decoded, used, closed) = json_string_prefix(rest);
                            out.push_str(&decoded);
                            self.pos += used;
                            if closed {
                                self.state = ThoughtState::Done;
                            } else {
                                return out;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Where the string value of the first of `keys` starts (just after its opening quote), once
/// the text has come that far.
fn json_string_start(text: &str, keys: &[&str]) -> Option<usize> {
    let (at, key) = keys
        .iter()
        .filter_map(|k| text.find(k).map(|i| (i, *k)))
        .min_by_key(|(i, _)| *i)?;
    let after = &text[at + key.len()..];
    let colon = after.find(|c: char| !c.is_whitespace())?;
    if !after[colon..].starts_with(':') {
        return None;
    }
    let value = &after[colon + 1..];
    let quote = value.find(|c: char| !c.is_whitespace())?;
    value[quote..]
        .starts_with('"')
        .then(|| text.len() - value.len() + quote + 1)
}

/// Decodes a JSON string body from its start: the text decoded so far, the bytes used, and
/// whether the closing quote was reached. An escape cut in the middle is left for later.
fn json_string_prefix(s: &str) -> (String, usize, bool) {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (out, i + 1, true),
            '\\' => {
                let Some(&(_, e)) = chars.peek() else {
                    return (out, i, false);
                };
                chars.next();
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' | 'f' => {}
                    'u' => {
                        let hex: String = s[i + 2..].chars().take(4).collect();
                        if hex.len() < 4 {
                            return (out, i, false);
                        }
                        if let Some(ch) =
                            u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                        {
                            out.push(ch);
                        }
                        for _ in 0..4 {
                            chars.next();
                        }
                    }
                    other => out.push(other),
                }
            }
            c => out.push(c),
        }
    }
    (out, s.len(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thoughts_stream_out_however_the_output_is_cut() {
        let cases = [
            (
                Protocol::JsonTyped,
                r#"{"type": "tool", "thinking": "find \"crash\"\nthen é \u00e9", "tool_name": "search", "tool_args": {"query": "x"}}"#,
                "find \"crash\"\nthen é é",
            ),
            (
                Protocol::JsonAction,
                r#"{"thought":"short","answer":"thought: no"}"#,
                "short",
            ),
            (
                Protocol::Text,
                "Thought: look for it\nAction: search\nArgs: {\"query\": \"Thought: x\"}",
                "look for it",
            ),
            (
                Protocol::ToolCalls,
                "I need the file <tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>",
                "I need the file ",
            ),
        ];
        for (p, output, thought) in cases {
            // And it is what the parser reads, for the protocols that read it verbatim.
            if p != Protocol::ToolCalls {
                assert_eq!(p.parse(output).unwrap().thought, thought, "{}", p.as_str());
            }
            let chars: Vec<(usize, char)> = output.char_indices().collect();
            for &(a, _) in &chars {
                for &(b, _) in chars.iter().filter(|(b, _)| *b >= a) {
                    let mut t = ThoughtStream::new(p);
                    let got = t.push(&output[..a]) + &t.push(&output[a..b]) + &t.push(&output[b..]);
                    assert_eq!(got, thought, "{} cut at {a} and {b}", p.as_str());
                }
            }
        }
    }
}
