//! Tests of the step grammars over every protocol: each is valid, names only the active tools,
//! accepts the steps the parser reads and nothing else, and matches its snapshot.

use super::*;
use crate::agent::protocol::PROTOCOLS;
use crate::agent::todo::PLAN_ITEMS;
use crate::tools::calculate::CalculateInput;
use crate::tools::spec_for;

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
                    ..Default::default()
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
        ..Default::default()
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
        ..Default::default()
    };
    let Grammar::JsonSchema(s) = step_grammar(Protocol::JsonAction, &tools()[..2], shape).unwrap()
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

#[test]
fn grammars_accept_well_formed_steps_and_nothing_else() {
    let shape = StepShape {
        allow_final: true,
        todo_patch: true,
        ..Default::default()
    };
    let cases: [(Protocol, &[&str], &[&str]); 5] = [
        (
            Protocol::JsonTyped,
            &[
                r#"{"type": "tool", "thinking": "sum", "tool_name": "calculate", "tool_args": {"expression": "1+1"}}"#,
                r#"{"type": "final", "thinking": "done", "citations": [], "final": "2", "todo_patch": {"op": "remove", "item_id": "1", "reason": "done"}}"#,
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
                r#"{"thought": "t", "citations": [], "answer": "none"}"#,
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
                r#"{"thought": "t", "action": "FINISH", "citations": [], "final_answer": "2", "task_successful": true}"#,
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
                "Thought: done\nCitations: none\nFinal Answer: 2\nbecause 1+1.",
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
                "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"answer\": \"none\", \"citations\": []}}\n</tool_call>",
            ],
            &[
                "<tool_call>\n{\"name\": \"calculate\", \"arguments\": {}}\n</tool_call>",
                // Citations are written every time (issue 22: left optional, they were left out).
                "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"answer\": \"none\"}}\n</tool_call>",
            ],
        ),
    ];
    // A string cannot run on: thoughts and arguments are bounded.
    let g = step_grammar(Protocol::JsonAction, &tools(), shape).unwrap();
    let long = "a".repeat(THOUGHT_CHARS as usize + 1);
    let step = format!(r#"{{"thought": "{long}", "citations": [], "answer": "x"}}"#);
    assert!(!g.accepts(&step).unwrap());
    let step = format!(
        r#"{{"thought": "{}", "citations": [], "answer": "x"}}"#,
        &long[1..]
    );
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
            .map(|i| format!(r#"{{"title": "t{i}", "status": "pending"}}"#))
            .collect();
        format!(
            r#"{{"type": "final", "thinking": "t", "citations": [], "final": "x", "todo_patch": {{"op": "replace", "items": [{}], "reason": "r"}}}}"#,
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
        ..Default::default()
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

/// Issue 22: a final answer cites only items the run saw (none when it saw none), a call the
/// run made cannot be written again, and a thought cannot start with punctuation.
#[test]
fn a_step_cites_only_what_was_seen_and_repeats_no_call() {
    let cites = ["o/r#7".to_string(), "r:src/a.rs:3".to_string()];
    let made = [crate::agent::protocol::Action {
        tool: "calculate".into(),
        args: json!({"expression": "1+1"}).as_object().unwrap().clone(),
    }];
    let shape = StepShape {
        allow_final: true,
        todo_patch: false,
        cites: &cites,
        made: &made,
        ..Default::default()
    };
    let cases: [(Protocol, &str, &str, &str); 5] = [
        (
            Protocol::JsonTyped,
            r#"{"type": "final", "thinking": "found", "citations": [CITES], "final": "It is #7."}"#,
            r#"{"type": "tool", "thinking": "sum", "tool_name": "calculate", "tool_args": {"expression": "EXPR"}}"#,
            r#"{"type": "final", "thinking": "...},", "citations": [], "final": "x"}"#,
        ),
        (
            Protocol::JsonAction,
            r#"{"thought": "found", "citations": [CITES], "answer": "It is #7."}"#,
            r#"{"thought": "sum", "action": {"name": "calculate", "arguments": {"expression": "EXPR"}}}"#,
            r#"{"thought": "},", "citations": [], "answer": "x"}"#,
        ),
        (
            Protocol::JsonFinish,
            r#"{"thought": "found", "action": "FINISH", "citations": [CITES], "final_answer": "It is #7.", "task_successful": true}"#,
            r#"{"thought": "sum", "action": "calculate", "args": "{\"expression\": \"EXPR\"}"}"#,
            r#"{"thought": " x", "action": "FINISH", "citations": [], "final_answer": "x", "task_successful": true}"#,
        ),
        (
            Protocol::Text,
            "Thought: found\nCitations: CITES\nFinal Answer: It is #7.",
            "Thought: sum\nAction: calculate\nArgs: {\"expression\": \"EXPR\"}",
            "Thought: ...\nCitations: none\nFinal Answer: x",
        ),
        (
            Protocol::ToolCalls,
            "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"answer\": \"It is #7.\", \"citations\": [CITES]}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"EXPR\"}}\n</tool_call>",
            "",
        ),
    ];
    for (p, answer, call, junk) in cases {
        let g = step_grammar(p, &tools(), shape).unwrap();
        let list = |items: &[&str]| {
            if p == Protocol::Text {
                items.join(", ")
            } else {
                items
                    .iter()
                    .map(|i| format!("\"{i}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let with = |items: &[&str]| answer.replace("CITES", &list(items));
        assert!(g.accepts(&with(&["o/r#7"])).unwrap(), "{}", p.as_str());
        assert!(
            g.accepts(&with(&["o/r#7", "r:src/a.rs:3"])).unwrap(),
            "{}",
            p.as_str()
        );
        assert!(!g.accepts(&with(&["o/r#8"])).unwrap(), "{}", p.as_str());
        let read = p.parse(&with(&["r:src/a.rs:3"])).unwrap();
        let crate::agent::protocol::Decision::Finish { citations, .. } = read.decision else {
            panic!("{}", p.as_str())
        };
        assert_eq!(citations, ["r:src/a.rs:3"], "{}", p.as_str());
        assert!(
            !g.accepts(&call.replace("EXPR", "1+1")).unwrap(),
            "{}",
            p.as_str()
        );
        assert!(
            g.accepts(&call.replace("EXPR", "1+2")).unwrap(),
            "{}",
            p.as_str()
        );
        if !junk.is_empty() {
            assert!(!g.accepts(junk).unwrap(), "{}: {junk}", p.as_str());
        }
    }
    // Nothing seen: nothing to cite.
    let none = StepShape {
        cites: &[],
        ..shape
    };
    let g = step_grammar(Protocol::JsonAction, &tools(), none).unwrap();
    assert!(g
        .accepts(
            r#"{"thought": "none", "citations": [], "answer": "The workspace does not hold it."}"#
        )
        .unwrap());
    assert!(!g
        .accepts(r#"{"thought": "none", "citations": ["o/r#7"], "answer": "x"}"#)
        .unwrap());
}

/// Opens an issue.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct OpenIssueInput {
    /// The number.
    number: i64,
    repo: Option<String>,
}

/// Issue 22: Qwen2.5-Coder-0.5B opened "#1234567890", a number it invented. A tool that opens
/// an item takes only the items the run saw or the task named; with none, it is not offered;
/// one already opened cannot be opened again.
#[test]
fn a_tool_opens_only_items_the_run_saw() {
    let open = ToolSpec {
        opens: Some(crate::tools::Opens {
            argument: "number",
            items: crate::tools::OpensItems::Issues,
        }),
        ..spec_for::<OpenIssueInput>("get_issue")
    };
    let tools = vec![spec_for::<CalculateInput>("calculate"), open];
    let seen = [
        Locator::issue_or_pr("o/r", 7, false),
        Locator::issue_or_pr("o/r", 9, false),
        Locator::issue_or_pr("o/r", 8, true),
        Locator::file("r", "src/a.rs", Some(3)),
    ];
    let call = |n: i64| {
        format!(
            r#"{{"thought": "look", "action": {{"name": "get_issue", "arguments": {{"number": {n}}}}}}}"#
        )
    };
    let shape = StepShape {
        allow_final: true,
        openable: &seen,
        ..Default::default()
    };
    let g = step_grammar(Protocol::JsonAction, &tools, shape).unwrap();
    assert!(g.accepts(&call(7)).unwrap() && g.accepts(&call(9)).unwrap());
    // #8 is a pull request: get_issue would refuse it.
    assert!(!g.accepts(&call(8)).unwrap());
    assert!(!g.accepts(&call(1234567890)).unwrap());
    // The model reads the tool as it is: only the grammar knows the numbers.
    let text = match step_grammar(Protocol::ToolCalls, &tools, shape).unwrap() {
        Grammar::Lark(g) => g,
        other => panic!("{other:?}"),
    };
    assert!(text.contains("get_issue"));
    // Nothing seen: the tool is not offered; the others are.
    let nothing = StepShape {
        openable: &[],
        ..shape
    };
    let g = step_grammar(Protocol::JsonAction, &tools, nothing).unwrap();
    assert!(!g.accepts(&call(7)).unwrap());
    assert!(g
        .accepts(r#"{"thought": "sum", "action": {"name": "calculate", "arguments": {"expression": "1+1"}}}"#)
        .unwrap());
    // Opened once: the other number is left.
    let made = [crate::agent::protocol::Action {
        tool: "get_issue".into(),
        args: json!({"number": 7}).as_object().unwrap().clone(),
    }];
    let after = StepShape {
        made: &made,
        ..shape
    };
    let g = step_grammar(Protocol::JsonAction, &tools, after).unwrap();
    assert!(!g.accepts(&call(7)).unwrap() && g.accepts(&call(9)).unwrap());
    // Nor with its repository named (SmolLM2 opened one issue so, again and again, while
    // other items were left to open).
    let with_repo = r#"{"thought": "look", "action": {"name": "get_issue", "arguments": {"number": 7, "repo": "o/r"}}}"#;
    assert!(!g.accepts(with_repo).unwrap());
}

/// A `repo` argument names one of the workspace's repositories: SmolLM2 filled it with text it
/// made up (a date, a URL), and each such call failed.
#[test]
fn a_repo_argument_names_a_repository_of_the_workspace() {
    let tools = vec![spec_for::<OpenIssueInput>("get_issue")];
    let seen = [Locator::issue_or_pr("o/r", 7, false)];
    let repos = ["o/r".to_string(), "ripgrep".to_string()];
    let call = |repo: &str| {
        format!(
            r#"{{"thought": "look", "action": {{"name": "get_issue", "arguments": {{"number": 7, "repo": "{repo}"}}}}}}"#
        )
    };
    let shape = StepShape {
        allow_final: true,
        openable: &seen,
        repos: &repos,
        ..Default::default()
    };
    let g = step_grammar(Protocol::JsonAction, &tools, shape).unwrap();
    assert!(g.accepts(&call("o/r")).unwrap() && g.accepts(&call("ripgrep")).unwrap());
    assert!(!g.accepts(&call("github.com/bitcoin/Bitcoin-Qt")).unwrap());
    // Without the workspace's names, any repository may be named.
    let open = StepShape {
        repos: &[],
        ..shape
    };
    let g = step_grammar(Protocol::JsonAction, &tools, open).unwrap();
    assert!(g.accepts(&call("github.com/bitcoin/Bitcoin-Qt")).unwrap());
}

/// Issue 22: after Burrow opened a match without a check, Qwen2.5-Coder-0.5B copied Burrow's
/// steps in every protocol but json-typed and opened result after result to the step limit.
/// There the step now starts by deciding on the opened item: yes answers citing it, no acts.
#[test]
fn a_step_after_an_unchecked_opening_decides_on_the_item_first() {
    let cites = ["o/r#7".to_string()];
    let shape = StepShape {
        allow_final: true,
        cites: &cites,
        must_cite: true,
        decide: Some("o/r#7"),
        ..Default::default()
    };
    let cases: [(Protocol, &[&str], &[&str]); 4] = [
        (
            Protocol::JsonAction,
            &[
                r##"{"thought": "Does o/r#7 answer the task? Yes, it says so.", "citations": ["o/r#7"], "answer": "#7"}"##,
                r##"{"thought": "Does o/r#7 answer the task? No.", "action": {"name": "calculate", "arguments": {"expression": "1"}}}"##,
            ],
            &[
                // A yes that goes on to act, a no that answers, no decision, another citation.
                r##"{"thought": "Does o/r#7 answer the task? Yes.", "action": {"name": "calculate", "arguments": {"expression": "1"}}}"##,
                r##"{"thought": "Does o/r#7 answer the task? No.", "citations": ["o/r#7"], "answer": "#7"}"##,
                r##"{"thought": "It does.", "citations": ["o/r#7"], "answer": "#7"}"##,
                r##"{"thought": "Does o/r#7 answer the task? Yes.", "citations": [], "answer": "#7"}"##,
            ],
        ),
        (
            Protocol::JsonFinish,
            &[
                r##"{"thought": "Does o/r#7 answer the task? Yes.", "action": "FINISH", "citations": ["o/r#7"], "final_answer": "#7", "task_successful": true}"##,
                r##"{"thought": "Does o/r#7 answer the task? No", "action": "calculate", "args": "{\"expression\": \"2\"}"}"##,
            ],
            &[
                r##"{"thought": "Does o/r#7 answer the task? No.", "action": "FINISH", "citations": ["o/r#7"], "final_answer": "#7", "task_successful": true}"##,
            ],
        ),
        (
            Protocol::Text,
            &[
                "Thought: Does o/r#7 answer the task? Yes.\nCitations: o/r#7\nFinal Answer: #7",
                "Thought: Does o/r#7 answer the task? No.\nAction: calculate\nArgs: {\"expression\": \"1\"}",
            ],
            &[
                "Thought: Does o/r#7 answer the task? Yes.\nAction: calculate\nArgs: {\"expression\": \"1\"}",
                "Thought: Does o/r#7 answer the task? Yes.\nCitations: o/r#7, o/r#7\nFinal Answer: #7",
                "Thought: It does.\nCitations: o/r#7\nFinal Answer: #7",
            ],
        ),
        (
            Protocol::ToolCalls,
            &[
                "Does o/r#7 answer the task? Yes.\n<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"answer\": \"#7\", \"citations\": [\"o/r#7\"]}}\n</tool_call>",
                "Does o/r#7 answer the task? No.\n<tool_call>\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"1\"}}\n</tool_call>",
            ],
            &[
                "Does o/r#7 answer the task? No.\n<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"answer\": \"#7\", \"citations\": [\"o/r#7\"]}}\n</tool_call>",
                "<tool_call>\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"1\"}}\n</tool_call>",
            ],
        ),
    ];
    for (p, good, bad) in cases {
        let g = step_grammar(p, &tools(), shape).unwrap();
        g.validate().unwrap();
        for s in good {
            assert!(
                g.accepts(s).unwrap(),
                "{}: should accept {s}\n{g:?}",
                p.as_str()
            );
            // And the parser reads what the grammar accepts.
            p.parse(s).unwrap();
        }
        for s in bad {
            assert!(!g.accepts(s).unwrap(), "{}: should refuse {s}", p.as_str());
        }
    }
}

/// A final answer is kept to what the context window has room for: SmolLM2 wrote 544 tokens
/// of emoji as an answer until the window was full, and the step was lost (found when an
/// issue's observation gained a "Fixed by" line, issue 18).
#[test]
fn a_final_answer_is_kept_to_the_room_left_in_the_window() {
    assert_eq!(answer_room(100_000), ANSWER_CHARS);
    assert!(answer_room(543) < 800, "{}", answer_room(543));
    assert_eq!(answer_room(0), 100);
    let shape = StepShape {
        allow_final: true,
        answer_chars: Some(10),
        ..Default::default()
    };
    let answer = |p: Protocol, text: &str| match p {
        Protocol::JsonTyped => {
            format!(
                r#"{{"type": "final", "thinking": "done", "citations": [], "final": "{text}"}}"#
            )
        }
        Protocol::Text => format!("Thought: done\nCitations: none\nFinal Answer: {text}"),
        _ => String::new(),
    };
    for p in [Protocol::JsonTyped, Protocol::Text] {
        let g = step_grammar(p, &tools(), shape).unwrap();
        assert!(
            g.accepts(&answer(p, "0123456789")).unwrap(),
            "{}",
            p.as_str()
        );
        assert!(
            !g.accepts(&answer(p, "0123456789x")).unwrap(),
            "{}",
            p.as_str()
        );
    }
}
