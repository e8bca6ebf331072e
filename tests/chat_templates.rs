//! Issue #2: every real chat template in ../shared/fixtures/chat-templates renders byte for byte
//! as Hugging Face transformers (Python jinja2) renders it, and errors where the reference errors.

use std::path::{Path, PathBuf};

use burrow::llm::template::{fixed_clock, ChatTemplate};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/chat-templates")
}

#[test]
fn every_fixture_pair_matches_the_reference() {
    let root = fixtures();
    assert!(root.is_dir(), "fixtures missing at {}", root.display());
    let at = chrono::NaiveDate::from_ymd_opt(2025, 1, 15)
        .unwrap()
        .and_hms_opt(12, 0, 0)
        .unwrap();
    let mut templates: Vec<PathBuf> = std::fs::read_dir(root.join("templates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    templates.sort();
    assert!(
        templates.len() >= 40,
        "found only {} templates",
        templates.len()
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    for context in ["basic", "tools", "toolcall"] {
        let ctx: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.join("contexts").join(format!("{context}.json")))
                .unwrap(),
        )
        .unwrap();
        for tpath in &templates {
            let name = tpath.file_name().unwrap().to_string_lossy().to_string();
            let src = std::fs::read_to_string(tpath).unwrap();
            let expected_dir = root.join("expected").join(context);
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
    assert!(checked >= 120);
    assert!(
        failures.is_empty(),
        "{} of {checked} pairs fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The text around byte `at`, for a readable diff.
fn around(s: &str, at: usize) -> &str {
    let mut start = at.saturating_sub(40);
    while !s.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + 60).min(s.len());
    while !s.is_char_boundary(end) {
        end += 1;
    }
    &s[start.min(s.len())..end]
}
