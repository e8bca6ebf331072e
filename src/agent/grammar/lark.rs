//! The Lark grammar of a step in `text` and `tool-calls`, with each tool's arguments as an
//! embedded JSON schema.

use serde_json::{json, Value};

use super::{answer_limit, bounded, object, StepShape, CITATIONS, THOUGHT_CHARS};
use crate::llm::grammar::{strict_json_schema, GrammarError};
use crate::tools::ToolSpec;

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
pub(super) fn text(tools: &[ToolSpec], shape: StepShape<'_>) -> Result<String, GrammarError> {
    let mut g = String::from("start: \"Thought: \" THOUGHT \"\\n\" ");
    let mut alternatives = Vec::new();
    if !tools.is_empty() {
        alternatives.push("action");
    }
    if shape.allow_final {
        alternatives.push("final");
    }
    g.push_str(&format!("({})\n", alternatives.join(" | ")));
    // A thought starts with a letter or a digit (see `super::string`).
    g.push_str(&format!(
        "THOUGHT: /[\\p{{L}}\\p{{N}}][^\\n]{{0,{}}}/\n",
        THOUGHT_CHARS - 1
    ));
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
        // Up to `CITATIONS` of the items the run saw, or none.
        let mut cites = if shape.must_cite && !shape.cites.is_empty() {
            Vec::new()
        } else {
            vec!["\"none\"".to_string()]
        };
        if !shape.cites.is_empty() {
            g.push_str(&format!(
                "cite: {}\n",
                shape
                    .cites
                    .iter()
                    .map(|c| lark_literal(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
            for n in 1..=CITATIONS.min(shape.cites.len() as u64) {
                cites.push(vec!["cite"; n as usize].join(" \", \" "));
            }
        }
        g.push_str(&format!(
            "final: \"Citations: \" ({}) \"\\nFinal Answer: \" ANSWER\nANSWER: /(.|\\n){{1,{}}}/\n",
            cites.join(" | "),
            answer_limit(&shape)
        ));
    }
    Ok(g)
}

/// Hermes-style calls (`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`), the form most
/// tool-calling chat templates teach.
pub(super) fn tool_calls(tools: &[ToolSpec]) -> Result<String, GrammarError> {
    let names: Vec<String> = (0..tools.len()).map(|i| format!("call_{i}")).collect();
    let mut g = format!(
        "start: \"<tool_call>\\n\" call \"\\n</tool_call>\"\ncall: {}\n",
        names.join(" | ")
    );
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
