//! The grammar each step is decoded under: built from the protocol and the tools active at that
//! step, so the tool name is one of them, its arguments follow that tool's JSON Schema, and the
//! final form appears only where it is allowed. JSON protocols get a JSON Schema (a `oneOf` with
//! one branch per tool); `text` and `tool-calls` get a Lark grammar with the arguments as
//! embedded JSON schemas.
//!
//! The parts: `json_schema` builds the JSON protocols' schemas (and the pattern `json-finish`
//! holds its arguments string to); `lark` builds the grammars of `text` and `tool-calls`.

mod exclude;
mod json_schema;
mod lark;
#[cfg(test)]
mod tests;

use serde_json::{json, Value};

use super::protocol::{Action, Protocol};
use crate::llm::grammar::{Grammar, GrammarError};
use crate::tools::{Locator, OpensItems, ToolSpec};
use json_schema::{json_action, json_finish, json_typed};
use lark::{text, tool_calls};

/// What a step may be.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepShape<'a> {
    /// The final-answer form is offered (it is not while the plan forbids it, for instance).
    pub allow_final: bool,
    /// `json-typed` steps may carry a `todo_patch`.
    pub todo_patch: bool,
    /// What a final answer may cite: the items the run's observations showed (see
    /// `Locator::cite`). A model can still be wrong, but it cannot cite what it never saw.
    pub cites: &'a [String],
    /// A final answer cites at least one of `cites`: the item the model said answers the
    /// task, after a check, or the one Burrow opened where the run checks none.
    pub must_cite: bool,
    /// The calls the run made: the step cannot make one of them again.
    pub made: &'a [Action],
    /// The items a tool that opens one may open: those the run saw and those the task names.
    pub openable: &'a [Locator],
    /// What a `repo` argument may name (empty: anything; see `AgentConfig::repos`).
    pub repos: &'a [String],
    /// The longest final answer, in characters (None: `ANSWER_CHARS`): less when the context
    /// window has little room left (see `answer_room`).
    pub answer_chars: Option<u64>,
    /// Lines the run's tools returned: when any, a final answer in a JSON protocol starts
    /// with the first of them whole (the opened item's, list's or history's head line, which
    /// names what was found), may add one more, then the model's own words (see
    /// `AgentConfig::quote_answers`).
    pub quotes: &'a [String],
    /// The task asks a yes-or-no question: a quoting answer starts with "Yes." or "No.".
    pub verdict: bool,
}

/// A regular expression matching `s` literally.
fn regex_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The grammar of one step. For `tool-calls` the final answer is the `final_answer` tool, so
/// `tools` decides it there.
pub fn step_grammar(
    protocol: Protocol,
    tools: &[ToolSpec],
    shape: StepShape<'_>,
) -> Result<Grammar, GrammarError> {
    let tools = &without_calls_made(
        &opening_only(&in_repos(tools, shape.repos), shape.openable, shape.made),
        shape.made,
    );
    // A protocol that answers with a tool has its final form among `tools`.
    let final_form = shape.allow_final && !protocol.answers_with_tool();
    if tools.is_empty() && !final_form {
        return Err(GrammarError::Invalid {
            kind: "step grammar",
            reason: "no tool is active and no final answer is allowed: the step could be nothing"
                .into(),
        });
    }
    let grammar = match protocol {
        Protocol::JsonTyped => Grammar::JsonSchema(json_typed(tools, shape)),
        Protocol::JsonAction => Grammar::JsonSchema(json_action(tools, shape)),
        Protocol::JsonFinish => Grammar::JsonSchema(json_finish(tools, shape)),
        Protocol::Text => Grammar::Lark(text(tools, shape)?),
        Protocol::ToolCalls => Grammar::Lark(tool_calls(&with_citations(tools, shape))?),
    };
    Ok(grammar)
}

fn object(properties: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let mut props = serde_json::Map::new();
    for (k, v) in properties {
        props.insert(k.to_string(), v);
    }
    json!({"type": "object", "properties": props, "required": required})
}

/// Characters a thought may take, and a final answer. Bounds keep a small model that falls
/// into a loop inside a string from filling the step's token budget: the grammar closes the
/// string and the step still parses.
const THOUGHT_CHARS: u64 = 400;
const ANSWER_CHARS: u64 = 2000;

/// The longest final answer a step may write (see `StepShape::answer_chars`).
fn answer_limit(shape: &StepShape) -> u64 {
    shape
        .answer_chars
        .unwrap_or(ANSWER_CHARS)
        .clamp(1, ANSWER_CHARS)
}

/// How long a final answer may be when `room` tokens of the context window are left for the
/// step: what the thought and the step's own syntax take set aside (`THOUGHT_CHARS` at two
/// characters a token), two characters a token for the rest, and never under 100. SmolLM2,
/// shown an issue with one more line, wrote 544 tokens of emoji and hashtags as its answer
/// until the window was full, and the step was lost.
pub fn answer_room(room: u64) -> u64 {
    let reserved = THOUGHT_CHARS / 2 + 64;
    (room.saturating_sub(reserved) * 2).clamp(100, ANSWER_CHARS)
}
/// Characters of one string argument of a tool, unless its schema says otherwise.
const ARGUMENT_CHARS: u64 = 300;
/// Items of one list argument, unless its schema says otherwise.
const ARGUMENT_ITEMS: u64 = 16;

/// The tools with their arguments held to calls not made yet; a tool whose every call was
/// made (one without arguments, once called) is left out.
fn without_calls_made(tools: &[ToolSpec], made: &[Action]) -> Vec<ToolSpec> {
    tools
        .iter()
        .filter_map(|t| {
            let calls: Vec<&serde_json::Map<String, Value>> = made
                .iter()
                .filter(|a| a.tool == t.name)
                .map(|a| &a.args)
                .collect();
            let parameters = exclude::excluding(&bounded(&t.parameters), &calls)?;
            Some(ToolSpec {
                parameters,
                ..t.clone()
            })
        })
        .collect()
}

/// The tools with the argument that opens an item held to the items that may be opened; a
/// tool with none to open is left out, unless it is the only tool (the step would be nothing).
/// An issue, a pull request or a commit opened once is not offered again, whatever else the
/// call says (its repository named or not: the same item); a file is, to read on in it.
fn opening_only(tools: &[ToolSpec], openable: &[Locator], made: &[Action]) -> Vec<ToolSpec> {
    let held: Vec<ToolSpec> = tools
        .iter()
        .filter_map(|t| {
            let Some(opens) = t.opens else {
                return Some(t.clone());
            };
            let opened: Vec<&Value> = made
                .iter()
                .filter(|a| a.tool == t.name && opens.items != OpensItems::File)
                .filter_map(|a| a.args.get(opens.argument))
                .collect();
            let mut values: Vec<Value> = Vec::new();
            for v in openable.iter().filter_map(|item| opens.value(item)) {
                if !values.contains(&v) && !opened.iter().any(|o| opened_is(o, &v)) {
                    values.push(v);
                }
            }
            if values.is_empty() {
                return None;
            }
            let mut t = t.clone();
            t.parameters["properties"][opens.argument] = json!({ "enum": values });
            Some(t)
        })
        .collect();
    if held.is_empty() {
        tools.to_vec()
    } else {
        held
    }
}

/// Burrow's tools with a `repo` argument held to the workspace's repositories. Not an MCP
/// server's (named `server__tool`): GitHub's takes `repo` beside `owner`, for repositories
/// the workspace need not hold, and every such call was refused.
fn in_repos(tools: &[ToolSpec], repos: &[String]) -> Vec<ToolSpec> {
    if repos.is_empty() {
        return tools.to_vec();
    }
    tools
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if t.name.contains(crate::tools::mcp_client::SEPARATOR) {
                return t;
            }
            if let Some(repo) = t.parameters.pointer_mut("/properties/repo") {
                *repo = json!({ "enum": repos });
            }
            t
        })
        .collect()
}

/// Whether a call's argument `opened` named the item `value` offers: the same number, or
/// a hash one of which starts with the other (calls may give a hash whole or cut).
fn opened_is(opened: &Value, value: &Value) -> bool {
    match (opened.as_str(), value.as_str()) {
        (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() => {
            a.starts_with(b) || b.starts_with(a)
        }
        _ => opened == value,
    }
}

/// Citations a final answer may list.
pub const CITATIONS: u64 = 3;

/// Characters the thought before a quoting answer may take: the answer leads with what it
/// quotes, so the thought only says why that answers. Qwen2.5-Coder-0.5B filled 250 of the 400
/// a thought may take with the opened issue's body, 2.4 s of a 13 s lookup.
const QUOTING_THOUGHT_CHARS: u64 = 160;

/// The thought of a step's form: `string()`, shorter before a quoting answer.
fn thought(shape: &StepShape<'_>, answers: bool) -> Value {
    bounded_thought(if answers && !shape.quotes.is_empty() {
        QUOTING_THOUGHT_CHARS
    } else {
        THOUGHT_CHARS
    })
}

/// A thought: one bounded line that starts with a letter or a digit. Small models otherwise
/// start a thought with what the last step's JSON left in their head (`...},`).
fn string() -> Value {
    bounded_thought(THOUGHT_CHARS)
}

fn bounded_thought(chars: u64) -> Value {
    json!({
        "type": "string",
        "pattern": format!("^{}[^\\n]{{0,{}}}$", not_beginning(BURROWS_THOUGHTS, 0), chars - 1),
    })
}

/// How the thoughts of Burrow's own steps begin (its search with the task, its opening of a
/// match): a model's thought may not begin so. Qwen2.5-Coder-0.5B, after Burrow opened a
/// commit, wrote "Then I open the best match…" itself and opened the next results one by one
/// to the step limit.
const BURROWS_THOUGHTS: &[&str] = &["First I search", "Then I open"];

/// A regular expression of a thought's first characters (a letter or a digit first, no line
/// break) that do not begin as any of `prefixes`, from their character `at` on.
fn not_beginning(prefixes: &[&str], at: usize) -> String {
    let mut next: Vec<char> = prefixes.iter().filter_map(|p| p.chars().nth(at)).collect();
    next.sort_unstable();
    next.dedup();
    let taken: String = next
        .iter()
        .map(|c| format!("\\x{{{:x}}}", *c as u32))
        .collect();
    let mut alternatives = vec![match (at, taken.is_empty()) {
        (0, true) => "[\\p{L}\\p{N}]".to_string(),
        (0, false) => format!("[\\p{{L}}\\p{{N}}&&[^{taken}]]"),
        (_, _) => format!("[^\\n{taken}]"),
    }];
    for c in next {
        let following: Vec<&str> = prefixes
            .iter()
            .filter(|p| p.chars().nth(at) == Some(c))
            .copied()
            .collect();
        // A whole prefix matched: nothing may follow it.
        if following.iter().any(|p| p.chars().count() == at + 1) {
            continue;
        }
        alternatives.push(format!(
            "{}{}",
            regex_literal(&c.to_string()),
            not_beginning(&following, at + 1)
        ));
    }
    format!("(?:{})", alternatives.join("|"))
}

/// A final answer's citations: some of the items the run saw (at least one when the shape
/// says so), none when it saw nothing.
pub(crate) fn citations_schema(shape: &StepShape<'_>) -> Value {
    if shape.cites.is_empty() {
        json!({"type": "array", "maxItems": 0})
    } else {
        let min = u64::from(shape.must_cite);
        json!({"type": "array", "items": {"enum": shape.cites}, "minItems": min, "maxItems": CITATIONS})
    }
}

/// The tools, with `final_answer`'s citations limited to what the run saw.
fn with_citations(tools: &[ToolSpec], shape: StepShape<'_>) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if t.name == crate::agent::meta::FINAL_ANSWER {
                t.parameters["properties"]["citations"] = citations_schema(&shape);
                // Written every time, as every other protocol's final form has it (empty when
                // nothing seen answers): left optional, Qwen2.5-Coder-0.5B left it out and
                // answered with an issue's title but not the issue.
                if let Some(required) = t.parameters["required"].as_array_mut() {
                    if !required.iter().any(|r| r == "citations") {
                        required.push(json!("citations"));
                    }
                }
            }
            t
        })
        .collect()
}

fn answer_string(shape: &StepShape) -> Value {
    if shape.quotes.is_empty() {
        return json!({"type": "string", "maxLength": answer_limit(shape)});
    }
    // The first line leads: left to choose, Qwen2.5-Coder-0.5B quoted a pull request's
    // `Fixes: #N` line rather than its head naming who merged and approved it, and a file's
    // code line without the line naming the file.
    let lead = regex_literal(&shape.quotes[0]);
    let more = match &shape.quotes[1..] {
        [] => String::new(),
        rest => format!(
            "(?: (?:{}))?",
            rest.iter()
                .map(|q| regex_literal(q))
                .collect::<Vec<_>>()
                .join("|")
        ),
    };
    let verdict = if shape.verdict { "(?:Yes|No)\\. " } else { "" };
    json!({
        "type": "string",
        // No control characters in the model's own words: Qwen2.5-Coder-0.5B filled them with
        // `\r\thidden: bool,` over and over, and joined two quoted lines with a DEL.
        "pattern": format!(
            "^{verdict}{lead}{more}(?: [^\\x00-\\x1f\\x7f]{{0,{QUOTED_TAIL_CHARS}}})?$"
        ),
    })
}

/// Characters of its own a quoting answer may add after its quotes.
const QUOTED_TAIL_CHARS: u64 = 300;

/// A tool's parameters with every string and list bounded (see `ARGUMENT_CHARS`,
/// `ARGUMENT_ITEMS`).
fn bounded(parameters: &Value) -> Value {
    /// `"type": name`, or a list of types with it (`["string", "null"]`).
    fn has_type(o: &serde_json::Map<String, Value>, name: &str) -> bool {
        match o.get("type") {
            Some(Value::String(t)) => t == name,
            Some(Value::Array(a)) => a.iter().any(|t| t == name),
            _ => false,
        }
    }
    fn walk(v: &mut Value) {
        match v {
            Value::Object(o) => {
                // Never below what the schema asks for at least: the step was unsatisfiable.
                let at_least = |o: &serde_json::Map<String, Value>, k: &str| {
                    o.get(k).and_then(Value::as_u64).unwrap_or(0)
                };
                if has_type(o, "string") && !o.contains_key("maxLength") && !o.contains_key("enum")
                {
                    let max = ARGUMENT_CHARS.max(at_least(o, "minLength"));
                    o.insert("maxLength".into(), json!(max));
                }
                if has_type(o, "array") && !o.contains_key("maxItems") {
                    let max = ARGUMENT_ITEMS.max(at_least(o, "minItems"));
                    o.insert("maxItems".into(), json!(max));
                }
                o.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut p = parameters.clone();
    walk(&mut p);
    p
}
