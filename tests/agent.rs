//! Issue #4: the ReAct loop, driven by a scripted model whose turns are given in each test (and
//! whose requests are counted and read), over small tools built here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow::agent::hooks::{Hook, HookContext, ToolVerdict};
use burrow::agent::protocol::{Action, Protocol, PROTOCOLS};
use burrow::agent::record::RunStatus;
use burrow::agent::{Agent, AgentConfig, AgentEvent, Clock, RunOutcome, RunStore};
use burrow::llm::engine::CancelToken;
use burrow::llm::fake::{FakeModel, FakeTurn};
use burrow::tools::{Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::json;

/// Looks up a word in the test dictionary.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupInput {
    /// The word.
    word: String,
}

/// A tool that answers from a fixed table and counts its calls.
#[derive(Default, Clone)]
struct Lookup {
    calls: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Tool for Lookup {
    const NAME: &'static str = "lookup";
    type Input = LookupInput;
    fn run(&self, input: LookupInput) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(input.word.clone());
        match input.word.as_str() {
            "wallet" => Ok(ToolOutput::new("wallet: see issue #918", ())),
            "long" => Ok(ToolOutput::new(
                (0..2000).map(|i| format!("w{i} ")).collect::<String>(),
                (),
            )),
            other => Err(ToolError::NotFound(format!("no entry for {other}"))),
        }
    }
}

/// Fails as busy a number of times, then works.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FlakyInput {}

#[derive(Clone)]
struct Flaky {
    failures_left: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
}

impl Tool for Flaky {
    const NAME: &'static str = "flaky";
    type Input = FlakyInput;
    fn run(&self, _: FlakyInput) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self
            .failures_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(ToolError::Transient("the database is busy".into()));
        }
        Ok(ToolOutput::new("flaky worked", ()))
    }
}

/// A clock that only records how long the loop asked to wait.
#[derive(Default)]
struct FakeClock(Mutex<Vec<Duration>>);

impl Clock for FakeClock {
    fn sleep(&self, d: Duration) {
        self.0.lock().unwrap().push(d);
    }
}

fn registry(lookup: &Lookup) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    r.register(lookup.clone()).unwrap();
    r
}

/// A tool call, written in each protocol's dialect.
fn call(p: Protocol, tool: &str, args: serde_json::Value) -> String {
    match p {
        Protocol::JsonTyped => {
            json!({"type": "tool", "thinking": "look it up", "tool_name": tool, "tool_args": args})
                .to_string()
        }
        Protocol::JsonAction => {
            json!({"thought": "look it up", "action": {"name": tool, "arguments": args}})
                .to_string()
        }
        Protocol::JsonFinish => {
            json!({"thought": "look it up", "action": tool, "args": args.to_string()}).to_string()
        }
        Protocol::Text => format!("Thought: look it up\nAction: {tool}\nArgs: {args}"),
        Protocol::ToolCalls => format!(
            "<tool_call>\n{}\n</tool_call>",
            json!({"name": tool, "arguments": args})
        ),
    }
}

/// A final answer, in each protocol's dialect.
fn answer(p: Protocol, text: &str) -> String {
    match p {
        Protocol::JsonTyped => json!({"type": "final", "thinking": "done", "final": text}).to_string(),
        Protocol::JsonAction => json!({"thought": "done", "answer": text}).to_string(),
        Protocol::JsonFinish => json!({"thought": "done", "action": "FINISH", "final_answer": text, "task_successful": true}).to_string(),
        Protocol::Text => format!("Thought: done\nFinal Answer: {text}"),
        Protocol::ToolCalls => format!(
            "<tool_call>\n{}\n</tool_call>",
            json!({"name": "final_answer", "arguments": {"answer": text, "status": "completed"}})
        ),
    }
}

fn config(p: Protocol) -> AgentConfig {
    AgentConfig {
        protocol: p,
        max_steps: 6,
        ..Default::default()
    }
}

fn run(agent: &Agent<'_>, task: &str) -> (RunOutcome, Vec<AgentEvent>) {
    let mut events = Vec::new();
    let outcome = agent.run(task, &CancelToken::new(), &mut |e| events.push(e));
    (outcome, events)
}

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
                AgentEvent::Thought { .. } => "thought",
                AgentEvent::Action { .. } => "action",
                AgentEvent::Observation { .. } => "observation",
                AgentEvent::StepFinished { .. } => "done",
                AgentEvent::TodoChanged { .. } => "todo",
                AgentEvent::ContextSummarized { .. } => "summary",
                AgentEvent::Final { .. } => "final",
                AgentEvent::Error { .. } => "error",
            })
            .filter(|k| *k != "token")
            .collect();
        let expected_start: &[&str] = if p == Protocol::ToolCalls {
            &[
                "run",
                "step",
                "action",
                "observation",
                "done",
                "step",
                "done",
                "final",
            ]
        } else {
            &[
                "run",
                "step",
                "thought",
                "action",
                "observation",
                "done",
                "step",
                "thought",
                "done",
                "final",
            ]
        };
        assert_eq!(kinds, expected_start, "{}", p.as_str());
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
fn tool_errors_are_observations_and_the_loop_guard_stops_repeats() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new([
        FakeTurn::text(&call(p, "lookup", json!({"word": "nothing"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "nothing"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&answer(p, "done")),
    ]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            max_steps: 10,
            ..config(p)
        },
    )
    .unwrap();
    let (outcome, _) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded);
    let obs: Vec<&str> = outcome
        .steps
        .iter()
        .map(|s| s.observation.as_deref().unwrap_or(""))
        .collect();
    assert!(obs[0].contains("no entry for nothing"), "{obs:?}");
    assert!(
        obs[1].contains("already called lookup") && obs[1].contains("no entry for nothing"),
        "{obs:?}"
    );
    assert_eq!(obs[2], "wallet: see issue #918");
    // The same result again, still in the prompt, is not shown twice.
    for o in &obs[3..5] {
        assert_eq!(
            *o,
            "The same result as the last time lookup was called with these arguments (above)."
        );
    }
    assert!(
        obs[5].contains("repeating yourself") && obs[5].contains("What it returned is above"),
        "{obs:?}"
    );
    // The failed call ran once, the good one three times (the default limit).
    assert_eq!(lookup.calls.load(Ordering::SeqCst), 4);
}

#[test]
fn transient_failures_are_retried_with_backoff_before_the_model_sees_them() {
    let p = Protocol::JsonAction;
    for (failures, expect_ok, sleeps) in [(2, true, vec![200, 400]), (5, false, vec![200, 400])] {
        let flaky = Flaky {
            failures_left: Arc::new(AtomicUsize::new(failures)),
            calls: Arc::new(AtomicUsize::new(0)),
        };
        let mut tools = ToolRegistry::new();
        tools.register(flaky.clone()).unwrap();
        let model = FakeModel::new([
            FakeTurn::text(&call(p, "flaky", json!({}))),
            FakeTurn::text(&answer(p, "done")),
        ]);
        let clock = Arc::new(FakeClock::default());
        let agent = Agent::new(&model, &tools, config(p))
            .unwrap()
            .with_clock(clock.clone());
        let (outcome, _) = run(&agent, "task");
        let obs = outcome.steps[0].observation.clone().unwrap();
        assert_eq!(obs.contains("flaky worked"), expect_ok, "{obs}");
        assert_eq!(outcome.steps[0].error.is_none(), expect_ok);
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 3);
        let waited: Vec<u128> = clock
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(waited, sleeps);
        // Only one request to the model for the call: the retries were Burrow's.
        assert_eq!(model.requests().len(), 2);
    }
}

#[test]
fn plans_change_in_both_styles_and_gate_the_final_answer() {
    // json-typed: todo_patch rides on the step.
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let add = json!({"type": "tool", "thinking": "plan", "tool_name": "lookup", "tool_args": {"word": "wallet"},
        "todo_patch": {"op": "replace", "reason": "start", "items": [{"id": "1", "title": "Look up wallet"}, {"id": "2", "title": "Answer"}]}});
    let early = json!({"type": "final", "thinking": "done", "final": "early"});
    let finish = json!({"type": "final", "thinking": "done", "final": "See #918.",
        "todo_patch": {"op": "replace", "reason": "all done", "items": [{"id": "1", "title": "Look up wallet", "status": "completed"}, {"id": "2", "title": "Answer", "status": "completed"}]}});
    let model = FakeModel::new([
        FakeTurn::text(&add.to_string()),
        FakeTurn::text(&early.to_string()),
        FakeTurn::text(&finish.to_string()),
    ]);
    let agent = Agent::new(&model, &tools, config(Protocol::JsonTyped)).unwrap();
    let (outcome, events) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded);
    assert_eq!(outcome.final_answer.as_deref(), Some("See #918."));
    assert_eq!(outcome.steps[0].todos.len(), 2);
    let refused = outcome.steps[1].observation.as_deref().unwrap();
    assert!(
        refused.contains("refused") && refused.contains("1 (pending: Look up wallet)"),
        "{refused}"
    );
    assert!(
        model.requests()[1].prompt.contains("[ ] 1: Look up wallet"),
        "the plan is in the prompt"
    );
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TodoChanged { .. }))
            .count()
            >= 2
    );

    // json-action: the todo_write tool, merged by id.
    let p = Protocol::JsonAction;
    let model = FakeModel::new([
        FakeTurn::text(&call(
            p,
            "todo_write",
            json!({"todos": [{"id": "a", "content": "Search"}], "merge": false}),
        )),
        FakeTurn::text(&call(
            p,
            "todo_write",
            json!({"todos": [{"id": "a", "content": "", "status": "completed"}, {"id": "b", "content": "Cite"}], "merge": true}),
        )),
        FakeTurn::text(&call(
            p,
            "todo_write",
            json!({"todos": [{"id": "b", "content": "Cite", "status": "cancelled"}], "merge": true}),
        )),
        FakeTurn::text(&answer(p, "done")),
    ]);
    let agent = Agent::new(&model, &tools, config(p)).unwrap();
    let (outcome, _) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let plan = &outcome.steps[1].todos;
    assert_eq!(plan.len(), 2);
    assert_eq!(plan[0].title, "Search");
    // Gating off: a final answer with open items is taken.
    let model = FakeModel::new([
        FakeTurn::text(&call(
            p,
            "todo_write",
            json!({"todos": [{"id": "a", "content": "Search"}]}),
        )),
        FakeTurn::text(&answer(p, "done")),
    ]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            require_plan_done: false,
            ..config(p)
        },
    )
    .unwrap();
    assert_eq!(run(&agent, "task").0.status, RunStatus::Succeeded);
}

#[test]
fn bad_plan_changes_are_observations() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::Text;
    let model = FakeModel::new([
        FakeTurn::text(&call(
            p,
            "todo_write",
            json!({"todos": [{"id": "a", "content": "x"}, {"id": "a", "content": "y"}]}),
        )),
        FakeTurn::text(&answer(p, "done")),
    ]);
    let agent = Agent::new(&model, &tools, config(p)).unwrap();
    let (outcome, _) = run(&agent, "task");
    let first = &outcome.steps[0];
    assert!(
        first
            .observation
            .as_deref()
            .unwrap()
            .contains("two plan items have the id \"a\""),
        "{first:?}"
    );
    assert!(first.todos.is_empty());
}

#[test]
fn the_toolbelt_starts_with_meta_tools_and_adds_on_request() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new([
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&call(p, "toolbelt_list_tools", json!({}))),
        FakeTurn::text(&call(p, "toolbelt_add_tool", json!({"name": "lookup"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&call(p, "toolbelt_remove_tool", json!({"name": "lookup"}))),
        FakeTurn::text(&answer(p, "done")),
    ]);
    // A threshold of 0: one tool is already "too many".
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            toolbelt_threshold: 0,
            grammar: false,
            max_steps: 8,
            ..config(p)
        },
    )
    .unwrap();
    let (outcome, _) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let obs: Vec<&str> = outcome
        .steps
        .iter()
        .map(|s| s.observation.as_deref().unwrap_or(""))
        .collect();
    assert!(
        obs[0].contains("add it first with toolbelt_add_tool"),
        "{obs:?}"
    );
    assert!(obs[1].contains("- lookup: Looks up a word"), "{obs:?}");
    assert_eq!(obs[3], "wallet: see issue #918");
    let requests = model.requests();
    // The first prompt lists only the meta-tools; after adding, lookup is in it.
    assert!(
        !requests[0].prompt.contains("- lookup:"),
        "{}",
        requests[0].prompt
    );
    assert!(requests[0].prompt.contains("- toolbelt_add_tool:"));
    // The system message never changes (the cache keeps it): the added tool is described in
    // the observation that added it.
    assert!(requests[3].prompt.starts_with(
        requests[0]
            .prompt
            .trim_end_matches("<|im_start|>assistant\n")
    ));
    assert!(
        obs[2].contains("call it from the next step: lookup(word: string): Looks up a word"),
        "{obs:?}"
    );
    assert!(!requests[5]
        .prompt
        .split("Observation")
        .next()
        .unwrap()
        .contains("- lookup:"));
}

#[test]
fn hooks_allow_deny_rewrite_and_stop() {
    struct Guard;
    impl Hook for Guard {
        fn before_tool(&self, _: &HookContext<'_>, action: &Action) -> ToolVerdict {
            match action.args.get("word").and_then(|w| w.as_str()) {
                Some("secret") => ToolVerdict::Deny("looking up secrets is not allowed".into()),
                Some("walet") => {
                    let mut args = action.args.clone();
                    args.insert("word".into(), json!("wallet"));
                    ToolVerdict::Rewrite(args)
                }
                Some("stop") => ToolVerdict::Stop("asked to stop".into()),
                _ => ToolVerdict::Allow,
            }
        }
    }
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new([
        FakeTurn::text(&call(p, "lookup", json!({"word": "secret"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "walet"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "stop"}))),
    ]);
    let agent = Agent::new(&model, &tools, config(p))
        .unwrap()
        .with_hook(Arc::new(Guard));
    let (outcome, _) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert!(outcome.error.as_deref().unwrap().contains("asked to stop"));
    assert_eq!(
        outcome.steps[0].observation.as_deref(),
        Some("looking up secrets is not allowed")
    );
    assert_eq!(
        outcome.steps[1].observation.as_deref(),
        Some("wallet: see issue #918")
    );
    assert_eq!(
        outcome.steps[1].action.as_ref().unwrap().args["word"],
        "wallet"
    );
    assert_eq!(lookup.seen.lock().unwrap().clone(), vec!["wallet"]);
}

#[test]
fn cancellation_ends_the_run_and_keeps_its_steps() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new([
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&answer(p, "never read")),
    ]);
    let agent = Agent::new(&model, &tools, config(p)).unwrap();
    let cancel = CancelToken::new();
    let c = cancel.clone();
    let outcome = agent.run("task", &cancel, &mut |e| {
        if matches!(e, AgentEvent::Observation { .. }) {
            c.cancel();
        }
    });
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(model.requests().len(), 1);
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

#[test]
fn max_steps_ends_the_run() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new(
        (0..3).map(|i| FakeTurn::text(&call(p, "lookup", json!({"word": format!("w{i}")})))),
    );
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            max_steps: 3,
            ..config(p)
        },
    )
    .unwrap();
    let (outcome, _) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::MaxSteps);
    assert_eq!(outcome.steps.len(), 3);
    assert_eq!(model.remaining_turns(), 0);
}

/// Two lookups (a long word list, then the wallet entry), the given turns, then the answer.
fn lookups_then(p: Protocol, middle: &[&str]) -> Vec<FakeTurn> {
    let mut turns = vec![
        FakeTurn::text(&call(p, "lookup", json!({"word": "long"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
    ];
    turns.extend(middle.iter().map(|t| FakeTurn::text(t)));
    turns.push(FakeTurn::text(&answer(p, "See #918.")));
    turns
}

/// The sizes of the three prompts of `lookups_then` with room to spare, and that run.
fn prompt_sizes(tools: &ToolRegistry, cfg: &AgentConfig) -> (Vec<usize>, RunOutcome) {
    let roomy = FakeModel::new(lookups_then(cfg.protocol, &[]));
    let (outcome, _) = run(&Agent::new(&roomy, tools, cfg.clone()).unwrap(), "task");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let sizes = roomy
        .requests()
        .iter()
        .map(|r| burrow::llm::tokens::estimate_tokens(&r.prompt).unwrap())
        .collect();
    (sizes, outcome)
}

/// A context window whose summarizing threshold (`summarize_at`) the third prompt of
/// `lookups_then` passes and the second does not.
fn window_passed_at_third_prompt(tools: &ToolRegistry, cfg: &AgentConfig) -> usize {
    let (sizes, _) = prompt_sizes(tools, cfg);
    ((sizes[1] + sizes[2]) as f64 / 2.0 / cfg.summarize_at) as usize
}

#[test]
fn long_observations_are_capped_and_old_steps_summarized() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    // Observations capped below what the small window below would allow (half its size in
    // characters), so both runs read the same ones.
    let cfg = AgentConfig {
        max_observation_chars: 120,
        keep_recent_messages: 2,
        ..config(p)
    };
    // First measure the prompts with room to spare, then give the model a window that the
    // third prompt (two steps in) passes 70% of and the second does not.
    let summary = "Looked up long (a word list) and wallet: issue #918.";
    let (sizes, outcome) = prompt_sizes(&tools, &cfg);
    let first = outcome.steps[0].observation.as_deref().unwrap();
    assert!(
        first.ends_with("[cut: 120 of 10890 characters shown]"),
        "{}",
        &first[first.len() - 60..]
    );
    let window = ((sizes[1] + sizes[2]) as f64 / 2.0 / 0.7) as usize;

    let model = FakeModel::new(lookups_then(p, &[summary])).with_context_length(window);
    let agent = Agent::new(&model, &tools, cfg).unwrap();
    let (outcome, events) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let summarized = events.iter().find_map(|e| match e {
        AgentEvent::ContextSummarized {
            summary,
            messages_folded,
            ..
        } => Some((summary.clone(), *messages_folded)),
        _ => None,
    });
    let (summary, folded) = summarized.expect("the history was summarized");
    assert_eq!(
        summary,
        "Looked up long (a word list) and wallet: issue #918."
    );
    assert_eq!(folded, 2);
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests[2].prompt.contains("Newer steps to add to it"),
        "{}",
        requests[2].prompt
    );
    assert!(
        requests[2].prompt.contains("w10 w11"),
        "the folded step is what is summarized"
    );
    assert!(!requests[2].has_grammar);
    let last = &requests[3].prompt;
    assert!(
        last.contains("Progress so far") && last.contains("issue #918."),
        "{last}"
    );
    assert!(!last.contains("w10 w11"), "the folded observation is gone");
    assert!(
        last.contains("wallet: see issue #918"),
        "the recent step stays verbatim"
    );
}

/// A result a summary folded away is shown again in full when the call is repeated.
#[test]
fn a_repeated_result_is_shown_again_once_summarized_away() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let cfg = AgentConfig {
        max_observation_chars: 120,
        keep_recent_messages: 2,
        ..config(p)
    };
    let window = window_passed_at_third_prompt(&tools, &cfg);
    // The long result again brings the prompt past the threshold: a second summary.
    let again = call(p, "lookup", json!({"word": "long"}));
    let middle = [
        "Looked up long and wallet.",
        &again,
        "Looked up long twice.",
    ];
    let model = FakeModel::new(lookups_then(p, &middle)).with_context_length(window);
    let (outcome, _) = run(&Agent::new(&model, &tools, cfg).unwrap(), "task");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let obs: Vec<&str> = outcome
        .steps
        .iter()
        .map(|s| s.observation.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(obs.len(), 4, "{obs:?}");
    assert!(obs[2].starts_with("w0 w1 w2"), "{obs:?}");
    assert_eq!(obs[2], obs[0]);
}

#[test]
fn runs_are_kept_step_by_step_and_an_interrupted_one_continues() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workspace.db");
    let ws = burrow::workspace::Workspace::open_at(&db).unwrap();
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;

    // A run killed after its first step: simulated by a hook that stops it, then the row set
    // back to running as a dead process leaves it.
    struct Crash;
    impl Hook for Crash {
        fn on_step(
            &self,
            _: &HookContext<'_>,
            _: &burrow::agent::record::StepRecord,
        ) -> burrow::agent::hooks::HookVerdict {
            burrow::agent::hooks::HookVerdict::Stop("crash".into())
        }
    }
    let model = FakeModel::new([FakeTurn::text(&call(
        p,
        "lookup",
        json!({"word": "wallet"}),
    ))]);
    let agent = Agent::new(&model, &tools, config(p))
        .unwrap()
        .with_store(&ws)
        .with_hook(Arc::new(Crash));
    let (outcome, _) = run(&agent, "find wallets");
    let id = outcome.run_id.unwrap();
    assert_eq!(
        ws.run(id).unwrap().steps.len(),
        1,
        "the step was written as it completed"
    );
    let sql = rusqlite::Connection::open(&db).unwrap();
    sql.execute(
        "UPDATE runs SET status = 'running', ended_at = NULL, started_at = started_at - 60 WHERE id = ?1",
        [id],
    )
    .unwrap();
    assert_eq!(ws.interrupt_orphaned_runs().unwrap(), vec![id]);

    let model = FakeModel::new([FakeTurn::text(&answer(p, "See #918."))]);
    let agent = Agent::new(&model, &tools, config(p))
        .unwrap()
        .with_store(&ws);
    let outcome = agent.resume(id, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded);
    assert_eq!(outcome.steps.len(), 2);
    let prompt = &model.requests()[0].prompt;
    assert!(
        prompt.contains("find wallets") && prompt.contains("wallet: see issue #918"),
        "{prompt}"
    );
    let kept = ws.run(id).unwrap();
    assert_eq!(kept.status, RunStatus::Succeeded);
    assert_eq!(kept.steps.len(), 2);
    assert_eq!(kept.final_answer.as_deref(), Some("See #918."));
}

#[test]
fn prompts_grow_by_appending_so_the_cache_is_reused() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    for p in PROTOCOLS {
        let model = FakeModel::new([
            FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
            FakeTurn::text(&call(p, "lookup", json!({"word": "nothing"}))),
            FakeTurn::text(&answer(p, "done")),
        ]);
        let agent = Agent::new(&model, &tools, config(p)).unwrap();
        let (outcome, _) = run(&agent, "task");
        assert_eq!(outcome.status, RunStatus::Succeeded);
        let r = model.requests();
        for w in r.windows(2) {
            // Everything up to the new assistant turn is the previous prompt, unchanged; only
            // the generation prompt at its very end is replaced.
            let prev = w[0].prompt.trim_end_matches("<|im_start|>assistant\n");
            assert!(
                w[1].prompt.starts_with(prev),
                "{}:\n{}\n---\n{}",
                p.as_str(),
                w[0].prompt,
                w[1].prompt
            );
        }
        assert!(outcome.steps[1].cached_tokens > 0);
    }
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
        // Burrow's own list of tools, with their arguments, only where the template has none.
        assert_eq!(
            r[0].prompt.contains("- lookup: Looks up a word"),
            !native,
            "{}",
            r[0].prompt
        );
        assert_eq!(
            r[0].prompt.contains("word (string, required)"),
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

/// Issue 4: the agent benchmark accounts for every step: token counts and reuse from the
/// records, and a wall time split into model, tools, setup and the loop that adds up.
#[test]
fn the_agent_benchmark_accounts_for_each_step() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new([
        FakeTurn::text(&answer(p, "Too soon.")),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&answer(p, "See #918.")),
    ]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            max_steps: 3,
            min_steps: 3,
            ..config(p)
        },
    )
    .unwrap();
    let report = burrow::agent::bench::bench_agent(&agent, "What is known about wallets?");
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(report.steps.len(), 3);
    assert_eq!(report.protocol, "json-action");
    assert_eq!(report.steps[1].tool.as_deref(), Some("lookup"));
    assert!(
        report.steps[0].error.is_some(),
        "the early answer was refused"
    );
    for s in &report.steps {
        assert!(s.prompt_tokens > 0 && s.cached_tokens <= s.prompt_tokens);
        assert!((s.reuse - s.cached_tokens as f64 / s.prompt_tokens as f64).abs() < 1e-12);
    }
    assert!(report.steps[2].cached_tokens > 0);
    assert!(report.min_reuse_after_first().unwrap() > 0.0);
    // The fake model's cache keeps every prompt and output: each step finds all of the
    // previous one (less its end-of-turn token at most).
    let carried = report.min_carried_over().unwrap();
    let lowest = report
        .steps
        .windows(2)
        .map(|w| w[1].cached_tokens as f64 / (w[0].prompt_tokens + w[0].generated_tokens) as f64)
        .fold(f64::INFINITY, f64::min);
    assert!(
        (carried - lowest.min(1.0)).abs() < 1e-12,
        "{carried} {lowest}"
    );
    assert!(carried > 0.9, "{report:?}");
    assert!(!report.steps.iter().any(|s| s.after_summary));
    assert!(report.ttft_last_over_second().is_some());
    let parts = report.model_ms + report.tool_ms + report.setup_ms + report.loop_ms;
    assert!((parts - report.wall_ms).abs() < 1e-6, "{report:?}");
    let text = report.to_string();
    assert!(text.contains("KV reuse from step 2"), "{text}");
    assert!(
        text.contains("of the previous step's prompt and output"),
        "{text}"
    );
    assert!(text.contains("everything but model and tools"), "{text}");
}

/// Issue 4: a step that runs into the end of the context window is not taken: the older steps
/// are folded into a summary (all but the last, as fewer steps than `keep_recent_messages`
/// already fill the window) and the step is written again, announced by a new `StepStarted`.
#[test]
fn a_step_that_fills_the_window_folds_the_history_and_is_written_again() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let cfg = AgentConfig {
        // Only the reactive path: no summary before a step.
        summarize_at: 10.0,
        max_observation_chars: 120,
        ..config(p)
    };
    let long_answer = answer(p, &(0..400).map(|i| format!("w{i} ")).collect::<String>());
    // The third prompt's size, measured with room to spare; then a window it fits in with
    // room for the short answer but not the long one.
    let (sizes, _) = prompt_sizes(&tools, &cfg);
    let model = FakeModel::new(lookups_then(
        p,
        &[&long_answer, "Looked up long and wallet: issue #918."],
    ))
    .with_context_length(sizes[2] + 60);
    let agent = Agent::new(&model, &tools, cfg).unwrap();
    let (outcome, events) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    assert_eq!(outcome.final_answer.as_deref(), Some("See #918."));
    assert_eq!(outcome.steps.len(), 3);
    assert_eq!(
        model.requests().len(),
        5,
        "three steps, a summary, the step again"
    );
    let folded = events.iter().find_map(|e| match e {
        AgentEvent::ContextSummarized {
            messages_folded, ..
        } => Some(*messages_folded),
        _ => None,
    });
    assert_eq!(folded, Some(2), "the first step is folded, the second kept");
    let starts = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::StepStarted { index: 2 }))
        .count();
    assert_eq!(starts, 2);
    let last = &model.requests()[4].prompt;
    assert!(last.contains("Progress so far"), "{last}");
    assert!(last.contains("wallet: see issue #918"), "{last}");
}

/// Issue 4: where it fits, the summary is asked for after the run's own prompt, which the KV
/// cache holds (only the request is new), and the steps kept verbatim stay few enough that the
/// next steps are not summarized again at once.
#[test]
fn summaries_are_asked_for_after_the_cached_prompt() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let cfg = AgentConfig {
        max_observation_chars: 120,
        summarize_at: 0.3,
        ..config(p)
    };
    let window = window_passed_at_third_prompt(&tools, &cfg);
    let model = FakeModel::new(lookups_then(p, &["Looked up long and wallet: issue #918."]))
        .with_context_length(window);
    let (outcome, events) = run(&Agent::new(&model, &tools, cfg).unwrap(), "task");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::ContextSummarized { .. })));
    let r = model.requests();
    assert_eq!(r.len(), 4);
    // The summary request extends the third step's prompt, which extends the second's.
    let second = r[1].prompt.trim_end_matches("<|im_start|>assistant\n");
    assert!(r[2].prompt.starts_with(second), "{}", r[2].prompt);
    assert!(
        r[2].prompt.contains("Pause the task here"),
        "{}",
        r[2].prompt
    );
    assert!(r[2].prompt.contains("wallet: see issue #918"));
    assert!(!r[2].has_grammar);
    assert!(r[3].prompt.contains("Progress so far"), "{}", r[3].prompt);
}

/// Issue 5 (a run that errors): a window too small for even the first prompt ends the run as
/// an error that says what it needs and what to change, and the model is not asked again.
#[test]
fn a_context_too_small_for_the_first_prompt_says_to_load_a_larger_one() {
    let p = Protocol::JsonTyped;
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let model = FakeModel::new([FakeTurn::text(&answer(p, "never"))]).with_context_length(64);
    let agent = Agent::new(&model, &tools, config(p)).unwrap();
    let (outcome, _) = run(&agent, "Where is the wallet loaded?");
    assert_eq!(outcome.status, RunStatus::Error);
    let error = outcome.error.expect("an error message");
    assert!(error.contains("holds 64"), "{error}");
    assert!(error.contains("larger context size"), "{error}");
    assert_eq!(model.remaining_turns(), 1, "no step was generated");
}
