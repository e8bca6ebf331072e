//! The grammar each step is decoded under: built from the protocol and the tools active at that
//! step, so the tool name is one of them, its arguments follow that tool's JSON Schema, and the
//! final form appears only where it is allowed. JSON protocols get a JSON Schema (a `oneOf` with
//! one branch per tool); `text` and `tool-calls` get a Lark grammar with the arguments as
//! embedded JSON schemas.
//!
//! The parts: `json_schema` builds the JSON protocols' schemas (and the pattern `json-finish`
//! holds its arguments string to); `lark` builds the grammars of `text` and `tool-calls`.

mod json_schema;
mod lark;
#[cfg(test)]
mod tests;

use serde_json::{json, Value};

use super::protocol::Protocol;
use crate::llm::grammar::{Grammar, GrammarError};
use crate::tools::ToolSpec;
use json_schema::{json_action, json_finish, json_typed};
use lark::{text, tool_calls};

/// What a step may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepShape {
    /// The final-answer form is offered (it is not while the plan forbids it, for instance).
    pub allow_final: bool,
    /// `json-typed` steps may carry a `todo_patch`.
    pub todo_patch: bool,
}

/// The grammar of one step. For `tool-calls` the final answer is the `final_answer` tool, so
/// `tools` decides it there.
pub fn step_grammar(
    protocol: Protocol,
    tools: &[ToolSpec],
    shape: StepShape,
) -> Result<Grammar, GrammarError> {
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
        Protocol::ToolCalls => Grammar::Lark(tool_calls(tools)?),
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
/// Characters of one string argument of a tool, unless its schema says otherwise.
const ARGUMENT_CHARS: u64 = 300;
/// Items of one list argument, unless its schema says otherwise.
const ARGUMENT_ITEMS: u64 = 16;

fn string() -> Value {
    json!({"type": "string", "maxLength": THOUGHT_CHARS})
}

fn answer_string() -> Value {
    json!({"type": "string", "maxLength": ANSWER_CHARS})
}

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
                if has_type(o, "string") && !o.contains_key("maxLength") && !o.contains_key("enum")
                {
                    o.insert("maxLength".into(), json!(ARGUMENT_CHARS));
                }
                if has_type(o, "array") && !o.contains_key("maxItems") {
                    o.insert("maxItems".into(), json!(ARGUMENT_ITEMS));
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
