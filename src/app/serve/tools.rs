//! Tool calling for `burrow serve`: the tools a request offers, shown to the model through its
//! chat template (or, where the template has no place for tools, in the system message), calls
//! held to the tools' schemas by a grammar, and calls read back out of the output into
//! OpenAI's `tool_calls`. Calls are written as Hermes/Qwen templates teach them,
//! `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`.

use serde_json::{json, Map, Value};

use super::wire::{ApiError, WireTool};
use crate::llm::grammar::strict_json_schema;
use crate::llm::Grammar;

pub const OPEN: &str = "<tool_call>";
pub const CLOSE: &str = "</tool_call>";

/// Which calls the model may or must make (`tool_choice`).
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// Text only; the tools are not shown.
    None,
    /// Text, or calls.
    Auto,
    /// One call or more.
    Required,
    /// One call of this tool.
    Named(String),
}

/// The tools of one request, checked.
#[derive(Debug, Clone)]
pub struct ToolSet {
    tools: Vec<(String, Option<String>, Value)>,
    pub choice: Choice,
    parallel: bool,
}

impl ToolSet {
    /// The request's tools and choice; `None` when it offers none (or says `none`).
    pub fn new(
        tools: Option<Vec<WireTool>>,
        choice: Option<&Value>,
        parallel: Option<bool>,
    ) -> Result<Option<ToolSet>, ApiError> {
        let tools = tools.unwrap_or_default();
        let choice = match choice {
            None => Choice::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "none" => Choice::None,
                "auto" => Choice::Auto,
                "required" => Choice::Required,
                other => {
                    return Err(ApiError::invalid(
                        Some("tool_choice".to_string()),
                        format!(
                            "tool_choice {other:?} is none of none, auto, required, or a function"
                        ),
                    ))
                }
            },
            Some(v) => match v.pointer("/function/name").and_then(Value::as_str) {
                Some(name) => Choice::Named(name.to_string()),
                None => {
                    return Err(ApiError::invalid(
                        Some("tool_choice".to_string()),
                        "tool_choice is an object without function.name",
                    ))
                }
            },
        };
        if tools.is_empty() {
            return match choice {
                Choice::Required | Choice::Named(_) => Err(ApiError::invalid(
                    Some("tool_choice".to_string()),
                    "tool_choice asks for a call but the request has no tools",
                )),
                _ => Ok(None),
            };
        }
        let mut checked = Vec::new();
        for (i, t) in tools.into_iter().enumerate() {
            let at = |field: &str| Some(format!("tools[{i}].{field}"));
            if t.kind != "function" {
                return Err(ApiError::invalid(
                    at("type"),
                    format!(
                        "tools[{i}] is of type {:?}: only function tools are supported",
                        t.kind
                    ),
                ));
            }
            let name = t.function.name;
            if name.is_empty()
                || name.len() > 64
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            {
                return Err(ApiError::invalid(
                    at("function.name"),
                    format!(
                        "tools[{i}].function.name {name:?} must be 1-64 letters, digits, _, - or ."
                    ),
                ));
            }
            if checked.iter().any(|(n, _, _)| *n == name) {
                return Err(ApiError::invalid(
                    at("function.name"),
                    format!("two tools are named {name:?}"),
                ));
            }
            let parameters = match t.function.parameters {
                None => json!({"type": "object", "properties": {}}),
                // Arguments are an object. `{}` (a common way to say "no arguments") let
                // the grammar take any JSON value, and a call with `[]` was not read as one.
                Some(Value::Object(mut p)) => match p.get("type") {
                    None => {
                        p.insert("type".into(), json!("object"));
                        Value::Object(p)
                    }
                    Some(kind) if kind == "object" => Value::Object(p),
                    Some(kind) => {
                        return Err(ApiError::invalid(
                            at("function.parameters"),
                            format!(
                                "tools[{i}].function.parameters must describe an object (its \
                                 type is {kind})"
                            ),
                        ))
                    }
                },
                Some(_) => {
                    return Err(ApiError::invalid(
                        at("function.parameters"),
                        format!("tools[{i}].function.parameters is not a JSON schema object"),
                    ))
                }
            };
            // A schema llguidance cannot compile is the caller's to fix, named here rather
            // than as a failure of the whole grammar.
            Grammar::JsonSchema(parameters.clone())
                .validate()
                .map_err(|e| {
                    ApiError::invalid(
                        at("function.parameters"),
                        format!("tools[{i}].function.parameters ({name}): {e}"),
                    )
                })?;
            checked.push((name, t.function.description, parameters));
        }
        if let Choice::Named(n) = &choice {
            if !checked.iter().any(|(name, _, _)| name == n) {
                return Err(ApiError::invalid(
                    Some("tool_choice".to_string()),
                    format!("tool_choice names {n:?}, which is not among the tools"),
                ));
            }
        }
        if choice == Choice::None {
            return Ok(None);
        }
        Ok(Some(ToolSet {
            tools: checked,
            choice,
            parallel: parallel.unwrap_or(true),
        }))
    }

    /// The tools as chat templates take them (`{"type": "function", "function": {...}}`).
    pub fn definitions(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|(name, description, parameters)| {
                let mut f = json!({"name": name});
                if let Some(d) = description {
                    f["description"] = json!(d);
                }
                f["parameters"] = parameters.clone();
                json!({"type": "function", "function": f})
            })
            .collect()
    }

    /// The tools and the form of a call, for a system message, where the chat template has no
    /// place for tools (as Qwen2.5's template words it).
    pub fn instructions(&self) -> String {
        let defs: Vec<String> = self.definitions().iter().map(Value::to_string).collect();
        format!(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n\
             <tools>\n{}\n</tools>\n\n\
             For each function call, return a json object with function name and arguments \
             within <tool_call></tool_call> XML tags:\n\
             <tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>",
            defs.join("\n")
        )
    }

    /// The grammar of a reply: calls of the tools with arguments that fit their schemas, and
    /// where the choice allows text, text that never opens a call (or, with `answer`, a JSON
    /// value of that schema).
    pub fn grammar(&self, answer: Option<&Value>) -> Result<Grammar, ApiError> {
        let json_of = |schema: &Value| -> Result<String, ApiError> {
            serde_json::to_string(&strict_json_schema(schema))
                .map_err(|e| ApiError::server(format!("a schema cannot be written: {e}")))
        };
        let mut g = String::new();
        let block = |rule: &str| format!("\"{OPEN}\\n\" {rule} \"\\n{CLOSE}\"");
        let more = if self.parallel {
            format!(" (\"\\n\" {})*", block("call"))
        } else {
            String::new()
        };
        match &self.choice {
            Choice::Named(name) => {
                let i = self
                    .tools
                    .iter()
                    .position(|(n, _, _)| n == name)
                    .unwrap_or(0);
                g.push_str(&format!("start: {}\n", block(&format!("call_{i}"))));
            }
            Choice::Required | Choice::None => {
                g.push_str(&format!("start: {}{more}\n", block("call")));
            }
            Choice::Auto => match answer {
                Some(schema) => {
                    g.push_str(&format!("start: answer | {}{more}\n", block("call")));
                    g.push_str(&format!("answer: %json {}\n", json_of(schema)?));
                }
                None => {
                    // Text, or text that ends by opening a call, as one lexeme: the lexer
                    // cannot end a text that may go on at the `<` where a call begins. Or a
                    // call as bare JSON, as Qwen2.5-Coder writes them (its text then never
                    // starts with `{`).
                    g.push_str(&format!(
                        "start: TEXT | OPENED call \"\\n{CLOSE}\"{more} | call\nTEXT: /{}/\nOPENED: /{}/\n",
                        text_without(OPEN, false),
                        text_without(OPEN, true),
                    ));
                }
            },
        }
        let calls: Vec<String> = (0..self.tools.len()).map(|i| format!("call_{i}")).collect();
        g.push_str(&format!("call: {}\n", calls.join(" | ")));
        for (i, (name, _, parameters)) in self.tools.iter().enumerate() {
            let schema = json!({
                "type": "object",
                "properties": {"name": {"const": name}, "arguments": parameters},
                "required": ["name", "arguments"],
            });
            g.push_str(&format!("call_{i}: %json {}\n", json_of(&schema)?));
        }
        Ok(Grammar::Lark(g))
    }
}

/// A regular expression of the non-empty texts in which `word` does not occur and which do
/// not start with `{`; with `opened`,
/// of those texts (possibly empty) followed by `word` and a newline, where `word` first
/// occurs. `word`'s first character must not occur again in it (true of `<tool_call>`).
fn text_without(word: &str, opened: bool) -> String {
    let w: Vec<char> = word.chars().collect();
    let lit =
        |cs: &[char]| -> String { cs.iter().map(|c| regex::escape(&c.to_string())).collect() };
    let class_not = |cs: &[char]| -> String {
        let inner: String = cs
            .iter()
            .map(|c| format!("\\x{{{:x}}}", *c as u32))
            .collect();
        format!("[^{inner}]")
    };
    let first = w[0];
    let n = w.len();
    // After the first character, partial progress then the first character again: still
    // one character into the word.
    let again: Vec<String> = (0..n - 1)
        .map(|k| format!("{}{}", lit(&w[1..1 + k]), lit(&[first])))
        .collect();
    // Partial progress then a character that neither goes on nor starts over.
    let leave: Vec<String> = (0..n - 1)
        .map(|k| format!("{}{}", lit(&w[1..1 + k]), class_not(&[first, w[1 + k]])))
        .collect();
    let loop_ = format!("(?:{})*", again.join("|"));
    let step = format!(
        "(?:{}|{}{}(?:{}))",
        class_not(&[first]),
        lit(&[first]),
        loop_,
        leave.join("|")
    );
    // The first step is not `{`, which begins a call written as bare JSON.
    let first_step = format!(
        "(?:{}|{}{}(?:{}))",
        class_not(&[first, '{']),
        lit(&[first]),
        loop_,
        leave.join("|")
    );
    if opened {
        return format!(
            "(?:{first_step}{step}*)?{}{loop_}{}\\n",
            lit(&[first]),
            lit(&w[1..])
        );
    }
    let partial: Vec<String> = (0..n - 1).map(|k| lit(&w[1..1 + k])).collect();
    let tail = format!("{}{loop_}(?:{})", lit(&[first]), partial.join("|"));
    format!("(?:{first_step}{step}*(?:{tail})?|{tail})")
}

/// A call read from the output.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    /// The arguments as JSON text, as OpenAI returns them.
    pub arguments: String,
}

/// The text before the first call, and the calls; `None` when what follows the first
/// `<tool_call>` is not calls (then it is all text). An output that is one JSON object with a
/// name and arguments is a call too (Llama 3.1 and Qwen2.5-Coder write calls so).
pub fn read_calls(output: &str) -> Option<(String, Vec<Call>)> {
    if output.trim_start().starts_with('{') {
        let o = whole_object(output)?;
        let name = o.get("name").and_then(Value::as_str)?.to_string();
        let args = o.get("arguments").or_else(|| o.get("parameters"))?;
        if !args.is_object() {
            return None;
        }
        let call = Call {
            name,
            arguments: args.to_string(),
        };
        return Some((String::new(), vec![call]));
    }
    let at = output.find(OPEN)?;
    let content = output[..at].to_string();
    let mut calls = Vec::new();
    let mut rest = &output[at..];
    while let Some(open) = rest.find(OPEN) {
        if !rest[..open].trim().is_empty() {
            return None;
        }
        let after = &rest[open + OPEN.len()..];
        let (body, next) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len()..]),
            None => (after, ""),
        };
        let o = whole_object(body)?;
        let name = o.get("name").and_then(Value::as_str)?.to_string();
        let args = o
            .get("arguments")
            .or_else(|| o.get("parameters"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let args = match args {
            // Some models write the arguments as JSON text already.
            Value::String(s) => serde_json::from_str::<Value>(&s).ok()?,
            v => v,
        };
        if !args.is_object() {
            return None;
        }
        calls.push(Call {
            name,
            arguments: args.to_string(),
        });
        rest = next;
    }
    if !rest.trim().is_empty() {
        return None;
    }
    Some((content, calls))
}

/// The object `text` is, whole: a call cut short (by `max_tokens`, a stop string, a full
/// context) is not a call. The agent's tolerant reader closed its strings and braces, and a
/// client ran `get_weather(city="Par")`.
fn whole_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text.trim()).ok()? {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

/// Splits streamed output into text to send now and the calls, which are sent whole at the
/// end: text that may be the start of `<tool_call>` is held back until it is clear.
#[derive(Debug, Default)]
pub struct CallStream {
    pending: String,
    calls: Option<String>,
    /// Text other than white space came first: a `{` now is not a bare call.
    text_seen: bool,
}

impl CallStream {
    /// Text that is surely not part of a call.
    pub fn push(&mut self, piece: &str) -> String {
        if let Some(calls) = &mut self.calls {
            calls.push_str(piece);
            return String::new();
        }
        self.pending.push_str(piece);
        if !self.text_seen && self.pending.trim_start().starts_with('{') {
            self.calls = Some(std::mem::take(&mut self.pending));
            return String::new();
        }
        if !self.pending.trim().is_empty() {
            self.text_seen = true;
        }
        if let Some(at) = self.pending.find(OPEN) {
            self.calls = Some(self.pending.split_off(at));
            return std::mem::take(&mut self.pending);
        }
        // Hold back the longest end that could begin `<tool_call>`.
        let hold = (1..OPEN.len().min(self.pending.len() + 1))
            .rev()
            .find(|&n| {
                let start = self.pending.len() - n;
                self.pending.is_char_boundary(start) && OPEN.starts_with(&self.pending[start..])
            })
            .unwrap_or(0);
        let rest = self.pending.split_off(self.pending.len() - hold);
        std::mem::replace(&mut self.pending, rest)
    }

    /// At the end: the text held back, and the calls (when the output made any). Calls that
    /// cannot be read are returned as text, as they were written.
    pub fn finish(mut self) -> (String, Vec<Call>) {
        let held = std::mem::take(&mut self.pending);
        match self.calls.take() {
            None => (held, Vec::new()),
            Some(raw) => match read_calls(&raw) {
                Some((_, calls)) if !calls.is_empty() => (held, calls),
                _ => (held + &raw, Vec::new()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::serve::wire::WireFunction;

    fn weather() -> WireTool {
        WireTool {
            kind: "function".into(),
            function: WireFunction {
                name: "get_weather".into(),
                description: Some("The weather in a city".into()),
                parameters: Some(json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"]
                })),
            },
        }
    }

    fn set(choice: Option<Value>, parallel: Option<bool>) -> ToolSet {
        ToolSet::new(Some(vec![weather()]), choice.as_ref(), parallel)
            .unwrap()
            .unwrap()
    }

    const CALL: &str = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

    #[test]
    fn text_without_the_word_is_exact() {
        let re = regex::Regex::new(&format!("^(?:{})$", text_without(OPEN, false))).unwrap();
        for ok in [
            "a",
            "<",
            "<tool_cal",
            "x <b> y",
            "<<tool_calx",
            "a\nb <tool_",
            "<tool<tool_call",
        ] {
            assert!(re.is_match(ok), "{ok:?} has no call and is text");
        }
        for bad in [
            "",
            "<tool_call>",
            "a<tool_call>b",
            "<<tool_call>",
            "x <tool_<tool_call>",
        ] {
            assert!(!re.is_match(bad), "{bad:?} is not text without a call");
        }
        let opened = regex::Regex::new(&format!("^(?:{})$", text_without(OPEN, true))).unwrap();
        for ok in [
            "<tool_call>\n",
            "Let me look.\n<tool_call>\n",
            "<<tool_call>\n",
        ] {
            assert!(opened.is_match(ok), "{ok:?} opens a call");
        }
        for bad in [
            "<tool_call>\nx<tool_call>\n",
            "<tool_call>",
            "x",
            "{<tool_call>\n",
        ] {
            assert!(!opened.is_match(bad), "{bad:?} does not open one call");
        }
    }

    #[test]
    fn auto_grammar_takes_text_or_calls_but_no_bad_call() {
        let g = set(None, None).grammar(None).unwrap();
        assert!(g.accepts("It is sunny <b>today</b>.").unwrap());
        assert!(g.accepts(CALL).unwrap());
        assert!(g.accepts(&format!("I will look it up.\n{CALL}")).unwrap());
        assert!(g.accepts(&format!("{CALL}\n{CALL}")).unwrap());
        assert!(
            !g.accepts("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>")
                .unwrap(),
            "a call without its required argument"
        );
        assert!(
            !g.accepts("<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>")
                .unwrap(),
            "a call of a tool not offered"
        );
        assert!(!g.accepts(&format!("{CALL} and then text")).unwrap());
        assert!(
            g.accepts("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}")
                .unwrap(),
            "a call as bare JSON"
        );
        assert!(
            !g.accepts("{\"answer\": 1}").unwrap(),
            "text that begins as JSON must be a call"
        );
        assert!(g.accepts("The JSON is {\"answer\": 1}").unwrap());
    }

    #[test]
    fn required_and_named_choices_force_a_call() {
        for choice in [
            json!("required"),
            json!({"type": "function", "function": {"name": "get_weather"}}),
        ] {
            let g = set(Some(choice.clone()), None).grammar(None).unwrap();
            assert!(g.accepts(CALL).unwrap(), "{choice}");
            assert!(!g.accepts("It is sunny.").unwrap(), "{choice}");
        }
        let single = set(Some(json!("required")), Some(false))
            .grammar(None)
            .unwrap();
        assert!(!single.accepts(&format!("{CALL}\n{CALL}")).unwrap());
    }

    #[test]
    fn bad_tools_are_named() {
        let mut t = weather();
        t.function.parameters =
            Some(json!({"type": "object", "properties": {"a": {"type": "nope"}}}));
        let e = ToolSet::new(Some(vec![t]), None, None).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tools[0].function.parameters"));
        let e = ToolSet::new(
            Some(vec![weather()]),
            Some(&json!({"function": {"name": "other"}})),
            None,
        )
        .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tool_choice"));
        assert!(e.message.contains("other"), "{}", e.message);
        assert!(
            ToolSet::new(Some(vec![weather()]), Some(&json!("none")), None)
                .unwrap()
                .is_none()
        );
        let e = ToolSet::new(None, Some(&json!("required")), None).unwrap_err();
        assert!(e.message.contains("no tools"), "{}", e.message);
    }

    #[test]
    fn calls_are_read_and_streamed_apart_from_text() {
        let (text, calls) = read_calls(&format!("Looking.\n{CALL}\n{CALL}")).unwrap();
        assert_eq!(text, "Looking.\n");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(
            serde_json::from_str::<Value>(&calls[0].arguments).unwrap(),
            json!({"city": "Paris"})
        );
        let output = format!("Looking.\n{CALL}");
        for split in 1..output.len() {
            if !output.is_char_boundary(split) {
                continue;
            }
            let mut s = CallStream::default();
            let mut shown = s.push(&output[..split]);
            shown += &s.push(&output[split..]);
            let (held, calls) = s.finish();
            shown += &held;
            assert_eq!(shown, "Looking.\n", "split at {split}");
            assert_eq!(calls.len(), 1);
        }
        // A call written as bare JSON.
        let bare = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        let mut s = CallStream::default();
        let shown = s.push(&bare[..5]) + &s.push(&bare[5..]);
        let (held, calls) = s.finish();
        assert_eq!(shown + &held, "");
        assert_eq!(
            calls,
            vec![Call {
                name: "get_weather".into(),
                arguments: "{\"city\":\"Paris\"}".into()
            }]
        );
        // Text that only looks like the start of a call is shown whole.
        let mut s = CallStream::default();
        let mut shown = s.push("a <tool_ca");
        shown += &s.push("t> b");
        let (held, calls) = s.finish();
        assert_eq!(shown + &held, "a <tool_cat> b");
        assert!(calls.is_empty());
        // A call that cannot be read stays text.
        let mut s = CallStream::default();
        let shown = s.push("<tool_call>\nnot json");
        let (held, calls) = s.finish();
        assert_eq!(shown + &held, "<tool_call>\nnot json");
        assert!(calls.is_empty());
    }

    /// `"parameters": {}` (a common way to say "no arguments") let the grammar take any JSON
    /// value as the arguments, and a call with `[]` was then returned as raw text, even under
    /// `tool_choice: "required"` (found in review). Arguments are an object.
    #[test]
    fn parameters_of_no_type_are_an_object() {
        let t = WireTool {
            kind: "function".into(),
            function: WireFunction {
                name: "f".into(),
                description: None,
                parameters: Some(json!({})),
            },
        };
        let set = ToolSet::new(Some(vec![t]), Some(&json!("required")), None)
            .unwrap()
            .unwrap();
        let g = set.grammar(None).unwrap();
        let bad = "<tool_call>\n{\"name\": \"f\", \"arguments\": []}\n</tool_call>";
        assert!(!g.accepts(bad).unwrap(), "the grammar allows {bad:?}");
        let good = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
        assert!(g.accepts(good).unwrap());
        let mut listed = weather();
        listed.function.parameters = Some(json!({"type": "array"}));
        let e = ToolSet::new(Some(vec![listed]), None, None).unwrap_err();
        assert!(e.message.contains("must describe an object"), "{e:?}");
    }
}
