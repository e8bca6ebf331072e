//! Every real chat template in ../shared/fixtures/chat-templates renders byte for byte
//! as Hugging Face transformers (Python jinja2) renders it, and errors where the reference errors.
//! Besides the shared contexts, tests/fixtures/chat-templates adds contexts for what Burrow sends
//! that they do not cover (null content with tool calls, `tools: None`, Unicode and escapes, no
//! generation prompt), rendered by the same reference script (render_ref.py).

use std::path::{Path, PathBuf};

use burrow::llm::template::{fixed_clock, ChatTemplate, TEMPLATE_MEMORY};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/chat-templates")
}

fn ours() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chat-templates")
}

/// The real templates, in name order.
fn templates() -> Vec<PathBuf> {
    let mut templates: Vec<PathBuf> = std::fs::read_dir(shared().join("templates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    templates.sort();
    templates
}

/// Checks every template against every context in `root/contexts`, with references in
/// `root/expected/<context>/`, and fails listing every pair that differs.
fn assert_all_match(root: &Path) {
    assert!(root.is_dir(), "fixtures missing at {}", root.display());
    let (checked, failures) = check_all(root);
    assert!(checked >= 120, "only {checked} pairs");
    assert!(
        failures.is_empty(),
        "{} of {checked} pairs fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Returns (pairs checked, failures).
fn check_all(root: &Path) -> (usize, Vec<String>) {
    let at = chrono::NaiveDate::from_ymd_opt(2025, 1, 15)
        .unwrap()
        .and_hms_opt(12, 0, 0)
        .unwrap();
    let templates = templates();
    assert!(
        templates.len() >= 40,
        "found only {} templates",
        templates.len()
    );
    let mut contexts: Vec<PathBuf> = std::fs::read_dir(root.join("contexts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    contexts.sort();
    let mut failures = Vec::new();
    let mut checked = 0;
    for ctx_path in &contexts {
        let context = ctx_path.file_stem().unwrap().to_string_lossy().to_string();
        let ctx: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(ctx_path).unwrap()).unwrap();
        for tpath in &templates {
            let name = tpath.file_name().unwrap().to_string_lossy().to_string();
            let src = std::fs::read_to_string(tpath).unwrap();
            let expected_dir = root.join("expected").join(&context);
            let out_path = expected_dir.join(format!("{name}.out"));
            let err_path = expected_dir.join(format!("{name}.err"));
            let result =
                ChatTemplate::with_clock(&src, fixed_clock(at)).and_then(|t| t.render_json(&ctx));
            checked += 1;
            if out_path.exists() {
                let want = std::fs::read_to_string(&out_path).unwrap();
                match result {
                    Ok(got) if got == want => {}
                    Ok(got) => {
                        let at = got
                            .bytes()
                            .zip(want.bytes())
                            .take_while(|(a, b)| a == b)
                            .count();
                        failures.push(format!(
                            "{context}/{name}: output differs at byte {at}:\n  want {:?}\n  got  {:?}",
                            around(&want, at),
                            around(&got, at)
                        ))
                    }
                    Err(e) => failures.push(format!("{context}/{name}: unexpected error: {e}")),
                }
            } else if err_path.exists() {
                if let Ok(got) = result {
                    let reference = std::fs::read_to_string(&err_path).unwrap();
                    failures.push(format!(
                        "{context}/{name}: rendered, but the reference raised ({reference}):\n{got}"
                    ));
                }
            } else {
                failures.push(format!("{context}/{name}: no reference"));
            }
        }
    }
    (checked, failures)
}

#[test]
fn every_shared_fixture_pair_matches_the_reference() {
    assert_all_match(&shared());
}

#[test]
fn burrows_own_contexts_match_the_reference() {
    assert_all_match(&ours());
}

/// The text around byte `at`, for a readable diff.
fn around(s: &str, at: usize) -> &str {
    let mut start = at.saturating_sub(40).min(s.len());
    while !s.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + 60).min(s.len());
    while !s.is_char_boundary(end) {
        end += 1;
    }
    &s[start..end]
}

/// Issue 17, defect 4: what a rendering builds is charged to a memory budget, so a hostile
/// template stops (src/llm/template/render.rs, MEMORY_HOGS). A long run must not: a 200-turn,
/// 800 KB conversation renders in every real template within a sixteenth of the budget (the
/// most any of them needed when measured was 6.9 MB, QwQ; most build less than 5x their output).
#[test]
fn a_long_conversation_renders_in_every_template_well_within_the_memory_budget() {
    let templates = templates();
    let turn = "word ".repeat(800);
    let mut messages = vec![serde_json::json!({"role": "system", "content": turn})];
    for i in 0..100 {
        messages.push(serde_json::json!({"role": "user", "content": format!("{i} {turn}")}));
        messages.push(serde_json::json!({"role": "assistant", "content": format!("{i} {turn}")}));
    }
    messages.push(serde_json::json!({"role": "user", "content": "the last question"}));
    let ctx = serde_json::json!({
        "messages": messages,
        "add_generation_prompt": true,
        "bos_token": "<s>",
        "eos_token": "</s>",
    });
    let mut rendered = 0;
    for path in &templates {
        let name = path.file_name().unwrap().to_string_lossy();
        let template = ChatTemplate::new(&std::fs::read_to_string(path).unwrap()).unwrap();
        // Templates that refuse a system message or this alternation refuse it either way.
        let Ok(full) = template.render_json(&ctx) else {
            continue;
        };
        assert!(full.contains("the last question"), "{name}");
        let (tight, over) =
            minijinja::budget::with_limit(TEMPLATE_MEMORY / 16, || template.render_json(&ctx));
        assert!(!over, "{name} needs more than a sixteenth of the budget");
        assert_eq!(tight.unwrap(), full, "{name}");
        rendered += 1;
    }
    assert!(
        rendered >= 40,
        "only {rendered} templates rendered the conversation"
    );
}
