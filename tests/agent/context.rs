//! The prompt as the run grows: capped observations, summaries of older steps, the KV cache
//! reused, and a window too small.

use burrow::agent::protocol::{Protocol, PROTOCOLS};
use burrow::agent::record::RunStatus;
use burrow::agent::{Agent, AgentConfig, AgentEvent};
use burrow::llm::fake::{FakeModel, FakeTurn};
use serde_json::json;

use crate::support::{
    answer, call, config, lookups_then, prompt_sizes, registry, run, window_passed_at_third_prompt,
    Lookup,
};

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
