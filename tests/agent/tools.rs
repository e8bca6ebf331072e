//! Calling tools: errors as observations, the loop guard, retries of transient failures, the
//! toolbelt and hooks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use burrow::agent::hooks::{Hook, HookContext, ToolVerdict};
use burrow::agent::protocol::{Action, Protocol};
use burrow::agent::record::RunStatus;
use burrow::agent::{Agent, AgentConfig};
use burrow::llm::fake::{FakeModel, FakeTurn};
use burrow::tools::{Locator, ToolRegistry};
use serde_json::json;

use crate::support::{answer, call, config, registry, run, FakeClock, Flaky, Lookup};

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
    // No share of the context for tools: one tool is already too many.
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            toolbelt_share: 0.0,
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
        !requests[0].prompt.contains("- lookup("),
        "{}",
        requests[0].prompt
    );
    assert!(requests[0].prompt.contains("- toolbelt_add_tool("));
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
        .contains("- lookup("));
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

/// Issue 15: a step keeps the locators of the items its observation shows, as the tool gave
/// them; an observation that shows no item (an error, a result already shown) keeps none.
#[test]
fn steps_keep_the_items_their_observation_shows() {
    let lookup = Lookup::default();
    let tools = registry(&lookup);
    let p = Protocol::JsonTyped;
    let model = FakeModel::new([
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "nothing"}))),
        FakeTurn::text(&call(p, "lookup", json!({"word": "wallet"}))),
        FakeTurn::text(&answer(p, "See #918.")),
    ]);
    let agent = Agent::new(&model, &tools, config(p)).unwrap();
    let (outcome, events) = run(&agent, "task");
    assert_eq!(outcome.status, RunStatus::Succeeded);
    let issue = Locator::Issue {
        number: 918,
        repo: Some("acme/app".into()),
    };
    let items: Vec<Vec<Locator>> = outcome.steps.iter().map(|s| s.items.clone()).collect();
    assert_eq!(items, vec![vec![issue], vec![], vec![], vec![]]);
    // The record streamed to a shell carries them too.
    let streamed = events.iter().find_map(|e| match e {
        burrow::agent::AgentEvent::StepFinished { step } if step.index == 0 => {
            Some(step.items.clone())
        }
        _ => None,
    });
    assert_eq!(streamed, Some(items[0].clone()));
}
