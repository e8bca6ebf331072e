//! Scoring a task's answer part by part, and reading a task set.

use super::*;
use crate::app::eval::tests::finished;
use crate::tools::Locator;

fn task(parts: &[(PartKind, &[&str])]) -> Task {
    Task {
        id: "t".into(),
        split: "dev".into(),
        kind: "fixed-by".into(),
        task: "Which pull request fixed issue #431 after release 13.0.0, and who reviewed it?"
            .into(),
        parts: parts
            .iter()
            .map(|(what, accept)| Part {
                what: *what,
                accept: accept.iter().map(|a| a.to_string()).collect(),
            })
            .collect(),
        why: String::new(),
    }
}

fn score(t: &Task, answer: &str) -> ScoredTask {
    score_task(
        t,
        ("m", "p"),
        &finished(answer, Vec::new(), Vec::new()),
        1.0,
        &|_| 1,
    )
}

#[test]
fn a_task_counts_only_when_every_part_is_in_the_answer() {
    let t = task(&[
        (PartKind::Pr, &["bitcoin-core/gui#430"]),
        (PartKind::Person, &["hebasto", "Hennadii Stepanov"]),
    ]);
    let both = score(
        &t,
        "Pull request #430 fixed it; Hennadii Stepanov reviewed it.",
    );
    assert!(both.correct, "{both:?}");
    assert_eq!(both.parts, vec![true, true]);
    let one = score(&t, "Pull request #430 fixed it.");
    assert!(!one.correct);
    assert_eq!(one.parts, vec![true, false]);
}

#[test]
fn a_cited_item_counts_as_named() {
    let t = task(&[(PartKind::Pr, &["bitcoin-core/gui#430"])]);
    let cited = Locator::issue_or_pr("bitcoin-core/gui", 430, true);
    let o = finished("The fix is the one cited.", vec![cited], Vec::new());
    assert!(score_task(&t, ("m", "p"), &o, 1.0, &|_| 1).correct);
}

#[test]
fn an_answer_listing_many_candidates_does_not_pass() {
    let t = task(&[(PartKind::Pr, &["bitcoin-core/gui#430"])]);
    let listed = score(&t, "One of #428, #429, #430, #432 or #433.");
    assert!(listed.too_many && !listed.correct, "{listed:?}");
    let numbers = task(&[(PartKind::Number, &["76"])]);
    let guesses = score(&numbers, "It is 74, 75, 76 or 77 commits.");
    assert!(!guesses.correct, "{guesses:?}");
    assert!(score(&numbers, "76 commits, between 13.0.0 and 14.0.0.").correct);
    // The task's own items, restated, are not candidates.
    let restated = score(&t, "#430 fixed #431; the others, #428 and #429, did not.");
    assert!(restated.correct, "{restated:?}");
}

#[test]
fn numbers_count_as_whole_words_only() {
    assert_eq!(numbers("76 commits"), vec!["76"]);
    assert_eq!(numbers("There were eight."), vec!["8"]);
    // Not a longer number, a version, an issue, a hash, or a word with digits.
    for text in ["176 commits", "13.0.0", "#76", "x86_64", "abc76f", "v76.1"] {
        assert!(!numbers(text).contains(&"76".to_string()), "{text}");
    }
    assert_eq!(numbers("It is 76."), vec!["76"]);
}

#[test]
fn a_value_is_said_whole() {
    assert!(says("The separator is `--` by default.", "--"));
    assert!(!says("Set it with --context-separator.", "--"));
    assert!(says("It is 100 MiB, set in config.rs", "100 MiB"));
    assert!(says("First in ripgrep v14.0.0.", "14.0.0"));
    assert!(!says("First in ripgrep 114.0.0", "14.0.0"));
    assert!(!says("First in 14.0.01", "14.0.0"));
    assert!(says("Reviewed by @hebasto", "hebasto"));
    assert!(!says("Reviewed by hebastov", "hebasto"));
}

#[test]
fn a_verdict_is_the_first_yes_or_no_said() {
    let t = task(&[(PartKind::Verdict, &["no"])]);
    assert!(score(&t, "No: the limit is 100 MiB now, yes, since 13.0.0.").correct);
    assert!(!score(&t, "Yes, no change.").correct);
    assert!(!score(&t, "The limit is 100 MiB now.").correct);
}

#[test]
fn the_models_own_calls_are_told_from_burrows_and_from_the_tasks_words() {
    let t = task(&[(PartKind::Pr, &["bitcoin-core/gui#430"])]);
    let call = |tool: &str, args: serde_json::Value, origin| StepRecord {
        action: Some(crate::agent::record::ActionRecord {
            tool: tool.into(),
            args: args.as_object().unwrap().clone(),
        }),
        origin,
        ..Default::default()
    };
    use crate::agent::record::Origin;
    let burrows = call(
        "search",
        serde_json::json!({"query": t.task}),
        Origin::Search,
    );
    let echo = call(
        "search",
        serde_json::json!({"query": t.task}),
        Origin::Model,
    );
    let own = call(
        "get_pull_request",
        serde_json::json!({"number": 430}),
        Origin::Model,
    );
    let run = |steps| {
        let o = finished("#430", Vec::new(), steps);
        score_task(&t, ("m", "p"), &o, 1.0, &|_| 1)
    };
    let s = run(vec![burrows.clone(), echo.clone()]);
    assert_eq!(s.model_calls, vec!["search"]);
    assert!(
        !s.model_acted,
        "searching with the task's own words is not acting"
    );
    let s = run(vec![burrows, echo, own]);
    assert_eq!(s.model_calls, vec!["search", "get_pull_request"]);
    assert!(s.model_acted);
    // A route to the lookup is the model's choice, but Burrow's call (its kinds and limit
    // are not the model's words); a route to a tool with filters is the model's own call.
    let lookup = call(
        "search",
        serde_json::json!({"query": t.task, "kinds": ["pr"], "limit": 5}),
        Origin::Route,
    );
    let s = run(vec![lookup]);
    assert_eq!(s.model_calls, vec!["search"]);
    assert!(!s.model_acted && !s.model_called);
    let routed = call(
        "search_pull_requests",
        serde_json::json!({"label": "Bug"}),
        Origin::Route,
    );
    assert!(run(vec![routed.clone()]).model_acted);
    // A name copied from the task is the model's call, but not an argument of its own.
    let copied = call(
        "find_symbol",
        serde_json::json!({"name": t.task.split_whitespace().next().unwrap()}),
        Origin::Route,
    );
    let s = run(vec![copied]);
    assert!(s.model_called && !s.model_acted);
}

#[test]
fn a_bad_task_set_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.jsonl");
    let good = r#"{"id":"a","task":"t","parts":[{"what":"number","accept":["3"]}]}"#;
    let bad = r#"{"id":"b","task":"t","parts":[{"what":"pr","accept":["gui 12"]}]}"#;
    std::fs::write(&path, format!("{good}\n\n{bad}\n")).unwrap();
    let e = read_tasks(&path).unwrap_err().to_string();
    assert!(e.contains("line 3") && e.contains("gui 12"), "{e}");
    assert!(is_task_set(&path));
}

#[test]
fn the_shipped_task_set_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/eval/tasks.jsonl");
    let tasks = read_tasks(&path).unwrap();
    assert!(tasks.len() >= 40, "{}", tasks.len());
    assert!(is_task_set(&path));
    let questions = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/eval/questions.jsonl");
    assert!(!is_task_set(&questions));
}
