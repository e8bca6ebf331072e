//! What the model writes each step: a call and an answer in every dialect, steps that cannot
//! be read or were cut off, native tool calls, and the final answer held back by `min_steps`.

use burrow::agent::protocol::{Protocol, PROTOCOLS};
use burrow::agent::record::RunStatus;
use burrow::agent::{Agent, AgentConfig, AgentEvent};
use burrow::llm::fake::{FakeModel, FakeTurn};
use serde_json::json;

use crate::support::{answer, call, config, registry, run, Lookup};

#[test]
fn every_protocol_calls_a_tool_and_answers() {
    for p in PROTOCOLS {
        let lookup = Lookup::default();
        let tools = registry(&lookup);
        let model = FakeModel::new([
            FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
            FakeTurn::text(&answer(p, "See #918.")),
        ]);
        let agent = Agent::new(&model, &tools, config(p)).unwrap();
        let (outcome, events) = run(&agent, "What is known about wallets?");
        assert_eq!(
            outcome.status,
            RunStatus::Succeeded,
            "{}: {outcome:?}",
            p.as_str()
        );
        assert_eq!(outcome.final_answer.as_deref(), Some("See #918."));
        assert_eq!(model.requests().len(), 2, "{}", p.as_str());
        assert_eq!(lookup.seen.lock().unwrap().clone(), vec!["wallet"]);
        let step = &outcome.steps[0];
        assert_eq!(step.action.as_ref().unwrap().tool, "lookup");
        assert_eq!(step.observation.as_deref(), Some("wallet: see issue #918"));
        assert_eq!(step.error, None);
        // Every request was decoded under a grammar, and the second saw the observation.
        let requests = model.requests();
        assert!(requests.iter().all(|r| r.has_grammar), "{}", p.as_str());
        assert!(
            requests[1].prompt.contains("wallet: see issue #918"),
            "{}",
            p.as_str()
        );
        // Text stops before an imagined observation.
        assert_eq!(
            requests[0].stop.iter().any(|s| s.contains("Observation:")),
            p == Protocol::Text
        );
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                AgentEvent::RunStarted { .. } => "run",
                AgentEvent::StepStarted { .. } => "step",
                AgentEvent::Token { .. } => "token",
                AgentEvent::ThoughtDelta { .. } => "token",
                AgentEvent::StepFinished { .. } => "done",
                AgentEvent::TodoChanged { .. } => "todo",
                AgentEvent::ContextSummarized { .. } => "summary",
                AgentEvent::Final { .. } => "final",
                AgentEvent::Error { .. } => "error",
            })
            .filter(|k| *k != "token")
            .collect();
        // Deltas while a step is written, then its record: one account of each step.
        assert_eq!(
            kinds,
            ["run", "step", "done", "step", "done", "final"],
            "{}",
            p.as_str()
        );
        let records: Vec<&burrow::agent::record::StepRecord> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::StepFinished { step } => Some(&**step),
                _ => None,
            })
            .collect();
        assert_eq!(records[0].action.as_ref().unwrap().tool, "lookup");
        assert_eq!(
            records[0].observation.as_deref(),
            Some("wallet: see issue #918")
        );
        assert_eq!(records[1].final_answer.as_deref(), Some("See #918."));
        assert_eq!(records, outcome.steps.iter().collect::<Vec<_>>());
        assert!(events.iter().any(|e| matches!(e, AgentEvent::Token { .. })));
        // The thought streamed as it was written adds up to the thought read from the step.
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ThoughtDelta { index: 0, text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, outcome.steps[0].thought, "{}", p.as_str());
    }
}

#[test]
fn an_unreadable_step_goes_back_to_the_model_with_the_format() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let model = FakeModel::new([
        FakeTurn::text("I think the answer is in the wallet code."),
        FakeTurn::text(&answer(Protocol::JsonAction, "ok")),
    ]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            grammar: false,
            ..config(Protocol::JsonAction)
        },
    )
    .unwrap();
    let (outcome, _) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded);
    let first = &outcome.steps[0];
    assert!(
        first.error.as_deref().unwrap().contains("no JSON object"),
        "{first:?}"
    );
    assert!(!model.requests()[0].has_grammar);
    let second_prompt = &model.requests()[1].prompt;
    assert!(
        second_prompt.contains("\"action\": {\"name\""),
        "the format is shown: {second_prompt}"
    );
}

#[test]
fn a_step_cut_off_by_the_token_limit_is_not_taken() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    // Each word is one token for the scripted model: the answer stops after four.
    let model = FakeModel::new([
        FakeTurn::text(&answer(p, "a long answer that goes on and on")),
        FakeTurn::text(&answer(p, "short")),
    ]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            max_step_tokens: 4,
            ..config(p)
        },
    )
    .unwrap();
    let (outcome, _) = run(&agent, "task");
    assert_eq!(outcome.final_answer.as_deref(), Some("short"));
    assert!(outcome.steps[0]
        .error
        .as_deref()
        .unwrap()
        .contains("cut off after 4 tokens"));
    assert_eq!(model.requests()[0].max_tokens, Some(4));
}

/// Issue 4: `tool-calls` hands the tools to a chat template that renders them (Qwen2.5's);
/// with one that ignores them (ChatML, like SmolLM2's) the prompt lists the tools and the call
/// format itself, and the steps are replayed as written.
#[test]
fn tool_calls_go_through_the_template_or_are_listed_in_the_prompt() {
    let qwen = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/chat-templates/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
    )
    .expect("the shared chat templates are beside the repository");
    for native in [false, true] {
        let lookup = Lookup::default();
        let tools = registry(&lookup);
        let mut model = FakeModel::new([
            FakeTurn::text(&call(
                Protocol::ToolCalls,
                "lookup",
                json!({"word": "wallet"}),
            )),
            FakeTurn::text(&answer(Protocol::ToolCalls, "See #918.")),
        ]);
        if native {
            model = model.with_template(&qwen);
        }
        let agent = Agent::new(&model, &tools, config(Protocol::ToolCalls)).unwrap();
        let (outcome, _) = run(&agent, "What is known about wallets?");
        assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
        let r = model.requests();
        assert_eq!(r.len(), 2);
        // Burrow's own list of tools, a line each with their arguments, only where the
        // template has none.
        assert_eq!(
            r[0].prompt
                .contains("- lookup(word: string): Looks up a word"),
            !native,
            "{}",
            r[0].prompt
        );
        // Either way the model reads the tool's argument and the final_answer tool.
        assert!(r[0].prompt.contains("word"), "{}", r[0].prompt);
        assert!(r[0].prompt.contains("final_answer"), "{}", r[0].prompt);
        // The result comes back inside a tool response either way: Qwen's template wraps the
        // tool message; Burrow's own prompt wraps it in a user message.
        assert!(
            r[1].prompt
                .contains("<tool_response>\nwallet: see issue #918\n</tool_response>"),
            "{}",
            r[1].prompt
        );
        if !native {
            assert!(
                r[1].prompt
                    .contains("<|im_start|>assistant\n<tool_call>\n{"),
                "{}",
                r[1].prompt
            );
        }
        // Each prompt extends the previous one, so the KV cache is reused.
        let prev = r[0].prompt.trim_end_matches("<|im_start|>assistant\n");
        assert!(r[1].prompt.starts_with(prev), "native: {native}");
    }
}

/// Issue 4: with `min_steps`, the final form is left out of the grammar until then, and a final
/// answer written anyway (without grammar) is refused with an observation.
#[test]
fn min_steps_keeps_the_final_answer_back() {
    for p in PROTOCOLS {
        let lookup = Lookup::default();
        let tools = registry(&lookup);
        let model = FakeModel::new([
            FakeTurn::text(&answer(p, "Too soon.")),
            FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
            FakeTurn::text(&answer(p, "See #918.")),
        ]);
        let agent = Agent::new(
            &model,
            &tools,
            AgentConfig {
                min_steps: 3,
                ..config(p)
            },
        )
        .unwrap();
        let (outcome, _) = run(&agent, "What is known about wallets?");
        assert_eq!(outcome.status, RunStatus::Succeeded, "{}", p.as_str());
        assert_eq!(outcome.final_answer.as_deref(), Some("See #918."));
        let first = &outcome.steps[0];
        assert_eq!(first.final_answer, None);
        assert!(
            first
                .observation
                .as_deref()
                .unwrap()
                .contains("step 1 of at least 3"),
            "{first:?}"
        );
        let grammars: Vec<String> = model
            .requests()
            .iter()
            .map(|r| r.grammar.clone().unwrap())
            .collect();
        let final_word = match p {
            Protocol::JsonTyped => "\"final\"",
            Protocol::JsonAction => "\"answer\"",
            Protocol::JsonFinish => "FINISH",
            Protocol::Text => "Final Answer:",
            Protocol::ToolCalls => "final_answer",
        };
        assert!(
            !grammars[0].contains(final_word),
            "{}: {}",
            p.as_str(),
            grammars[0]
        );
        assert!(!grammars[1].contains(final_word), "{}", p.as_str());
        assert!(
            grammars[2].contains(final_word),
            "{}: {}",
            p.as_str(),
            grammars[2]
        );
    }
}
