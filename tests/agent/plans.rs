//! The TODO plan, changed in both styles (`todo_patch` and `todo_write`), and its bad changes.

use burrow::agent::protocol::Protocol;
use burrow::agent::record::RunStatus;
use burrow::agent::{Agent, AgentConfig, AgentEvent};
use burrow::llm::fake::{FakeModel, FakeTurn};
use serde_json::json;

use crate::support::{answer, call, config, registry, run, Lookup};

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
