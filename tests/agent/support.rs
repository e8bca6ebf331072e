//! The tools, clock and helpers the tests of every area share: steps written in each
//! protocol's dialect, a scripted run, and prompt sizes measured with room to spare.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow::agent::protocol::Protocol;
use burrow::agent::record::RunStatus;
use burrow::agent::{Agent, AgentConfig, AgentEvent, Clock, RunOutcome};
use burrow::llm::engine::CancelToken;
use burrow::llm::fake::{FakeModel, FakeTurn};
use burrow::tools::{Locator, Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::json;

/// Looks up a word in the test dictionary.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct LookupInput {
    /// The word.
    word: String,
}

/// A tool that answers from a fixed table and counts its calls.
#[derive(Default, Clone)]
pub struct Lookup {
    pub calls: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Tool for Lookup {
    const NAME: &'static str = "lookup";
    type Input = LookupInput;
    fn run(&self, input: LookupInput) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(input.word.clone());
        match input.word.as_str() {
            "wallet" => {
                Ok(
                    ToolOutput::new("wallet: see issue #918", ()).with_items([Locator::Issue {
                        number: 918,
                        repo: Some("acme/app".into()),
                    }]),
                )
            }
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
pub struct FlakyInput {}

#[derive(Clone)]
pub struct Flaky {
    pub failures_left: Arc<AtomicUsize>,
    pub calls: Arc<AtomicUsize>,
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
pub struct FakeClock(pub Mutex<Vec<Duration>>);

impl Clock for FakeClock {
    fn sleep(&self, d: Duration) {
        self.0.lock().unwrap().push(d);
    }
}

pub fn registry(lookup: &Lookup) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    r.register(lookup.clone()).unwrap();
    r
}

/// A tool call, written in each protocol's dialect.
pub fn call(p: Protocol, tool: &str, args: serde_json::Value) -> String {
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
pub fn answer(p: Protocol, text: &str) -> String {
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

pub fn config(p: Protocol) -> AgentConfig {
    AgentConfig {
        protocol: p,
        max_steps: 6,
        ..Default::default()
    }
}

pub fn run(agent: &Agent<'_>, task: &str) -> (RunOutcome, Vec<AgentEvent>) {
    let mut events = Vec::new();
    let outcome = agent.run(task, &CancelToken::new(), &mut |e| events.push(e));
    (outcome, events)
}

/// Two lookups (a long word list, then the wallet entry), the given turns, then the answer.
pub fn lookups_then(p: Protocol, middle: &[&str]) -> Vec<FakeTurn> {
    let mut turns = vec![
        FakeTurn::text(&call(p, "lookup", json!({"word": "long"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
    ];
    turns.extend(middle.iter().map(|t| FakeTurn::text(t)));
    turns.push(FakeTurn::text(&answer(p, "See #918.")));
    turns
}

/// The sizes of the three prompts of `lookups_then` with room to spare, and that run.
pub fn prompt_sizes(tools: &ToolRegistry, cfg: &AgentConfig) -> (Vec<usize>, RunOutcome) {
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
pub fn window_passed_at_third_prompt(tools: &ToolRegistry, cfg: &AgentConfig) -> usize {
    let (sizes, _) = prompt_sizes(tools, cfg);
    ((sizes[1] + sizes[2]) as f64 / 2.0 / cfg.summarize_at) as usize
}

/// Search everything by words.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct SearchInput {
    /// Words to look for.
    query: String,
    /// Only these kinds.
    #[serde(default)]
    #[allow(dead_code)]
    kinds: Option<Vec<String>>,
    /// How many results.
    #[serde(default)]
    #[allow(dead_code)]
    limit: Option<usize>,
}

/// A search over a fixed workspace of one issue and one file, recording its queries: the
/// `search` Burrow makes first.
#[derive(Default, Clone)]
pub struct Search(pub Arc<Mutex<Vec<String>>>);

impl Tool for Search {
    const NAME: &'static str = "search";
    type Input = SearchInput;
    fn run(&self, input: SearchInput) -> Result<ToolOutput, ToolError> {
        self.0.lock().unwrap().push(input.query);
        Ok(ToolOutput::new(
            "1. [issue] #918 Wallet crashes on close (repo acme/app)\n2. [code] acme/app src/wallet.rs:12",
            (),
        )
        .with_items([
            Locator::issue_or_pr("acme/app", 918, false),
            Locator::file("acme/app", "src/wallet.rs", Some(12)),
        ]))
    }
}
