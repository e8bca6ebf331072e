//! Steps written as a model writes them under the protocol's grammar: the step Burrow takes
//! itself (the search before the model's first step) is replayed to the model in its own
//! format, so the prompt shows one correct step before the model writes any.

use serde_json::{Map, Value};

use super::{Action, Protocol};

impl Protocol {
    /// A tool call with its thought, in this protocol's format.
    pub fn write_call(self, thought: &str, action: &Action) -> String {
        let args = Value::Object(action.args.clone());
        let s = |v: &str| Value::String(v.to_string());
        match self {
            Protocol::JsonTyped => spaced(&object([
                ("type", s("tool")),
                ("thinking", s(thought)),
                ("tool_name", s(&action.tool)),
                ("tool_args", args),
            ])),
            Protocol::JsonAction => spaced(&object([
                ("thought", s(thought)),
                (
                    "action",
                    object([("name", s(&action.tool)), ("arguments", args)]),
                ),
            ])),
            Protocol::JsonFinish => spaced(&object([
                ("thought", s(thought)),
                ("action", s(&action.tool)),
                ("args", Value::String(spaced(&args))),
            ])),
            Protocol::Text => format!(
                "Thought: {thought}\nAction: {}\nArgs: {}",
                action.tool,
                spaced(&args)
            ),
            Protocol::ToolCalls => format!(
                "<tool_call>\n{}\n</tool_call>",
                spaced(&object([("name", s(&action.tool)), ("arguments", args)]))
            ),
        }
    }
}

impl Protocol {
    /// A final answer with its citations, in this protocol's format.
    pub fn write_final(self, thought: &str, citations: &[&str], answer: &str) -> String {
        let s = |v: &str| Value::String(v.to_string());
        let cites = Value::Array(citations.iter().map(|c| s(c)).collect());
        match self {
            Protocol::JsonTyped => spaced(&object([
                ("type", s("final")),
                ("thinking", s(thought)),
                ("citations", cites),
                ("final", s(answer)),
            ])),
            Protocol::JsonAction => spaced(&object([
                ("thought", s(thought)),
                ("citations", cites),
                ("answer", s(answer)),
            ])),
            Protocol::JsonFinish => spaced(&object([
                ("thought", s(thought)),
                ("action", s("FINISH")),
                ("citations", cites),
                ("final_answer", s(answer)),
                ("task_successful", Value::Bool(true)),
            ])),
            Protocol::Text => format!(
                "Thought: {thought}\nCitations: {}\nFinal Answer: {answer}",
                if citations.is_empty() {
                    "none".to_string()
                } else {
                    citations.join(", ")
                }
            ),
            Protocol::ToolCalls => format!(
                "<tool_call>\n{}\n</tool_call>",
                spaced(&object([
                    ("name", s("final_answer")),
                    (
                        "arguments",
                        object([
                            ("citations", cites),
                            ("answer", s(answer)),
                            ("status", s("completed"))
                        ]),
                    ),
                ]))
            ),
        }
    }

    /// One short worked example of a run in this protocol's format, for the system prompt: a
    /// step that opens the search result that looks right, its observation, and the answer
    /// that cites it. The workspace is made up, so nothing in it can be cited.
    pub fn example(self) -> String {
        let open = Action {
            tool: "get_issue".into(),
            args: [("number".to_string(), Value::from(212))]
                .into_iter()
                .collect(),
        };
        format!(
            "Task: Which issue reports that the settings window crashes when it is closed?\n\
             (The first search listed acme/app#212 \"Crash on closing Settings\" first.)\n\
             Step: {}\n\
             Observation: #212 Crash on closing Settings [closed] (repo acme/app): Closing the \
             settings window with Escape crashes the app.\n\
             Step: {}",
            self.write_call("The first result looks right: I open it to check.", &open),
            self.write_final(
                "Issue 212 is the crash the task describes.",
                &["acme/app#212"],
                "Issue #212 reports it: closing the settings window with Escape crashes the app.",
            )
        )
    }
}

fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Map<String, Value>>(),
    )
}

/// JSON as the step grammars write it: `", "` between items and `": "` after keys.
pub(crate) fn spaced(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let items: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(spaced).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::{Decision, PROTOCOLS};

    /// What Burrow writes for a protocol, that protocol reads back as the same call.
    #[test]
    fn a_written_call_reads_back_in_every_protocol() {
        let action = Action {
            tool: "search".into(),
            args: serde_json::json!({"query": "a \"quoted\" word", "kinds": ["issue", "pr"]})
                .as_object()
                .unwrap()
                .clone(),
        };
        for p in PROTOCOLS {
            let text = p.write_call("Search the workspace first.", &action);
            let step = p
                .parse(&text)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.as_str()));
            assert_eq!(
                step.decision,
                Decision::Act(action.clone()),
                "{}",
                p.as_str()
            );
            if p != Protocol::ToolCalls {
                assert_eq!(
                    step.thought,
                    "Search the workspace first.",
                    "{}",
                    p.as_str()
                );
            }
        }
        for p in PROTOCOLS {
            let text = p.write_final("Found it.", &["o/r#7"], "It is #7.");
            let step = p
                .parse(&text)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.as_str()));
            let Decision::Finish {
                answer, citations, ..
            } = step.decision
            else {
                panic!("{}: {text}", p.as_str())
            };
            assert_eq!(
                (answer.as_str(), citations),
                ("It is #7.", vec!["o/r#7".to_string()])
            );
            assert!(p.example().contains("acme/app#212"), "{}", p.as_str());
        }
        assert_eq!(
            spaced(&serde_json::json!({"a": [1, 2], "b": {"c": null}})),
            r#"{"a": [1, 2], "b": {"c": null}}"#
        );
    }
}
