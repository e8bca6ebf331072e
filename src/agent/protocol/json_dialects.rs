//! The JSON dialects: `json-typed`, `json-action` and `json-finish`.

use serde_json::{Map, Value};

use super::json::{args_value, citations, extract_object, string_field};
use super::{Action, Decision, FinalStatus, Step, TodoChange};
use crate::agent::todo::TodoPatch;

fn todo_patch(o: &Map<String, Value>) -> Result<Option<TodoChange>, String> {
    match o.get("todo_patch") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value::<TodoPatch>(v.clone())
            .map(|p| Some(TodoChange::Patch(p)))
            .map_err(|e| format!("todo_patch is not valid: {e}")),
    }
}

pub(super) fn parse_json_typed(output: &str) -> Result<Step, String> {
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
            citations: citations(&o),
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

pub(super) fn parse_json_action(output: &str) -> Result<Step, String> {
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
            citations: citations(&o),
        },
        _ => return Err("the step has neither \"action\" nor \"answer\"".into()),
    };
    Ok(Step {
        thought,
        decision,
        todo: todo_patch(&o)?,
    })
}

pub(super) fn parse_json_finish(output: &str) -> Result<Step, String> {
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
            citations: citations(&o),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::tests::{act, done};
    use crate::agent::protocol::Protocol;
    use serde_json::json;

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
}
