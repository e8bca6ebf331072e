//! How runs end (cancelled, out of steps), are kept step by step and resumed, and are measured
//! by the agent benchmark.

use std::sync::Arc;

use burrow::agent::hooks::{Hook, HookContext};
use burrow::agent::protocol::Protocol;
use burrow::agent::record::RunStatus;
use burrow::agent::{Agent, AgentConfig, AgentEvent, RunStore};
use burrow::llm::engine::CancelToken;
use burrow::llm::fake::{FakeModel, FakeTurn};
use serde_json::json;

use crate::support::{answer, call, config, registry, run, Lookup};

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
        if matches!(e, AgentEvent::StepFinished { .. }) {
            c.cancel();
        }
    });
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(model.requests().len(), 1);
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
    as_if_its_process_died(&ws, &db, id);

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
    assert!(
        text.contains("KV reuse from the second model step"),
        "{text}"
    );
    assert!(
        text.contains("of the previous step's prompt and output"),
        "{text}"
    );
    assert!(text.contains("everything but model and tools"), "{text}");
    // Issue 22: a new run's first token beside its second step's, each from its step's start.
    assert!(report.steps.iter().all(|s| s.first_token_ms.is_some()));
    assert!(report.first_token_first_over_second().is_some());
    assert!(
        text.contains("a new run's first model step / its second"),
        "{text}"
    );
}

/// Stop ends a run while the model evaluates its prompt, not once the first token comes: the
/// run's cancel reached the generation only from the token callback, so a stop pressed 0.2 s
/// into a 4 s prompt evaluation ended the run after 4 s (found in review).
#[test]
fn stop_during_the_prompts_evaluation_ends_the_run_then() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new([FakeTurn::text(&answer(p, "never read"))])
        .with_prefill(std::time::Duration::from_secs(4));
    let agent = Agent::new(&model, &tools, config(p)).unwrap();
    let cancel = CancelToken::new();
    let c = cancel.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        c.cancel();
    });
    let started = std::time::Instant::now();
    let outcome = agent.run("task", &cancel, &mut |_| {});
    let took = started.elapsed();
    stopper.join().unwrap();
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert!(
        took < std::time::Duration::from_secs(2),
        "ended after {took:?}"
    );
}

/// A resumed run keeps the tools its toolbelt added before it stopped: it started again from
/// the first toolbelt, so the tool was gone, and adding it again was out of the grammar, since
/// the same call had been made (found in review).
#[test]
fn a_resumed_run_keeps_the_tools_its_toolbelt_added() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workspace.db");
    let ws = burrow::workspace::Workspace::open_at(&db).unwrap();
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    // No share of the context for tools: the run starts with the meta-tools alone.
    let belt = || AgentConfig {
        toolbelt_share: 0.0,
        max_steps: 6,
        ..config(p)
    };
    let first = call(p, "toolbelt_add_tool", json!({"name": "lookup"}));
    let outcome = died_after_its_first_step(&ws, &db, &tools, belt(), "find wallets", &first);
    let id = outcome.run_id.unwrap();

    let model = FakeModel::new([
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&answer(p, "See #918.")),
    ]);
    let agent = Agent::new(&model, &tools, belt()).unwrap().with_store(&ws);
    let outcome = agent.resume(id, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    assert_eq!(
        outcome.steps[1].observation.as_deref(),
        Some("wallet: see issue #918"),
        "{outcome:?}"
    );
}

/// A hook that stops a run after its first step: with `as_if_its_process_died`, a run killed
/// there.
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

/// A run of `task` whose model's first step is `first` and whose process dies after that
/// step: kept as `burrow ask` killed there leaves it, interrupted. What it did before.
fn died_after_its_first_step(
    ws: &burrow::workspace::Workspace,
    db: &std::path::Path,
    tools: &burrow::tools::ToolRegistry,
    cfg: AgentConfig,
    task: &str,
    first: &str,
) -> burrow::agent::RunOutcome {
    let model = FakeModel::new([FakeTurn::text(first)]);
    let agent = Agent::new(&model, tools, cfg)
        .unwrap()
        .with_store(ws)
        .with_hook(Arc::new(Crash));
    let (outcome, _) = run(&agent, task);
    as_if_its_process_died(ws, db, outcome.run_id.unwrap());
    outcome
}

/// Sets run `id` back to running, as a process that died leaves it, and has the workspace mark
/// it interrupted.
fn as_if_its_process_died(ws: &burrow::workspace::Workspace, db: &std::path::Path, id: i64) {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute(
            "UPDATE runs SET status = 'running', ended_at = NULL, started_at = started_at - 60 WHERE id = ?1",
            [id],
        )
        .unwrap();
    assert_eq!(ws.interrupt_orphaned_runs().unwrap(), vec![id]);
}

#[test]
fn a_resumed_run_remembers_its_failed_calls() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workspace.db");
    let ws = burrow::workspace::Workspace::open_at(&db).unwrap();
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    // Decoded without a grammar (`--no-grammar`, or a server that takes none): the loop
    // guard is what keeps a failed call from being made again.
    let cfg = || AgentConfig {
        grammar: false,
        ..config(p)
    };
    let first = call(p, "lookup", json!({"word": "nothing"}));
    let outcome = died_after_its_first_step(&ws, &db, &tools, cfg(), "find nothing", &first);
    let id = outcome.run_id.unwrap();
    assert!(outcome.steps[0].error.is_some(), "{outcome:?}");

    let model = FakeModel::new([
        FakeTurn::text(&call(p, "lookup", json!({"word": "nothing"}))),
        FakeTurn::text(&answer(p, "Nothing.")),
    ]);
    let agent = Agent::new(&model, &tools, cfg()).unwrap().with_store(&ws);
    let outcome = agent.resume(id, &CancelToken::new(), &mut |_| {}).unwrap();
    let obs = outcome.steps[1].observation.as_deref().unwrap_or("");
    assert!(obs.contains("already called lookup"), "step 2 saw: {obs}");
    assert_eq!(
        lookup.calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the failed call was made again after the resume"
    );
}

#[test]
fn a_run_killed_after_its_answer_resumes_to_that_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workspace.db");
    let ws = burrow::workspace::Workspace::open_at(&db).unwrap();
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    let model = FakeModel::new([FakeTurn::text(&answer(p, "See #918."))]);
    let agent = Agent::new(&model, &tools, config(p))
        .unwrap()
        .with_store(&ws);
    let (outcome, _) = run(&agent, "find wallets");
    assert_eq!(outcome.status, RunStatus::Succeeded);
    let id = outcome.run_id.unwrap();
    // Killed after its answer's step was written, before the run's row was finished.
    as_if_its_process_died(&ws, &db, id);

    let model = FakeModel::new(Vec::<FakeTurn>::new());
    let agent = Agent::new(&model, &tools, config(p))
        .unwrap()
        .with_store(&ws);
    let outcome = agent.resume(id, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(
        (outcome.status, outcome.final_answer.as_deref()),
        (RunStatus::Succeeded, Some("See #918.")),
        "{outcome:?}"
    );
}

#[test]
fn a_resumed_run_at_a_lower_step_limit_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workspace.db");
    let ws = burrow::workspace::Workspace::open_at(&db).unwrap();
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    // Started with a limit of 6 (`--max-steps 6`), killed after its first step.
    let first = call(p, "lookup", json!({"word": "wallet"}));
    let outcome = died_after_its_first_step(&ws, &db, &tools, config(p), "find wallets", &first);
    let id = outcome.run_id.unwrap();

    // Continued without repeating the flag: a lower limit than the run has steps.
    let model = FakeModel::new([FakeTurn::text(&answer(p, "See #918."))]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            max_steps: 1,
            ..config(p)
        },
    )
    .unwrap()
    .with_store(&ws);
    let outcome = agent.resume(id, &CancelToken::new(), &mut |_| {}).unwrap();
    let kept = ws.run(id).unwrap();
    assert!(
        outcome.final_answer.is_some() || kept.status == RunStatus::Interrupted,
        "ended {:?} with no answer and no model call ({} requests); kept as {:?}, which cannot be continued",
        outcome.status,
        model.requests().len(),
        kept.status
    );
}

#[test]
fn a_resumed_run_names_the_model_that_continued_it() {
    use burrow::agent::record::{ActionRecord, StepRecord};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workspace.db");
    let ws = burrow::workspace::Workspace::open_at(&db).unwrap();
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonAction;
    // Started with SmolLM2, killed after its first step.
    let h = ws
        .start_run("find wallets", Some("SmolLM2-135M-Instruct"), "json-action")
        .unwrap();
    ws.save_step(
        &h,
        &StepRecord {
            index: 0,
            output: call(p, "lookup", json!({"word": "wallet"})),
            thought: "look it up".into(),
            action: Some(ActionRecord {
                tool: "lookup".into(),
                args: json!({"word": "wallet"}).as_object().cloned().unwrap(),
            }),
            observation: Some("wallet: see issue #918".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let id = h.id;
    drop(h);
    as_if_its_process_died(&ws, &db, id);
    // Continued with another model (here the scripted one, named "fake"), which wrote the answer.
    let model = FakeModel::new([FakeTurn::text(&answer(p, "See #918."))]);
    let agent = Agent::new(&model, &tools, config(p))
        .unwrap()
        .with_store(&ws);
    let outcome = agent.resume(id, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let kept = ws.run(id).unwrap();
    assert!(
        kept.model.as_deref().is_some_and(|m| m.contains("fake")),
        "the answer was written by `fake`; the record says {:?}",
        kept.model
    );
}
