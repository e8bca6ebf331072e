//! The Lark grammar of a step in `text` and `tool-calls`, with each tool's arguments as an
//! embedded JSON schema.

use serde_json::{json, Value};

use super::{answer_limit, bounded, decide_question, object, StepShape, CITATIONS, THOUGHT_CHARS};
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
    let mut g = String::from("start: \"Thought: \" ");
    let mut alternatives = Vec::new();
    match shape.decide {
        // The decision first (see `StepShape::decide`): yes answers, no acts.
        Some(cite) => {
            g.push_str(&lark_literal(&decide_question(cite)));
            if !tools.is_empty() {
                alternatives.push("\"No\" REST \"\\n\" action".to_string());
            }
            if shape.allow_final {
                alternatives.push("\"Yes\" REST \"\\n\" final".to_string());
            }
            g.push_str(&format!(
                " ({})\nREST: /[^\\n]{{0,{}}}/\n",
                alternatives.join(" | "),
                THOUGHT_CHARS - 1
            ));
        }
        None => {
            g.push_str("THOUGHT \"\\n\" ");
            if !tools.is_empty() {
                alternatives.push("action".to_string());
            }
            if shape.allow_final {
                alternatives.push("final".to_string());
            }
            g.push_str(&format!("({})\n", alternatives.join(" | ")));
            // A thought starts with a letter or a digit (see `super::string`).
            g.push_str(&format!(
                "THOUGHT: /[\\p{{L}}\\p{{N}}][^\\n]{{0,{}}}/\n",
                THOUGHT_CHARS - 1
            ));
        }
    }
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
/// tool-calling chat templates teach. When the step decides (see `StepShape::decide`), the
/// decision comes first, as text before the call (which templates keep as the message's
/// content): yes calls `final_answer`, no another tool.
pub(super) fn tool_calls(tools: &[ToolSpec], shape: StepShape<'_>) -> Result<String, GrammarError> {
    let block = |calls: &[usize]| {
        let names: Vec<String> = calls.iter().map(|i| format!("call_{i}")).collect();
        format!(
            "\"<tool_call>\\n\" ({}) \"\\n</tool_call>\"",
            names.join(" | ")
        )
    };
    let all: Vec<usize> = (0..tools.len()).collect();
    let mut g = match shape.decide {
        None => {
            let names: Vec<String> = all.iter().map(|i| format!("call_{i}")).collect();
            format!(
                "start: \"<tool_call>\\n\" call \"\\n</tool_call>\"\ncall: {}\n",
                names.join(" | ")
            )
        }
        Some(cite) => {
            let (answer, act): (Vec<usize>, Vec<usize>) = all
                .iter()
                .partition(|&&i| tools[i].name == crate::agent::meta::FINAL_ANSWER);
            let mut alternatives = Vec::new();
            if !act.is_empty() {
                alternatives.push(format!("\"No\" REST \"\\n\" {}", block(&act)));
            }
            if !answer.is_empty() {
                alternatives.push(format!("\"Yes\" REST \"\\n\" {}", block(&answer)));
            }
            format!(
                "start: {} ({})\nREST: /[^\\n<]{{0,{}}}/\n",
                lark_literal(&decide_question(cite)),
                alternatives.join(" | "),
                THOUGHT_CHARS - 1
            )
        }
    };
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
