//! The `tool-calls` dialect: the calls chat templates teach, read from the model's output.

use serde_json::Value;

use super::json::{args_value, citations, extract_object, string_field};
use super::{Action, Decision, FinalStatus, Step};

/// Tool calls as chat templates have models write them: Hermes/Qwen `<tool_call>{...}
/// </tool_call>`, Mistral `[TOOL_CALLS] [{...}]`, or a bare `{"name": ..., "arguments"|
/// "parameters": {...}}` (Llama 3.1). The first call is the step; `final_answer` ends the run
/// and `todo_write` changes the plan.
pub(super) fn parse_tool_calls(output: &str) -> Result<Step, String> {
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
            citations: citations(&args),
        },
        _ => Decision::Act(Action { tool: name, args }),
    };
    Ok(Step {
        thought,
        decision,
        todo: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::tests::{act, done};
    use crate::agent::protocol::Protocol;
    use serde_json::json;

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
}
