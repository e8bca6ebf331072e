//! The ReAct dialects the agent speaks, and their parsers. Under a grammar the model's output
//! always has the protocol's shape; without one (`--no-grammar`, or a backend without
//! grammars) the parsers are tolerant of what small models write instead: code fences, text
//! around the JSON, single quotes, trailing commas, Python's `True`/`None`. What still cannot
//! be read becomes a `ParseError` that tells the model what was wrong and shows the expected
//! format.
//!
//! Generation stops at `Protocol::stop_strings`, found in the streamed text by
//! `llm::stream::StopMatcher`.
//!
//! The parts: `json` reads JSON as small models write it; `json_dialects`, `text` and
//! `tool_calls` read the steps of each dialect family; `thought` streams the thought out of a
//! step still being written.

mod json;
mod json_dialects;
mod text;
mod thought;
mod tool_calls;
mod write;
pub(crate) use write::spaced;

use serde_json::{Map, Value};

use super::todo::{TodoPatch, TodoWrite};
use json_dialects::{parse_json_action, parse_json_finish, parse_json_typed};
use text::parse_text;
use tool_calls::parse_tool_calls;

pub use json::extract_object;
pub use thought::ThoughtStream;

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
                r#"{"type": "tool", "thinking": "...", "tool_name": "<tool>", "tool_args": {...}} or {"type": "final", "thinking": "...", "citations": ["<item>", ...], "final": "<answer>"} (either may add "todo_patch": {"op": "add"|"update"|"remove"|"replace", ..., "reason": "..."})"#
            }
            Protocol::JsonAction => {
                r#"{"thought": "...", "action": {"name": "<tool>", "arguments": {...}}} or {"thought": "...", "citations": ["<item>", ...], "answer": "<answer>"}"#
            }
            Protocol::JsonFinish => {
                r#"{"thought": "...", "action": "<tool>", "args": "<the arguments as a JSON object in a string>"} or {"thought": "...", "action": "FINISH", "citations": ["<item>", ...], "final_answer": "<answer>", "task_successful": true}"#
            }
            Protocol::Text => {
                "Thought: ...\nAction: <tool>\nArgs: {...}\nor\nThought: ...\nCitations: <item>, ... (or none)\nFinal Answer: <answer>"
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
    Finish {
        answer: String,
        status: FinalStatus,
        /// The items the answer cites, as written (`repo#12`, `repo:path:line`, `repo@hash`).
        citations: Vec<String>,
    },
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

#[cfg(test)]
mod tests {
    use super::*;

    // Shared by the tests of each dialect's parser.
    pub(super) fn act(tool: &str, args: Value) -> Decision {
        Decision::Act(Action {
            tool: tool.into(),
            args: args.as_object().unwrap().clone(),
        })
    }

    pub(super) fn done(answer: &str, status: FinalStatus) -> Decision {
        Decision::Finish {
            answer: answer.into(),
            status,
            citations: Vec::new(),
        }
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
}
