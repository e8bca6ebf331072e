//! The ReAct dialects the agent speaks, and their parsers. Under a grammar the model's output
//! always has the protocol's shape; without one (`--no-grammar`, or a backend without
//! grammars) the parsers are tolerant of what small models write instead: code fences, text
//! around the JSON, single quotes, trailing commas, Python's `True`/`None`. What still cannot
//! be read becomes a `ParseError` that tells the model what was wrong and shows the expected
//! format.
//!
//! Generation stops at `Protocol::stop_strings`, found in the streamed text by
//! `llm::stream::StopMatcher`.

use serde_json::{Map, Value};

use super::todo::{TodoPatch, TodoWrite};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// `{"type":"tool","thinking":...,"tool_name":...,"tool_args":{...},"todo_patch":{...}}` or
    /// `{"type":"final","thinking":...,"final":...,"todo_patch":{...}}`.
    JsonTyped,
    /// `{"thought":...,"action":{"name":...,"arguments":{...}}}` or `{"thought":...,"answer":...}`.
    JsonAction,
    /// `{"thought":...,"action":"<tool>","args":"<JSON as a string>"}` or
    /// `{"thought":...,"action":"FINISH","final_answer":...,"task_successful":true|false}`.
    JsonFinish,
    /// `Thought:` / `Action:` / `Args:` lines, or `Thought:` / `Final Answer:`.
    Text,
    /// Native function calling through the model's chat template.
    ToolCalls,
}

pub const PROTOCOLS: [Protocol; 5] = [
    Protocol::JsonTyped,
    Protocol::JsonAction,
    Protocol::JsonFinish,
    Protocol::Text,
    Protocol::ToolCalls,
];

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::JsonTyped => "json-typed",
            Protocol::JsonAction => "json-action",
            Protocol::JsonFinish => "json-finish",
            Protocol::Text => "text",
            Protocol::ToolCalls => "tool-calls",
        }
    }

    pub fn parse_name(name: &str) -> Option<Protocol> {
        PROTOCOLS.into_iter().find(|p| p.as_str() == name)
    }

    /// The step carries the plan in a field of its own (`todo_patch`); the other protocols
    /// change the plan by calling the `todo_write` tool.
    pub fn has_plan_field(self) -> bool {
        self == Protocol::JsonTyped
    }

    /// The final answer is a call of the `final_answer` tool, not a form of the step.
    pub fn answers_with_tool(self) -> bool {
        self == Protocol::ToolCalls
    }

    /// Tool calls are the chat template's own (structured assistant messages and tool
    /// results), where the template shows the model its tools.
    pub fn calls_natively(self) -> bool {
        self == Protocol::ToolCalls
    }

    /// The shape of a step, as the model is shown it after a step it wrote wrongly.
    pub fn expected_format(self) -> &'static str {
        match self {
            Protocol::JsonTyped => {
                r#"{"type": "tool", "thinking": "...", "tool_name": "<tool>", "tool_args": {...}} or {"type": "final", "thinking": "...", "final": "<answer>"} (either may add "todo_patch": {"op": "add"|"update"|"remove"|"replace", ..., "reason": "..."})"#
            }
            Protocol::JsonAction => {
                r#"{"thought": "...", "action": {"name": "<tool>", "arguments": {...}}} or {"thought": "...", "answer": "<answer>"}"#
            }
            Protocol::JsonFinish => {
                r#"{"thought": "...", "action": "<tool>", "args": "<the arguments as a JSON object in a string>"} or {"thought": "...", "action": "FINISH", "final_answer": "<answer>", "task_successful": true}"#
            }
            Protocol::Text => {
                "Thought: ...\nAction: <tool>\nArgs: {...}\nor\nThought: ...\nFinal Answer: <answer>"
            }
            Protocol::ToolCalls => {
                "<tool_call>\n{\"name\": \"<tool>\", \"arguments\": {...}}\n</tool_call>\n(the final answer is a call of the final_answer tool)"
            }
        }
    }

    /// Where generation stops: `text` ends a step before the model writes an observation
    /// itself (the others end at the end of their JSON or tool call, which the grammar or the
    /// end-of-turn token marks).
    pub fn stop_strings(self) -> &'static [&'static str] {
        match self {
            Protocol::Text => &["\nObservation:", "Observation:"],
            _ => &[],
        }
    }

    /// Reads one step the model wrote.
    pub fn parse(self, output: &str) -> Result<Step, ParseError> {
        match self {
            Protocol::JsonTyped => parse_json_typed(output),
            Protocol::JsonAction => parse_json_action(output),
            Protocol::JsonFinish => parse_json_finish(output),
            Protocol::Text => parse_text(output),
            Protocol::ToolCalls => parse_tool_calls(output),
        }
        .map_err(|message| ParseError {
            message,
            expected: self.expected_format(),
        })
    }
}

/// How a run ended, in the model's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalStatus {
    Completed,
    Blocked,
    Failed,
}

/// A tool to call with its arguments (a JSON object).
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub tool: String,
    pub args: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Act(Action),
    Finish { answer: String, status: FinalStatus },
}

/// A change to the TODO plan that came with a step.
#[derive(Debug, Clone, PartialEq)]
pub enum TodoChange {
    Patch(TodoPatch),
    Write(TodoWrite),
}

/// One step as the model wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub thought: String,
    pub decision: Decision,
    pub todo: Option<TodoChange>,
}

/// A step that could not be read. Shown to the model as its observation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}. Write exactly one step in this format: {expected}")]
pub struct ParseError {
    pub message: String,
    pub expected: &'static str,
}

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

fn string_field(o: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match o.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    })
}

/// Tool arguments: an object, a JSON object in a string, or nothing (no arguments).
fn args_value(v: Option<&Value>, what: &str) -> Result<Map<String, Value>, String> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Map::new()),
        Some(Value::String(s)) => extract_object(s).map_err(|e| format!("{what}: {e}")),
        Some(other) => Err(format!("{what} must be a JSON object, not {other}")),
    }
}

fn todo_patch(o: &Map<String, Value>) -> Result<Option<TodoChange>, String> {
    match o.get("todo_patch") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value::<TodoPatch>(v.clone())
            .map(|p| Some(TodoChange::Patch(p)))
            .map_err(|e| format!("todo_patch is not valid: {e}")),
    }
}

fn parse_json_typed(output: &str) -> Result<Step, String> {
    let o = extract_object(output)?;
    let thought = string_field(&o, &["thinking", "thought"]).unwrap_or_default();
    let todo = todo_patch(&o)?;
    let kind = string_field(&o, &["type"]).unwrap_or_default();
    let decision = match kind.as_str() {
        "tool" => {
            let tool = string_field(&o, &["tool_name"])
                .filter(|t| !t.trim().is_empty())
                .ok_or("a \"tool\" step needs \"tool_name\"")?;
            Decision::Act(Action {
                tool,
                args: args_value(o.get("tool_args"), "tool_args")?,
            })
        }
        "final" => Decision::Finish {
            answer: string_field(&o, &["final"]).ok_or("a \"final\" step needs \"final\"")?,
            status: FinalStatus::Completed,
        },
        "" => return Err("\"type\" is missing: it is \"tool\" or \"final\"".into()),
        other => {
            return Err(format!(
                "\"type\" is {other:?}: it is \"tool\" or \"final\""
            ))
        }
    };
    Ok(Step {
        thought,
        decision,
        todo,
    })
}

fn parse_json_action(output: &str) -> Result<Step, String> {
    let o = extract_object(output)?;
    let thought = string_field(&o, &["thought", "thinking"]).unwrap_or_default();
    let decision = match (
        o.get("action"),
        string_field(&o, &["answer", "final_answer"]),
    ) {
        (Some(Value::Object(a)), _) => Decision::Act(Action {
            tool: string_field(a, &["name", "tool"])
                .filter(|t| !t.trim().is_empty())
                .ok_or("\"action\" needs \"name\"")?,
            args: args_value(a.get("arguments").or(a.get("args")), "arguments")?,
        }),
        (Some(Value::String(name)), _) if !name.trim().is_empty() => Decision::Act(Action {
            tool: name.clone(),
            args: args_value(o.get("arguments").or(o.get("args")), "arguments")?,
        }),
        (_, Some(answer)) => Decision::Finish {
            answer,
            status: FinalStatus::Completed,
        },
        _ => return Err("the step has neither \"action\" nor \"answer\"".into()),
    };
    Ok(Step {
        thought,
        decision,
        todo: todo_patch(&o)?,
    })
}

fn parse_json_finish(output: &str) -> Result<Step, String> {
    let o = extract_object(output)?;
    let thought = string_field(&o, &["thought", "thinking"]).unwrap_or_default();
    let action = string_field(&o, &["action"])
        .filter(|a| !a.trim().is_empty())
        .ok_or("\"action\" is missing: a tool name, or \"FINISH\"")?;
    let decision = if action.eq_ignore_ascii_case("finish") {
        let answer = string_field(&o, &["final_answer", "answer"])
            .ok_or("a FINISH step needs \"final_answer\"")?;
        let successful = match o.get("task_successful") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => !s.eq_ignore_ascii_case("false"),
            _ => true,
        };
        Decision::Finish {
            answer,
            status: if successful {
                FinalStatus::Completed
            } else {
                FinalStatus::Failed
            },
        }
    } else {
        Decision::Act(Action {
            tool: action,
            args: args_value(o.get("args").or(o.get("arguments")), "args")?,
        })
    };
    Ok(Step {
        thought,
        decision,
        todo: todo_patch(&o)?,
    })
}

/// The label at the start of a line (`Thought:`, `Action Input:`...), lowercased, and the rest.
fn label(line: &str) -> Option<(String, &str)> {
    let line = line.trim_start().trim_start_matches(['*', '#', ' ']);
    let (head, rest) = line.split_once(':')?;
    let head = head
        .trim()
        .trim_end_matches('*')
        .trim()
        .to_ascii_lowercase();
    matches!(
        head.as_str(),
        "thought"
            | "action"
            | "args"
            | "action input"
            | "arguments"
            | "final answer"
            | "observation"
    )
    .then(|| (head, rest.trim_start_matches('*').trim_start()))
}

fn parse_text(output: &str) -> Result<Step, String> {
    let mut thought = String::new();
    let mut action: Option<String> = None;
    let mut args = String::new();
    let mut answer: Option<String> = None;
    let mut current = "";
    for line in output.lines() {
        if let Some((head, rest)) = label(line) {
            match head.as_str() {
                // One step per response: what the model imagines after its action is not read.
                "observation" => break,
                "thought" if action.is_none() && answer.is_none() => {
                    thought = rest.to_string();
                    current = "thought";
                }
                "action" if answer.is_none() => {
                    if action.is_some() {
                        break;
                    }
                    action = Some(rest.trim().trim_matches('`').to_string());
                    current = "action";
                }
                "args" | "action input" | "arguments" if action.is_some() => {
                    if !args.is_empty() {
                        break;
                    }
                    args = rest.to_string();
                    current = "args";
                }
                "final answer" if action.is_none() => {
                    answer = Some(rest.to_string());
                    current = "answer";
                }
                _ => break,
            }
            continue;
        }
        let target = match current {
            "thought" => &mut thought,
            "args" => &mut args,
            "answer" => match answer.as_mut() {
                Some(a) => a,
                None => continue,
            },
            _ => continue,
        };
        target.push('\n');
        target.push_str(line);
    }
    let thought = thought.trim().to_string();
    let decision = match (action, answer) {
        (Some(tool), _) if !tool.is_empty() => {
            let args = args.trim();
            let args = if args.is_empty() {
                Map::new()
            } else {
                extract_object(args).map_err(|e| format!("Args: {e}"))?
            };
            Decision::Act(Action { tool, args })
        }
        (Some(_), _) => return Err("\"Action:\" names no tool".into()),
        (None, Some(answer)) => Decision::Finish {
            answer: answer.trim().to_string(),
            status: FinalStatus::Completed,
        },
        (None, None) => {
            return Err("found neither \"Action:\" nor \"Final Answer:\"".into());
        }
    };
    Ok(Step {
        thought,
        decision,
        todo: None,
    })
}

/// Tool calls as chat templates have models write them: Hermes/Qwen `<tool_call>{...}
/// </tool_call>`, Mistral `[TOOL_CALLS] [{...}]`, or a bare `{"name": ..., "arguments"|
/// "parameters": {...}}` (Llama 3.1). The first call is the step; `final_answer` ends the run
/// and `todo_write` changes the plan.
fn parse_tool_calls(output: &str) -> Result<Step, String> {
    let (thought, call) = match output.find("<tool_call>") {
        Some(at) => (&output[..at], &output[at + "<tool_call>".len()..]),
        None => match output.find("[TOOL_CALLS]") {
            Some(at) => (&output[..at], &output[at + "[TOOL_CALLS]".len()..]),
            None => match output.find('{') {
                Some(at) => (&output[..at], &output[at..]),
                None => return Err("no tool call found: answer with the final_answer tool".into()),
            },
        },
    };
    let o = extract_object(call)?;
    let name = string_field(&o, &["name"])
        .filter(|n| !n.trim().is_empty())
        .ok_or("the tool call needs \"name\"")?;
    let args = args_value(
        o.get("arguments").or(o.get("parameters")).or(o.get("args")),
        "arguments",
    )?;
    let thought = thought
        .replace("<think>", "")
        .replace("</think>", "")
        .trim()
        .to_string();
    let decision = match name.as_str() {
        "final_answer" => Decision::Finish {
            answer: args
                .get("answer")
                .and_then(Value::as_str)
                .ok_or("final_answer needs \"answer\"")?
                .to_string(),
            status: match args.get("status").and_then(Value::as_str) {
                None | Some("completed") => FinalStatus::Completed,
                Some("blocked") => FinalStatus::Blocked,
                Some("failed") => FinalStatus::Failed,
                Some(other) => {
                    return Err(format!(
                        "final_answer's status is {other:?}: it is completed, blocked or failed"
                    ))
                }
            },
        },
        _ => Decision::Act(Action { tool: name, args }),
    };
    Ok(Step {
        thought,
        decision,
        todo: None,
    })
}

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
    use serde_json::json;

    fn act(tool: &str, args: Value) -> Decision {
        Decision::Act(Action {
            tool: tool.into(),
            args: args.as_object().unwrap().clone(),
        })
    }

    fn done(answer: &str, status: FinalStatus) -> Decision {
        Decision::Finish {
            answer: answer.into(),
            status,
        }
    }

    #[test]
    fn json_typed() {
        let s = Protocol::JsonTyped
            .parse(r#"{"type":"tool","thinking":"look","tool_name":"search","tool_args":{"query":"crash"},"todo_patch":{"op":"add","item":{"id":"1","title":"Search"},"reason":"plan"}}"#)
            .unwrap();
        assert_eq!(s.thought, "look");
        assert_eq!(s.decision, act("search", json!({"query": "crash"})));
        assert!(matches!(
            s.todo,
            Some(TodoChange::Patch(TodoPatch::Add { .. }))
        ));
        let s = Protocol::JsonTyped
            .parse(r#"{"type":"final","thinking":"found","final":"It is #918."}"#)
            .unwrap();
        assert_eq!(s.decision, done("It is #918.", FinalStatus::Completed));
        let e = Protocol::JsonTyped
            .parse(r#"{"type":"answer","final":"x"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("\"type\" is \"answer\""), "{e}");
        assert!(
            e.to_string().contains("\"tool_name\""),
            "the format is shown: {e}"
        );
        let e = Protocol::JsonTyped
            .parse(r#"{"type":"tool","tool_name":"search","todo_patch":{"op":"explode"}}"#)
            .unwrap_err();
        assert!(e.message.contains("todo_patch"), "{e}");
    }

    #[test]
    fn json_action_and_json_finish() {
        let s = Protocol::JsonAction
            .parse(r#"{"thought":"t","action":{"name":"read_file","arguments":{"path":"a.rs"}}}"#)
            .unwrap();
        assert_eq!(s.decision, act("read_file", json!({"path": "a.rs"})));
        let s = Protocol::JsonAction
            .parse(r#"{"thought":"t","answer":"42"}"#)
            .unwrap();
        assert_eq!(s.decision, done("42", FinalStatus::Completed));

        let s = Protocol::JsonFinish
            .parse(r#"{"thought":"t","action":"search","args":"{\"query\": \"wallet\"}"}"#)
            .unwrap();
        assert_eq!(s.decision, act("search", json!({"query": "wallet"})));
        let s = Protocol::JsonFinish
            .parse(r#"{"thought":"t","action":"FINISH","final_answer":"not here","task_successful":false}"#)
            .unwrap();
        assert_eq!(s.decision, done("not here", FinalStatus::Failed));
        let e = Protocol::JsonFinish
            .parse(r#"{"thought":"t","action":"search","args":"{query"}"#)
            .unwrap_err();
        assert!(e.message.starts_with("args:"), "{e}");
    }

    #[test]
    fn text_reads_one_step_and_ignores_an_imagined_observation() {
        let s = Protocol::Text
            .parse(
                "Thought: I should search\nfor the crash.\nAction: search\nArgs: {\"query\":\n \"crash\"}\nObservation: made up\nThought: more",
            )
            .unwrap();
        assert_eq!(s.thought, "I should search\nfor the crash.");
        assert_eq!(s.decision, act("search", json!({"query": "crash"})));
        let s = Protocol::Text
            .parse("Thought: done\nFinal Answer: The crash is #918.\nIt was fixed.")
            .unwrap();
        assert_eq!(
            s.decision,
            done("The crash is #918.\nIt was fixed.", FinalStatus::Completed)
        );
        // LangChain's spelling and markdown bold are read too.
        let s = Protocol::Text
            .parse("**Thought:** x\n**Action:** `list_repositories`\nAction Input: {}")
            .unwrap();
        assert_eq!(s.decision, act("list_repositories", json!({})));
        let e = Protocol::Text.parse("I think the answer is 4").unwrap_err();
        assert!(e.to_string().contains("Final Answer:"), "{e}");
    }

    #[test]
    fn tool_calls_in_the_formats_templates_use() {
        let hermes = "<think>need data</think>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>";
        let s = Protocol::ToolCalls.parse(hermes).unwrap();
        assert_eq!(s.thought, "need data");
        assert_eq!(s.decision, act("search", json!({"query": "x"})));
        let mistral = "[TOOL_CALLS] [{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}]";
        assert_eq!(
            Protocol::ToolCalls.parse(mistral).unwrap().decision,
            act("search", json!({"query": "x"}))
        );
        let llama = "{\"name\": \"final_answer\", \"parameters\": {\"answer\": \"no\", \"status\": \"blocked\"}}";
        assert_eq!(
            Protocol::ToolCalls.parse(llama).unwrap().decision,
            done("no", FinalStatus::Blocked)
        );
        let e = Protocol::ToolCalls.parse("Just text.").unwrap_err();
        assert!(e.to_string().contains("final_answer"), "{e}");
    }

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

    #[test]
    fn no_prefix_of_a_step_makes_a_parser_panic() {
        let outputs = [
            r#"{"type":"tool","thinking":"a 'b' \"c\"","tool_name":"search","tool_args":{"query":"x, y"},"todo_patch":{"op":"remove","item_id":"1","reason":"r"}}"#,
            "Thought: x\nAction: search\nArgs: {'query': 'Ω \\' x', 'n': [1, {\"a\": None}]}",
            "<tool_call>{\"name\": \"final_answer\", \"arguments\": {\"answer\": \"é\"}}</tool_call>",
        ];
        for out in outputs {
            for (end, _) in out.char_indices() {
                for p in PROTOCOLS {
                    let _ = p.parse(&out[..end]);
                }
            }
        }
    }

    #[test]
    fn a_text_step_stops_before_an_observation_however_the_stream_is_cut() {
        use crate::llm::stream::StopMatcher;
        let text = "Thought: x\nAction: search\nArgs: {\"query\": \"Observ\"}\nObservation: fake";
        let stops: Vec<String> = Protocol::Text
            .stop_strings()
            .iter()
            .map(|s| s.to_string())
            .collect();
        for cut in 0..=text.len() {
            for second in cut..=text.len() {
                let mut m = StopMatcher::new(&stops);
                let mut out = String::new();
                let mut stopped = false;
                for piece in [&text[..cut], &text[cut..second], &text[second..]] {
                    if stopped {
                        break;
                    }
                    let step = m.push(piece);
                    out += &step.emit;
                    stopped = step.stopped.is_some();
                }
                assert!(stopped, "cut at {cut} and {second}");
                let step = Protocol::Text.parse(&out).unwrap();
                assert_eq!(
                    step.decision,
                    act("search", json!({"query": "Observ"})),
                    "cut at {cut} and {second}"
                );
            }
        }
    }

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
