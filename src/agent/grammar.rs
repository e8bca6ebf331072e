//! The grammar each step is decoded under: built from the protocol and the tools active at that
//! step, so the tool name is one of them, its arguments follow that tool's JSON Schema, and the
//! final form appears only where it is allowed. JSON protocols get a JSON Schema (a `oneOf` with
//! one branch per tool); `text` and `tool-calls` get a Lark grammar with the arguments as
//! embedded JSON schemas.

use serde_json::{json, Value};

use super::protocol::Protocol;
use super::todo::TodoPatch;
use crate::llm::grammar::{strict_json_schema, Grammar, GrammarError};
use crate::tools::{spec_for, ToolSpec};

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
    shape: StepShape,
    tool: impl Fn(&ToolSpec) -> Value,
    final_form: impl FnOnce() -> Value,
) -> Value {
    let mut branches: Vec<Value> = tools.iter().map(tool).collect();
    if shape.allow_final {
        branches.push(final_form());
    }
    one_of(branches)
}

fn json_typed(tools: &[ToolSpec], shape: StepShape) -> Value {
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
                    ("thinking", string()),
                    ("final", answer_string()),
                ]),
                &["type", "thinking", "final"],
            )
        },
    )
}

fn json_action(tools: &[ToolSpec], shape: StepShape) -> Value {
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
                vec![("thought", string()), ("action", action)],
                &["thought", "action"],
            )
        },
        || {
            object(
                vec![("thought", string()), ("answer", answer_string())],
                &["thought", "answer"],
            )
        },
    )
}

/// `args` is a JSON object written inside a string: a regular expression of the tool's schema
/// (`args_pattern`) holds the string's content to that object, as the other protocols' grammars
/// hold their arguments. A schema the expression cannot follow gets any object; the parser then
/// checks the arguments and a mistake goes back to the model as an observation.
fn json_finish(tools: &[ToolSpec], shape: StepShape) -> Value {
    union(
        tools,
        shape,
        |t| {
            object(
                vec![
                    ("thought", string()),
                    ("action", json!({"const": t.name})),
                    ("args", args_string(&t.parameters)),
                ],
                &["thought", "action", "args"],
            )
        },
        || {
            object(
                vec![
                    ("thought", string()),
                    ("action", json!({"const": "FINISH"})),
                    ("final_answer", answer_string()),
                    ("task_successful", json!({"type": "boolean"})),
                ],
                &["thought", "action", "final_answer", "task_successful"],
            )
        },
    )
}

/// The `args` string of a `json-finish` step: its content is the tool's arguments as JSON.
fn args_string(parameters: &Value) -> Value {
    let object = args_pattern(&bounded(parameters)).unwrap_or_else(|| r"\{.*\}".to_string());
    json!({"type": "string", "pattern": format!("^{object}$")})
}

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

/// A JSON schema embedded in Lark, enforced as `Grammar::JsonSchema` enforces one (objects
/// closed, compact separators). The schema text is JSON, which Lark's `%json` reads as is.
fn lark_json(schema: &Value) -> Result<String, GrammarError> {
    serde_json::to_string(&strict_json_schema(schema)).map_err(|e| GrammarError::Invalid {
        kind: "step grammar",
        reason: format!("a tool schema cannot be written: {e}"),
    })
}

/// A Lark string literal.
fn lark_literal(s: &str) -> String {
    let escaped: String = s
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            '\n' => vec!['\\', 'n'],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

/// One line of thought, then an action with its arguments or a final answer.
fn text(tools: &[ToolSpec], shape: StepShape) -> Result<String, GrammarError> {
    let mut g = String::from("start: \"Thought: \" THOUGHT \"\\n\" ");
    let mut alternatives = Vec::new();
    if !tools.is_empty() {
        alternatives.push("action".to_string());
    }
    if shape.allow_final {
        alternatives.push("final".to_string());
    }
    g.push_str(&format!("({})\n", alternatives.join(" | ")));
    g.push_str(&format!("THOUGHT: /[^\\n]{{1,{THOUGHT_CHARS}}}/\n"));
    if !tools.is_empty() {
        let calls: Vec<String> = (0..tools.len()).map(|i| format!("call_{i}")).collect();
        g.push_str(&format!("action: {}\n", calls.join(" | ")));
        for (i, t) in tools.iter().enumerate() {
            g.push_str(&format!(
                "call_{i}: {} args_{i}\nargs_{i}: %json {}\n",
                lark_literal(&format!("Action: {}\nArgs: ", t.name)),
                lark_json(&bounded(&t.parameters))?
            ));
        }
    }
    if shape.allow_final {
        g.push_str(&format!(
            "final: \"Final Answer: \" ANSWER\nANSWER: /(.|\\n){{1,{ANSWER_CHARS}}}/\n"
        ));
    }
    Ok(g)
}

/// Hermes-style calls (`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`), the form most
/// tool-calling chat templates teach.
fn tool_calls(tools: &[ToolSpec]) -> Result<String, GrammarError> {
    let mut g = String::from("start: \"<tool_call>\\n\" call \"\\n</tool_call>\"\n");
    let calls: Vec<String> = (0..tools.len()).map(|i| format!("call_{i}")).collect();
    g.push_str(&format!("call: {}\n", calls.join(" | ")));
    for (i, t) in tools.iter().enumerate() {
        let schema = object(
            vec![
                ("name", json!({"const": t.name})),
                ("arguments", bounded(&t.parameters)),
            ],
            &["name", "arguments"],
        );
        g.push_str(&format!("call_{i}: %json {}\n", lark_json(&schema)?));
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::PROTOCOLS;
    use crate::agent::todo::PLAN_ITEMS;
    use crate::tools::calculate::CalculateInput;

    /// Lists things.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct ListInput {
        /// Which kind.
        kind: Kind,
        /// How many.
        limit: Option<u32>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Kind {
        Issue,
        Pr,
    }

    /// Answers.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct AnswerInput {
        /// The answer.
        answer: String,
    }

    fn tools() -> Vec<ToolSpec> {
        vec![
            spec_for::<CalculateInput>("calculate"),
            spec_for::<ListInput>("list_things"),
            spec_for::<AnswerInput>("final_answer"),
        ]
    }

    #[test]
    fn every_protocol_has_a_valid_grammar_for_every_shape() {
        for p in PROTOCOLS {
            for allow_final in [true, false] {
                let g = step_grammar(
                    p,
                    &tools(),
                    StepShape {
                        allow_final,
                        todo_patch: true,
                    },
                )
                .unwrap();
                g.validate()
                    .unwrap_or_else(|e| panic!("{} (final {allow_final}): {e}\n{g:?}", p.as_str()));
            }
        }
        // Only a final answer, no tools: fine except for tool-calls, where it is a tool.
        let only_final = StepShape {
            allow_final: true,
            todo_patch: false,
        };
        for p in PROTOCOLS {
            let g = step_grammar(p, &[], only_final);
            assert_eq!(g.is_ok(), p != Protocol::ToolCalls, "{}", p.as_str());
        }
    }

    #[test]
    fn the_schema_names_only_active_tools_and_their_arguments() {
        let shape = StepShape {
            allow_final: false,
            todo_patch: false,
        };
        let Grammar::JsonSchema(s) =
            step_grammar(Protocol::JsonAction, &tools()[..2], shape).unwrap()
        else {
            panic!("json-action has a JSON schema");
        };
        let branches = s["oneOf"].as_array().unwrap();
        assert_eq!(branches.len(), 2);
        assert_eq!(
            branches[0]["properties"]["action"]["properties"]["name"]["const"],
            "calculate"
        );
        assert_eq!(
            branches[1]["properties"]["action"]["properties"]["arguments"]["properties"]["kind"]
                ["enum"],
            json!(["issue", "pr"])
        );
        assert!(!s.to_string().contains("\"answer\""), "no final form: {s}");

        let Grammar::Lark(g) = step_grammar(Protocol::Text, &tools()[..1], shape).unwrap() else {
            panic!("text has a Lark grammar");
        };
        assert!(g.contains("Action: calculate\\nArgs: "), "{g}");
        assert!(!g.contains("Final Answer"), "{g}");
    }

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

    #[test]
    fn grammars_accept_well_formed_steps_and_nothing_else() {
        let shape = StepShape {
            allow_final: true,
            todo_patch: true,
        };
        let cases: [(Protocol, &[&str], &[&str]); 5] = [
            (
                Protocol::JsonTyped,
                &[
                    r#"{"type": "tool", "thinking": "sum", "tool_name": "calculate", "tool_args": {"expression": "1+1"}}"#,
                    r#"{"type": "final", "thinking": "done", "final": "2", "todo_patch": {"op": "remove", "item_id": "1", "reason": "done"}}"#,
                ],
                &[
                    r#"{"type": "tool", "thinking": "x", "tool_name": "rm", "tool_args": {}}"#,
                    r#"{"type": "tool", "thinking": "x", "tool_name": "calculate", "tool_args": {}}"#,
                    r#"{"type": "tool", "thinking": "x", "tool_name": "list_things", "tool_args": {"kind": "commit"}}"#,
                ],
            ),
            (
                Protocol::JsonAction,
                &[
                    r#"{"thought": "t", "action": {"name": "list_things", "arguments": {"kind": "pr", "limit": 3}}}"#,
                    r#"{"thought": "t", "answer": "none"}"#,
                ],
                &[r#"{"thought": "t", "action": {"name": "list_things", "arguments": {"limit": 3}}}"#],
            ),
            (
                Protocol::JsonFinish,
                &[
                    r#"{"thought": "t", "action": "calculate", "args": "{\"expression\": \"2\"}"}"#,
                    r#"{"thought": "t", "action": "list_things", "args": "{\"kind\": \"pr\", \"limit\": 3}"}"#,
                    r#"{"thought": "t", "action": "list_things", "args": "{\"kind\": \"issue\"}"}"#,
                    r#"{"thought": "t", "action": "list_things", "args": "{\"kind\": \"issue\", \"limit\": null}"}"#,
                    r#"{"thought": "t", "action": "FINISH", "final_answer": "2", "task_successful": true}"#,
                ],
                &[
                    r#"{"thought": "t", "action": "DELETE", "args": "{}"}"#,
                    // The arguments in the string follow the tool's schema too.
                    r#"{"thought": "t", "action": "calculate", "args": "[the list]"}"#,
                    r#"{"thought": "t", "action": "calculate", "args": "{}"}"#,
                    r#"{"thought": "t", "action": "calculate", "args": "{\"expression\": 2}"}"#,
                    r#"{"thought": "t", "action": "list_things", "args": "{\"kind\": \"commit\"}"}"#,
                    r#"{"thought": "t", "action": "list_things", "args": "{\"kind\": \"pr\", \"limit\": -1}"}"#,
                    r#"{"thought": "t", "action": "list_things", "args": "{\"kind\": \"pr\", \"x\": 1}"}"#,
                ],
            ),
            (
                Protocol::Text,
                &[
                    "Thought: add\nAction: calculate\nArgs: {\"expression\": \"1+1\"}",
                    "Thought: done\nFinal Answer: 2\nbecause 1+1.",
                ],
                &[
                    "Thought: add\nAction: shell\nArgs: {}",
                    "Thought: add\nAction: calculate\nArgs: {}",
                    "Thought: add\nAction: calculate\nArgs: {\"expression\": \"1\", \"x\": 1}",
                    "Thought: add\nAction: calculate\nArgs: {  \"expression\": \"1\"}",
                    "Action: calculate\nArgs: {\"expression\": \"1\"}",
                ],
            ),
            (
                Protocol::ToolCalls,
                &[
                    "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"answer\": \"none\"}}\n</tool_call>",
                ],
                &["<tool_call>\n{\"name\": \"calculate\", \"arguments\": {}}\n</tool_call>"],
            ),
        ];
        // A string cannot run on: thoughts and arguments are bounded.
        let g = step_grammar(Protocol::JsonAction, &tools(), shape).unwrap();
        let long = "a".repeat(THOUGHT_CHARS as usize + 1);
        let step = format!(r#"{{"thought": "{long}", "answer": "x"}}"#);
        assert!(!g.accepts(&step).unwrap());
        let step = format!(r#"{{"thought": "{}", "answer": "x"}}"#, &long[1..]);
        assert!(g.accepts(&step).unwrap());
        let arg = "w".repeat(ARGUMENT_CHARS as usize + 1);
        let step = format!(
            r#"{{"thought": "t", "action": {{"name": "calculate", "arguments": {{"expression": "{arg}"}}}}}}"#
        );
        assert!(!g.accepts(&step).unwrap());
        // Nor a list: a plan has at most PLAN_ITEMS items, a list argument ARGUMENT_ITEMS.
        let g = step_grammar(
            Protocol::JsonTyped,
            &tools(),
            StepShape {
                todo_patch: true,
                ..shape
            },
        )
        .unwrap();
        let plan = |n: u32| {
            let items: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"id": "{i}", "title": "t", "status": "pending"}}"#))
                .collect();
            format!(
                r#"{{"type": "final", "thinking": "t", "final": "x", "todo_patch": {{"op": "replace", "items": [{}], "reason": "r"}}}}"#,
                items.join(", ")
            )
        };
        assert!(g.accepts(&plan(PLAN_ITEMS)).unwrap());
        assert!(!g.accepts(&plan(PLAN_ITEMS + 1)).unwrap());
        let labels = bounded(&json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(labels["maxItems"], json!(ARGUMENT_ITEMS));
        assert_eq!(labels["items"]["maxLength"], json!(ARGUMENT_CHARS));

        for (p, good, bad) in cases {
            let g = step_grammar(p, &tools(), shape).unwrap();
            for text in good {
                assert!(
                    g.accepts(text).unwrap(),
                    "{} should accept {text}",
                    p.as_str()
                );
                // And what the grammar accepts, the parser reads.
                p.parse(text)
                    .unwrap_or_else(|e| panic!("{}: {text}: {e}", p.as_str()));
            }
            for text in bad {
                assert!(
                    !g.accepts(text).unwrap(),
                    "{} should refuse {text}",
                    p.as_str()
                );
            }
        }
    }

    #[test]
    fn grammar_snapshots() {
        let shape = StepShape {
            allow_final: true,
            todo_patch: false,
        };
        let tools = tools();
        for p in PROTOCOLS {
            let text = match step_grammar(p, &tools[..2], shape).unwrap() {
                Grammar::JsonSchema(s) => serde_json::to_string_pretty(&s).unwrap(),
                Grammar::Lark(g) | Grammar::Gbnf(g) => g,
            };
            insta::assert_snapshot!(format!("grammar_{}", p.as_str()), text);
        }
    }
}
