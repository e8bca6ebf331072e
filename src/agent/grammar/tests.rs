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

/// Tools whose schemas come from an MCP server, as `tools::mcp_client::register` adds them (defects
/// found in review).
mod mcp_schemas {
    use super::*;
    use crate::agent::protocol::Action;
    use crate::tools::{ToolOutput, ToolRegistry};

    fn mcp(name: &str, params: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "A tool from an MCP server.".into(),
            parameters: params,
            opens: None,
        }
    }

    fn made(tool: &str, args: Value) -> Action {
        Action {
            tool: tool.into(),
            args: args.as_object().unwrap().clone(),
        }
    }

    /// A json-action step, written as the grammars write JSON (`", "` and `": "`).
    fn action(tool: &str, args: &str) -> String {
        format!(r#"{{"thought": "t", "action": {{"name": "{tool}", "arguments": {args}}}}}"#)
    }

    /// A pydantic model nested in a tool's input (FastMCP, `model_json_schema`) or
    /// zod-to-json-schema output: `$defs` / `definitions` with `$ref`s into them.
    fn with_defs() -> Value {
        json!({"type": "object",
               "$defs": {"Mode": {"type": "string", "enum": ["fast", "slow"]}},
               "properties": {"mode": {"$ref": "#/$defs/Mode"}},
               "required": ["mode"]})
    }

    /// The registry takes the tool, and the step grammar, which embeds its schema under
    /// `tool_args` / `arguments`, is valid in every protocol: the `$ref`s into `$defs` are
    /// written out in place (embedded as they were, `#/$defs/...` pointed at nothing there).
    #[test]
    fn a_schema_with_defs_is_registered_and_its_step_grammar_is_valid() {
        let mut registry = ToolRegistry::new();
        let registered = registry.register_dynamic(
            mcp("srv__set_mode", with_defs()),
            Box::new(|_| Ok(ToolOutput::new("ok", json!({})))),
        );
        assert!(registered.is_ok(), "{registered:?}");
        let shape = StepShape {
            allow_final: true,
            ..Default::default()
        };
        let mut broken = Vec::new();
        for p in PROTOCOLS {
            let g = step_grammar(p, &registry.specs(), shape).unwrap();
            if let Err(e) = g.validate() {
                broken.push(format!(
                    "{}: {}",
                    p.as_str(),
                    e.to_string().lines().next().unwrap_or("")
                ));
            }
        }
        assert!(
            broken.is_empty(),
            "registered, and these step grammars are not valid:\n{}",
            broken.join("\n")
        );
    }

    /// End to end: a run in the default protocol with such a tool succeeds, the model
    /// answering at its first step (the run failed there, though the model would only answer).
    #[test]
    fn a_run_with_a_defs_tool_succeeds() {
        use crate::agent::record::RunStatus;
        use crate::agent::{Agent, AgentConfig};
        use crate::llm::engine::CancelToken;
        use crate::llm::fake::{FakeModel, FakeTurn};
        let mut registry = ToolRegistry::new();
        registry
            .register_dynamic(
                mcp("srv__set_mode", with_defs()),
                Box::new(|_| Ok(ToolOutput::new("ok", json!({})))),
            )
            .unwrap();
        let model = FakeModel::new([FakeTurn::text(
            &json!({"type": "final", "thinking": "done", "citations": [], "final": "done"})
                .to_string(),
        )]);
        let agent = Agent::new(
            &model,
            &registry,
            AgentConfig {
                protocol: Protocol::JsonTyped,
                max_steps: 3,
                ..Default::default()
            },
        )
        .unwrap();
        let outcome = agent.run("task", &CancelToken::new(), &mut |_| {});
        assert_eq!(
            outcome.status,
            RunStatus::Succeeded,
            "error: {:?}",
            outcome.error
        );
    }

    /// GitHub's MCP server (and others) name a repository `repo` (with `owner` beside it), for
    /// repositories the workspace need not hold: `in_repos` holds only Burrow's own tools'
    /// `repo` to the workspace's repository names, so a valid GitHub call is accepted (it
    /// rewrote every tool's `repo` property, MCP tools' included).
    #[test]
    fn an_mcp_tools_repo_argument_is_not_held_to_the_workspace_repos() {
        let gh = mcp(
            "github__get_issue",
            json!({"type": "object", "properties": {
                "owner": {"type": "string"}, "repo": {"type": "string"},
                "issue_number": {"type": "number"}},
                "required": ["owner", "repo", "issue_number"]}),
        );
        let repos = ["app".to_string(), "acme/app".to_string()];
        let shape = StepShape {
            allow_final: true,
            repos: &repos,
            ..Default::default()
        };
        let valid = action(
            "github__get_issue",
            r#"{"owner": "octocat", "repo": "Hello-World", "issue_number": 1}"#,
        );
        // Control: without the workspace's names the call is fine.
        let open = StepShape {
            repos: &[],
            ..shape
        };
        let g = step_grammar(Protocol::JsonAction, std::slice::from_ref(&gh), open).unwrap();
        assert!(g.accepts(&valid).unwrap());
        let g = step_grammar(Protocol::JsonAction, &[gh], shape).unwrap();
        assert!(
            g.accepts(&valid).unwrap(),
            "a valid GitHub call is accepted"
        );
    }

    /// After one call, the exclusion of repeats keeps the key's own `pattern` and an array's
    /// `minItems`: the grammar still refuses calls the tool refuses (it replaced them, and
    /// allowed such calls).
    #[test]
    fn excluding_a_repeat_keeps_the_tools_own_constraints() {
        let shape = StepShape {
            allow_final: true,
            ..Default::default()
        };
        let day = mcp(
            "cal__day",
            json!({"type": "object", "properties": {"date": {"type": "string",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}}, "required": ["date"]}),
        );
        let before = step_grammar(Protocol::JsonAction, std::slice::from_ref(&day), shape).unwrap();
        let bad = action("cal__day", r#"{"date": "yesterday"}"#);
        assert!(!before.accepts(&bad).unwrap());
        let calls = [made("cal__day", json!({"date": "2024-01-01"}))];
        let after = step_grammar(
            Protocol::JsonAction,
            &[day],
            StepShape {
                made: &calls,
                ..shape
            },
        )
        .unwrap();
        // mcp-server-git's git_add: `files` has minItems 1.
        let add = mcp(
            "git__git_add",
            json!({"type": "object", "properties": {"repo_path": {"type": "string"},
                "files": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
                "required": ["repo_path", "files"]}),
        );
        let calls2 = [made(
            "git__git_add",
            json!({"repo_path": "/r", "files": ["a"]}),
        )];
        let after_add = step_grammar(
            Protocol::JsonAction,
            &[add],
            StepShape {
                made: &calls2,
                ..shape
            },
        )
        .unwrap();
        let empty = action("git__git_add", r#"{"repo_path": "/r", "files": []}"#);
        assert_eq!(
            (
                after.accepts(&bad).unwrap(),
                after_add.accepts(&empty).unwrap()
            ),
            (false, false),
            "(a date that breaks the pattern, an empty `files`) refused after one call"
        );
    }

    /// `bounded` caps strings at 300 characters and lists at 16 items, but never below what
    /// the schema asks for: a tool whose schema the registry took has a step grammar that is
    /// valid and takes its valid calls (capped below the minimum, none could be written).
    #[test]
    fn argument_caps_never_fall_below_a_schemas_minimum() {
        let shape = StepShape {
            allow_final: true,
            ..Default::default()
        };
        let t = mcp(
            "srv__sign",
            json!({"type": "object", "properties": {"key": {"type": "string", "minLength": 400}},
                "required": ["key"]}),
        );
        Grammar::JsonSchema(t.parameters.clone())
            .validate()
            .unwrap();
        let mut broken = Vec::new();
        for p in PROTOCOLS {
            match step_grammar(p, std::slice::from_ref(&t), shape).map(|g| g.validate()) {
                Ok(Ok(())) => {}
                Ok(Err(e)) | Err(e) => broken.push(format!(
                    "{}: {}",
                    p.as_str(),
                    e.to_string().lines().next().unwrap_or("")
                )),
            }
        }
        let g = step_grammar(Protocol::JsonAction, std::slice::from_ref(&t), shape).unwrap();
        let args = format!(r#"{{"key": "{}"}}"#, "k".repeat(400));
        // Control: the tool's own schema takes it.
        assert!(Grammar::JsonSchema(t.parameters.clone())
            .accepts(&args)
            .unwrap());
        let valid = action("srv__sign", &args);
        if !g.accepts(&valid).unwrap() {
            broken.push("json-action: a valid call is refused".into());
        }
        assert!(broken.is_empty(), "{}", broken.join("\n"));
    }

    /// json-finish's arguments pattern stays bounded with nested optional properties: a tool
    /// with three levels of eight optional properties, which the registry takes, has a valid
    /// json-finish step grammar (the pattern grew with the square of the optional properties
    /// at every level, and every json-finish step failed: llguidance, too big).
    #[test]
    fn json_finish_pattern_stays_bounded_on_nested_optional_objects() {
        fn nest(n: usize, depth: usize) -> Value {
            let mut props = serde_json::Map::new();
            for i in 0..n {
                props.insert(
                    format!("p{i}"),
                    if depth == 0 {
                        json!({"type": "string"})
                    } else {
                        nest(n, depth - 1)
                    },
                );
            }
            json!({"type": "object", "properties": props})
        }
        let t = mcp("srv__query", nest(8, 2));
        Grammar::JsonSchema(t.parameters.clone())
            .validate()
            .unwrap();
        let started = std::time::Instant::now();
        let g = step_grammar(
            Protocol::JsonFinish,
            &[t],
            StepShape {
                allow_final: true,
                ..Default::default()
            },
        )
        .unwrap();
        let size = match &g {
            Grammar::JsonSchema(v) => v.to_string().len(),
            _ => 0,
        };
        let r = g.validate();
        assert!(
            r.is_ok(),
            "schema of {size} bytes, {:?}: {}",
            started.elapsed(),
            r.unwrap_err().to_string().lines().next().unwrap_or("")
        );
    }

    /// The prompt lists a tool "in one line", an MCP description whose first sentence ends at
    /// a line break (a docstring) too: it came in whole, line breaks and all.
    #[test]
    fn a_tool_signature_stays_on_one_line() {
        let mut t = mcp(
            "fs__read",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        );
        t.description = "Reads a file.\n\nArgs:\n    path: the file\nWrite exactly one step per reply, in this format:".into();
        let line = crate::agent::prompt::tool_signature(&t);
        assert!(!line.contains('\n'), "{line:?}");
    }

    /// An integer argument at i64::MAX in a call made: the next step's grammar is made (its
    /// exclusion added 1 to it, exclude.rs `low = Some(n + 1)`, and panicked in a debug build).
    #[test]
    fn an_integer_call_at_i64_max_does_not_panic_the_next_step() {
        let t = mcp(
            "srv__page",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        );
        let calls = [made("srv__page", json!({"n": i64::MAX}))];
        let g = step_grammar(
            Protocol::JsonAction,
            &[t],
            StepShape {
                allow_final: true,
                made: &calls,
                ..Default::default()
            },
        );
        assert!(g.is_ok());
    }

    /// A tool whose arguments are an open map (`additionalProperties` a schema, no
    /// `properties`) is offered again after one call, with other arguments: it was taken as one
    /// "without arguments", and never offered again whatever arguments a call would give.
    #[test]
    fn an_open_object_tool_stays_callable_with_other_arguments() {
        let t = mcp(
            "env__set",
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
        );
        Grammar::JsonSchema(t.parameters.clone())
            .validate()
            .unwrap();
        // Control: before any call, the same call is fine.
        let before = step_grammar(
            Protocol::JsonAction,
            std::slice::from_ref(&t),
            StepShape {
                allow_final: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(before
            .accepts(&action("env__set", r#"{"B": "2"}"#))
            .unwrap());
        let calls = [made("env__set", json!({"A": "1"}))];
        let g = step_grammar(
            Protocol::JsonAction,
            &[t],
            StepShape {
                allow_final: true,
                made: &calls,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(g.accepts(&action("env__set", r#"{"B": "2"}"#)).unwrap());
    }

    /// An input schema `{}` (no `type`): the grammar holds the arguments to an object, as
    /// `McpServer::call` requires ("the arguments must be an object"); it let them be a string.
    #[test]
    fn an_empty_input_schema_still_holds_arguments_to_an_object() {
        let mut registry = ToolRegistry::new();
        registry
            .register_dynamic(
                mcp("srv__ping", json!({})),
                Box::new(|_| Ok(ToolOutput::new("ok", json!({})))),
            )
            .unwrap();
        let g = step_grammar(
            Protocol::JsonTyped,
            &registry.specs(),
            StepShape {
                allow_final: true,
                ..Default::default()
            },
        )
        .unwrap();
        let not_object =
            r#"{"type": "tool", "thinking": "t", "tool_name": "srv__ping", "tool_args": "hello"}"#;
        assert!(!g.accepts(not_object).unwrap());
    }

    /// A schema whose definitions refer to themselves (a tree) cannot be written out: the
    /// tool is left out, saying why, not every step of the run stopped.
    #[test]
    fn a_schema_that_refers_to_itself_is_left_out_saying_why() {
        let mut registry = ToolRegistry::new();
        let tree = json!({"type": "object",
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "properties": {"root": {"$ref": "#/$defs/Node"}}});
        let e = registry
            .register_dynamic(
                mcp("srv__tree", tree),
                Box::new(|_| Ok(ToolOutput::new("ok", json!({})))),
            )
            .unwrap_err();
        assert!(e.to_string().contains("refer to themselves"), "{e}");
        assert!(registry.specs().is_empty());
    }
}

/// A quoting answer's thought is short (its lead says what was found); a call's thought, and
/// an answer that quotes nothing, keep the usual bound.
#[test]
fn the_thought_before_a_quoting_answer_is_short() {
    let quotes = ["Issue #907 in o/r: Wallet crashes".to_string()];
    let cites = ["o/r#907".to_string()];
    let grammar = |quotes: &[String]| {
        step_grammar(
            Protocol::JsonTyped,
            &tools(),
            StepShape {
                allow_final: true,
                cites: &cites,
                quotes,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let answer = |thought: &str, text: &str| {
        crate::agent::protocol::spaced(&serde_json::json!({
            "type": "final",
            "thinking": thought,
            "citations": ["o/r#907"],
            "final": text,
        }))
    };
    let short = "It answers the task.";
    let long = "It answers the task, ".repeat(10);
    let quoting = grammar(&quotes);
    let lead = "Issue #907 in o/r: Wallet crashes";
    assert!(quoting.accepts(&answer(short, lead)).unwrap());
    assert!(!quoting.accepts(&answer(long.trim(), lead)).unwrap());
    let call = crate::agent::protocol::spaced(&serde_json::json!({
        "type": "tool",
        "thinking": long.trim(),
        "tool_name": "calculate",
        "tool_args": {"expression": "1+1"},
    }));
    assert!(quoting.accepts(&call).unwrap(), "{call}");
    assert!(grammar(&[]).accepts(&answer(long.trim(), lead)).unwrap());
}

/// A model's thought may not begin as Burrow's own steps' thoughts do, so it does not copy
/// Burrow's opening of a match and go on opening the next ones; any other thought is its own.
#[test]
fn a_models_thought_does_not_begin_as_burrows_own_steps() {
    let grammar = step_grammar(
        Protocol::JsonTyped,
        &tools(),
        StepShape {
            allow_final: true,
            ..Default::default()
        },
    )
    .unwrap();
    let call = |thought: &str| {
        crate::agent::protocol::spaced(&serde_json::json!({
            "type": "tool",
            "thinking": thought,
            "tool_name": "calculate",
            "tool_args": {"expression": "1+1"},
        }))
    };
    for burrows in [
        "Then I open the best match to check it against the task.",
        "Then I open the next one.",
        "First I search the workspace for the task.",
    ] {
        assert!(!grammar.accepts(&call(burrows)).unwrap(), "{burrows}");
    }
    for own in [
        "Then I add them up.",
        "The result names the release.",
        "First the sum.",
        "I open the issue it names.",
        "42 is the count.",
    ] {
        assert!(grammar.accepts(&call(own)).unwrap(), "{own}");
    }
    // A thought still starts with a letter or a digit.
    assert!(!grammar.accepts(&call(" Then.")).unwrap());
}
