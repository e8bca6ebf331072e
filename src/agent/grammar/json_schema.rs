//! The JSON Schema of a step in the JSON protocols: one branch per active tool, its arguments
//! held to the tool's schema, and the final form where it is allowed.

use serde_json::{json, Value};

use super::{answer_string, bounded, citations_schema, object, string, thought, StepShape};
use crate::agent::todo::TodoPatch;
use crate::tools::{spec_for, ToolSpec};

fn one_of(branches: Vec<Value>) -> Value {
    if branches.len() == 1 {
        branches.into_iter().next().unwrap_or(Value::Null)
    } else {
        json!({"oneOf": branches})
    }
}

/// One branch per tool, and the final form when allowed.
fn union(
    tools: &[ToolSpec],
    shape: StepShape<'_>,
    tool: impl Fn(&ToolSpec) -> Value,
    final_form: impl FnOnce() -> Value,
) -> Value {
    let mut branches: Vec<Value> = tools.iter().map(tool).collect();
    if shape.allow_final {
        branches.push(final_form());
    }
    one_of(branches)
}

pub(super) fn json_typed(tools: &[ToolSpec], shape: StepShape) -> Value {
    let patch = shape
        .todo_patch
        .then(|| bounded(&spec_for::<TodoPatch>("todo_patch").parameters));
    let with_patch = |mut props: Vec<(&'static str, Value)>| {
        if let Some(p) = &patch {
            props.push(("todo_patch", p.clone()));
        }
        props
    };
    union(
        tools,
        shape,
        |t| {
            object(
                with_patch(vec![
                    ("type", json!({"const": "tool"})),
                    ("thinking", string()),
                    ("tool_name", json!({"const": t.name})),
                    ("tool_args", bounded(&t.parameters)),
                ]),
                &["type", "thinking", "tool_name", "tool_args"],
            )
        },
        || {
            object(
                with_patch(vec![
                    ("type", json!({"const": "final"})),
                    ("thinking", thought(&shape, true)),
                    ("citations", citations_schema(&shape)),
                    ("final", answer_string(&shape)),
                ]),
                &["type", "thinking", "citations", "final"],
            )
        },
    )
}

pub(super) fn json_action(tools: &[ToolSpec], shape: StepShape) -> Value {
    union(
        tools,
        shape,
        |t| {
            let action = object(
                vec![
                    ("name", json!({"const": t.name})),
                    ("arguments", bounded(&t.parameters)),
                ],
                &["name", "arguments"],
            );
            object(
                vec![("thought", thought(&shape, false)), ("action", action)],
                &["thought", "action"],
            )
        },
        || {
            object(
                vec![
                    ("thought", thought(&shape, true)),
                    ("citations", citations_schema(&shape)),
                    ("answer", answer_string(&shape)),
                ],
                &["thought", "citations", "answer"],
            )
        },
    )
}

/// `args` is a JSON object written inside a string: a regular expression of the tool's schema
/// (`args_pattern`) holds the string's content to that object, as the other protocols' grammars
/// hold their arguments. A schema the expression cannot follow gets any object; the parser then
/// checks the arguments and a mistake goes back to the model as an observation.
pub(super) fn json_finish(tools: &[ToolSpec], shape: StepShape) -> Value {
    union(
        tools,
        shape,
        |t| {
            object(
                vec![
                    ("thought", thought(&shape, false)),
                    ("action", json!({"const": t.name})),
                    ("args", args_string(&t.parameters)),
                ],
                &["thought", "action", "args"],
            )
        },
        || {
            object(
                vec![
                    ("thought", thought(&shape, true)),
                    ("action", json!({"const": "FINISH"})),
                    ("citations", citations_schema(&shape)),
                    ("final_answer", answer_string(&shape)),
                    ("task_successful", json!({"type": "boolean"})),
                ],
                &[
                    "thought",
                    "action",
                    "citations",
                    "final_answer",
                    "task_successful",
                ],
            )
        },
    )
}

/// The `args` string of a `json-finish` step: its content is the tool's arguments as JSON.
fn args_string(parameters: &Value) -> Value {
    let object = args_pattern(&bounded(parameters)).unwrap_or_else(|| r"\{.*\}".to_string());
    json!({"type": "string", "pattern": format!("^{object}$")})
}

/// The longest arguments pattern an object writes (see `object_pattern`).
const MAX_ARGS_PATTERN: usize = 32 * 1024;

/// A regular expression of the JSON a schema allows, written as the grammars write JSON (`", "`
/// and `": "` between items, properties in the schema's order, objects closed). `None` for
/// what it does not follow (references, maps, numeric ranges...), where the caller falls back.
/// Only the shapes tool arguments take are followed: objects of strings, numbers, booleans,
/// enums, optional values and lists.
fn args_pattern(schema: &Value) -> Option<String> {
    const STRING_CHAR: &str = r#"(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})"#;
    const INTEGER: &str = r"-?(?:0|[1-9][0-9]{0,17})";
    let o = schema.as_object()?;
    if let Some(values) = o.get("enum").and_then(Value::as_array) {
        let literals: Vec<String> = values
            .iter()
            .map(|v| regex::escape(&v.to_string()))
            .collect();
        return Some(format!("(?:{})", literals.join("|")));
    }
    if let Some(value) = o.get("const") {
        return Some(regex::escape(&value.to_string()));
    }
    if let Some(branches) = o.get("anyOf").or_else(|| o.get("oneOf")) {
        let parts = branches
            .as_array()?
            .iter()
            .map(args_pattern)
            .collect::<Option<Vec<_>>>()?;
        return Some(format!("(?:{})", parts.join("|")));
    }
    let types: Vec<&str> = match o.get("type")? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let mut alternatives = Vec::new();
    for t in types {
        alternatives.push(match t {
            "null" => "null".to_string(),
            "boolean" => "(?:true|false)".to_string(),
            // Ranges other than "not negative" are left to the tool's own check of its
            // arguments, which answers the model with an observation.
            "integer"
                if o.get("minimum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| m >= 0.0) =>
            {
                INTEGER[2..].to_string()
            }
            "integer" => INTEGER.to_string(),
            "number" => format!(r"{INTEGER}(?:\.[0-9]{{1,17}})?(?:[eE][+-]?[0-9]{{1,3}})?"),
            // Every string but those of calls already made (see `exclude`).
            "string" if o.contains_key("x-not") => {
                let not: Vec<&str> = o
                    .get("x-not")?
                    .as_array()?
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                format!(r#""{}""#, super::exclude::not_any_of_json(&not))
            }
            "string" if !o.contains_key("pattern") && !o.contains_key("format") => {
                let min = o.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                let max = o.get("maxLength").and_then(Value::as_u64)?;
                format!(r#""{STRING_CHAR}{{{min},{max}}}""#)
            }
            "array" => {
                let item = args_pattern(o.get("items")?)?;
                let max = o.get("maxItems").and_then(Value::as_u64)?;
                if o.get("minItems").and_then(Value::as_u64).unwrap_or(0) > 0 || max == 0 {
                    return None;
                }
                format!(r"\[(?:{item}(?:, {item}){{0,{}}})?\]", max - 1)
            }
            "object" => object_pattern(o)?,
            _ => return None,
        });
    }
    Some(format!("(?:{})", alternatives.join("|")))
}

/// An object's properties in the schema's order, the required ones present. An optional
/// property may be left out, so whether a `, ` comes before the next one depends on whether
/// any came before it: `rest(i, first)` is the pattern of properties `i..` in either case.
fn object_pattern(o: &serde_json::Map<String, Value>) -> Option<String> {
    if o.get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
        || o.contains_key("patternProperties")
    {
        return None;
    }
    let required: Vec<&str> = o
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut properties = Vec::new();
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        for (name, schema) in props {
            let member = format!(
                "{}: {}",
                regex::escape(&Value::String(name.clone()).to_string()),
                args_pattern(schema)?
            );
            properties.push((member, required.contains(&name.as_str())));
        }
    }
    // The pattern writes each member about once per optional member before it: past a
    // bound, the arguments are held to any object instead (three levels of eight optional
    // properties made a 4 MB pattern llguidance refused, and every step failed).
    let members: usize = properties.iter().map(|(m, _)| m.len()).sum();
    let optional = properties.iter().filter(|(_, r)| !r).count();
    if members.saturating_mul(optional + 1) > MAX_ARGS_PATTERN {
        return None;
    }
    fn rest(properties: &[(String, bool)], first: bool) -> String {
        let Some(((member, required), tail)) = properties.split_first() else {
            return String::new();
        };
        match (first, *required) {
            (true, true) => format!("{member}{}", rest(tail, false)),
            (false, true) => format!(", {member}{}", rest(tail, false)),
            // Written once each way, so the pattern grows with the square of the properties,
            // not exponentially.
            (false, false) => format!("(?:, {member})?{}", rest(tail, false)),
            (true, false) => format!("(?:{member}{}|{})", rest(tail, false), rest(tail, true)),
        }
    }
    Some(format!(r"\{{{}\}}", rest(&properties, true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::grammar::Grammar;

    /// Every tool Burrow ships, the meta-tools included, has its `json-finish` arguments
    /// held to its schema, not to the any-object fallback.
    #[test]
    fn every_shipped_tool_has_an_arguments_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let ws = crate::workspace::Workspace::open_at(&dir.path().join("w.db")).unwrap();
        let mut specs = crate::tools::all_tools(std::sync::Arc::new(ws))
            .unwrap()
            .specs();
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        specs.extend(crate::agent::meta::toolbelt_specs(&names, &names[..1]));
        specs.push(crate::agent::meta::todo_write_spec());
        for s in &specs {
            let pattern = args_pattern(&bounded(&s.parameters));
            assert!(pattern.is_some(), "{}: {}", s.name, s.parameters);
            let g = Grammar::JsonSchema(args_string(&s.parameters));
            g.validate().unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        // Arguments a tool takes, in a string.
        let search = specs.iter().find(|s| s.name == "search_issues").unwrap();
        let g = Grammar::JsonSchema(args_string(&search.parameters));
        assert!(
            g.accepts(r#""{\"query\": \"crash\"}""#).unwrap(),
            "{}",
            search.parameters
        );
        assert!(!g.accepts(r#""{\"q\": \"crash\"}""#).unwrap());
    }
}
