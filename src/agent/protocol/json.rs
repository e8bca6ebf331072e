//! A tolerant JSON reader: the first object in a model's output, repaired where small models
//! write JSON loosely, and the fields every dialect reads from it.

use serde_json::{Map, Value};

/// The first JSON object in `text`, read tolerantly.
pub fn extract_object(text: &str) -> Result<Map<String, Value>, String> {
    let Some(start) = text.find('{') else {
        return Err("no JSON object found in the output".into());
    };
    let slice = match balanced_end(&text[start..]) {
        Some(end) => &text[start..start + end],
        None => &text[start..],
    };
    let value = serde_json::from_str::<Value>(slice)
        .or_else(|first| serde_json::from_str::<Value>(&repair(slice)).map_err(|_| first))
        .map_err(|e| format!("the JSON object is not valid: {e}"))?;
    match value {
        Value::Object(m) => Ok(m),
        _ => Err("the output is not a JSON object".into()),
    }
}

/// The length of the balanced `{...}` at the start of `s`, strings (in either quote) skipped.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// JSON as small models write it made strict: single-quoted strings double-quoted, trailing
/// commas dropped, Python's True/False/None spelled as JSON, and an object left open closed.
fn repair(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut closers: Vec<char> = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                out.push('"');
                i += 1;
                while i < chars.len() && chars[i] != c {
                    match chars[i] {
                        '\\' if i + 1 < chars.len() => {
                            // \' means a quote inside a single-quoted string; JSON has no \'.
                            if chars[i + 1] != '\'' {
                                out.push('\\');
                            }
                            out.push(chars[i + 1]);
                            i += 2;
                            continue;
                        }
                        '"' => out.push_str("\\\""),
                        '\n' => out.push_str("\\n"),
                        ch => out.push(ch),
                    }
                    i += 1;
                }
                out.push('"');
            }
            '{' => closers.push('}'),
            '[' => closers.push(']'),
            '}' | ']' => {
                closers.pop();
                // A comma before a closer is dropped.
                let trimmed = out.trim_end().len();
                if out[..trimmed].ends_with(',') {
                    out.truncate(trimmed - 1);
                }
            }
            _ => {}
        }
        if !matches!(c, '"' | '\'') {
            let word: String = chars[i..].iter().take(5).collect();
            let replaced = [("True", "true"), ("False", "false"), ("None", "null")]
                .iter()
                .find(|(py, _)| {
                    word.starts_with(py)
                        && chars
                            .get(i + py.len())
                            .is_none_or(|n| !n.is_alphanumeric() && *n != '_')
                        && (i == 0 || !chars[i - 1].is_alphanumeric())
                });
            if let Some((py, js)) = replaced {
                out.push_str(js);
                i += py.len();
                continue;
            }
            out.push(c);
        }
        i += 1;
    }
    while let Some(c) = closers.pop() {
        out.push(c);
    }
    out
}

pub(super) fn string_field(o: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match o.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    })
}

/// A final answer's citations: a list of strings (or one string), empty when absent.
pub(super) fn citations(o: &Map<String, Value>) -> Vec<String> {
    match o.get("citations") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .filter(|s| !s.trim().is_empty())
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Tool arguments: an object, a JSON object in a string, or nothing (no arguments).
pub(super) fn args_value(v: Option<&Value>, what: &str) -> Result<Map<String, Value>, String> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Map::new()),
        Some(Value::String(s)) => extract_object(s).map_err(|e| format!("{what}: {e}")),
        Some(other) => Err(format!("{what} must be a JSON object, not {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::tests::done;
    use crate::agent::protocol::{FinalStatus, Protocol};
    use serde_json::json;

    #[test]
    fn what_small_models_write_without_a_grammar_is_read() {
        let cases = [
            "```json\n{\"thought\": \"t\", \"answer\": \"yes\"}\n```",
            "Sure! Here is my step:\n{\"thought\": \"t\", \"answer\": \"yes\"}\nHope this helps {",
            "{'thought': 't', 'answer': 'yes'}",
            "{\"thought\": \"t\", \"answer\": \"yes\",}",
            "{\"thought\": \"t\", \"answer\": \"yes\"",
        ];
        for c in cases {
            let s = Protocol::JsonAction
                .parse(c)
                .unwrap_or_else(|e| panic!("{c}: {e}"));
            assert_eq!(s.decision, done("yes", FinalStatus::Completed), "{c}");
        }
        let o =
            extract_object("{'a': True, 'b': None, 'c': 'it\\'s \"x\"', 'd': [1, 2,]}").unwrap();
        assert_eq!(
            Value::Object(o),
            json!({"a": true, "b": null, "c": "it's \"x\"", "d": [1, 2]})
        );
        // Words that merely contain True stay as they are.
        let o = extract_object("{\"a\": \"TrueNorth\", \"b\": \"None of it\"}").unwrap();
        assert_eq!(o["a"], "TrueNorth");
        assert!(extract_object("no json").is_err());
    }
}
