//! Issue #5: the shell's commands through Tauri's IPC (mock runtime, no display): what the
//! page sends, what it gets back, and the events that reach it over a Channel.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use burrow::agent::record::{ActionRecord, StepRecord};
use burrow::agent::RunStore;
use burrow::app::{App, ModelStatus};
use burrow::config::BurrowHome;
use burrow::llm::fake::{FakeModel, FakeTurn};
use burrow_app::{Shell, Startup, COMMANDS};
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow, WebviewWindowBuilder};

#[path = "../../tests/common/project.rs"]
mod project;

/// Events a channel delivered, by channel id, in order.
type Delivered = Arc<Mutex<Vec<(u32, Value)>>>;
/// Called with each delivered event before it is recorded (a test can block the run there).
type OnDelivery = Arc<dyn Fn(&Value) + Send + Sync>;

struct Fixture {
    _dir: tempfile::TempDir,
    project: PathBuf,
    window: WebviewWindow<MockRuntime>,
    app: tauri::App<MockRuntime>,
    delivered: Delivered,
}

fn fixture_with(
    startup: impl FnOnce(&Path) -> Startup,
    on_delivery: Option<OnDelivery>,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let project = project::project(dir.path());
    let core = App::open(BurrowHome::new(dir.path().join("home"))).unwrap();
    let delivered: Delivered = Arc::default();
    let sink = delivered.clone();
    let builder = mock_builder().channel_interceptor(move |_webview, callback, _index, body| {
        let InvokeResponseBody::Json(json) = body else {
            panic!("events are JSON");
        };
        let value: Value = serde_json::from_str(json).unwrap();
        if let Some(f) = &on_delivery {
            f(&value);
        }
        sink.lock().unwrap().push((callback.0, value));
        true
    });
    let app = burrow_app::builder(builder, Shell::new(core, startup(&project)))
        .build(mock_context(noop_assets()))
        .unwrap();
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    Fixture {
        _dir: dir,
        project,
        window,
        app,
        delivered,
    }
}

fn fixture() -> Fixture {
    fixture_with(|_| Startup::default(), None)
}

fn request(cmd: &str, body: Value) -> InvokeRequest {
    InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: tauri::test::INVOKE_KEY.to_string(),
    }
}

fn invoke(w: &WebviewWindow<MockRuntime>, cmd: &str, body: Value) -> Result<Value, Value> {
    get_ipc_response(w, request(cmd, body)).map(|b| b.deserialize::<Value>().unwrap())
}

impl Fixture {
    fn invoke(&self, cmd: &str, body: Value) -> Result<Value, Value> {
        invoke(&self.window, cmd, body)
    }

    /// The events channel `id` delivered.
    fn events(&self, id: u32) -> Vec<Value> {
        let all = self.delivered.lock().unwrap();
        all.iter()
            .filter(|(c, _)| *c == id)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Adds the fixture's project to the workspace: a run needs something to answer from.
    fn add_project(&self) {
        self.invoke(
            "add_repository",
            json!({"path": self.project, "onEvent": "__CHANNEL__:99"}),
        )
        .unwrap();
    }

    fn use_fake_model(&self, turns: Vec<FakeTurn>) {
        let status = ModelStatus {
            name: "fake".into(),
            path: PathBuf::from("/models/fake.gguf"),
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
        };
        self.app
            .state::<Shell>()
            .app()
            .set_model(Arc::new(FakeModel::new(turns)), status);
    }
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["kind"].as_str().unwrap() {
            "agent" => format!("agent:{}", e["event"]["type"].as_str().unwrap()),
            k => k.to_string(),
        })
        .collect()
}

fn tool(name: &str, args: Value) -> FakeTurn {
    FakeTurn::text(
        &json!({"type": "tool", "thinking": "next", "tool_name": name, "tool_args": args})
            .to_string(),
    )
}

fn answer(text: &str) -> FakeTurn {
    FakeTurn::text(&json!({"type": "final", "thinking": "done", "final": text}).to_string())
}

#[test]
fn every_command_is_registered_and_granted_and_nothing_else_is() {
    let f = fixture();
    for cmd in COMMANDS {
        // Missing arguments are refused by the command itself, which proves it is registered.
        if let Err(e) = f.invoke(cmd, json!({})) {
            let text = e.to_string();
            assert!(!text.contains("not found"), "{cmd}: {text}");
        }
    }
    let err = f.invoke("run_shell", json!({})).unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");

    let capability: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities/default.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut granted: Vec<String> = capability["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    granted.sort();
    let mut expected: Vec<String> = COMMANDS
        .iter()
        .map(|c| format!("allow-{}", c.replace('_', "-")))
        .chain(["dialog:allow-open".to_string()])
        .collect();
    expected.sort();
    assert_eq!(granted, expected);
    assert_eq!(capability["windows"], json!(["main"]));
}

#[test]
fn the_real_capability_lets_the_page_call_burrow_and_open_a_dialog_but_nothing_more() {
    // The app's own context: its tauri.conf.json, capability and the commands' permissions.
    let dir = tempfile::tempdir().unwrap();
    let core = App::open(BurrowHome::new(dir.path().join("home"))).unwrap();
    let app = burrow_app::builder(mock_builder(), Shell::new(core, Startup::default()))
        .build(tauri::generate_context!())
        .unwrap();
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let info = invoke(&window, "app_info", json!({})).unwrap();
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    assert!(invoke(&window, "get_settings", json!({})).is_ok());
    for denied in [
        "plugin:dialog|save",
        "plugin:dialog|message",
        "plugin:fs|read_file",
        "plugin:shell|execute",
    ] {
        let err = invoke(&window, denied, json!({})).unwrap_err();
        assert!(
            err.to_string().contains("not allowed") || err.to_string().contains("not found"),
            "{denied}: {err}"
        );
    }
    // Another window (or a remote page) gets nothing.
    let other = WebviewWindowBuilder::new(&app, "other", Default::default())
        .build()
        .unwrap();
    let err = invoke(&other, "app_info", json!({})).unwrap_err();
    assert!(err.to_string().contains("not allowed"), "{err}");
}

#[test]
fn startup_indexes_the_default_workspace_once_with_progress_over_the_channel() {
    let f = fixture_with(
        |project| Startup {
            workspace: Some(project.to_path_buf()),
            model: None,
        },
        None,
    );
    let info = f.invoke("app_info", json!({})).unwrap();
    assert_eq!(info["default_workspace"], json!(f.project));
    assert_eq!(info["model"], Value::Null);
    assert!(info["protocols"]
        .as_array()
        .unwrap()
        .contains(&json!("json-typed")));

    assert_eq!(
        f.invoke("startup", json!({"onEvent": "__CHANNEL__:11"})),
        Ok(json!(true))
    );
    // Then the workspace is embedded in the background for search by meaning: in a fresh
    // home the embedding model is missing, and the event says how to download it.
    let started = std::time::Instant::now();
    while !kinds(&f.events(11)).contains(&"embed_failed".to_string())
        && started.elapsed() < std::time::Duration::from_secs(30)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let events = f.events(11);
    let k = kinds(&events);
    assert_eq!(
        k.iter()
            .rfind(|k| k.starts_with("index"))
            .map(String::as_str),
        Some("indexed"),
        "{k:?}"
    );
    let indexed = events.iter().find(|e| e["kind"] == "indexed").unwrap();
    assert_eq!(indexed["report"]["files_indexed"], 2);
    assert!(k.contains(&"index".to_string()), "{k:?}");
    let embed = events.iter().find(|e| e["kind"] == "embed_failed");
    assert!(
        embed.is_some_and(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("burrow models fetch"))),
        "{events:?}"
    );

    // A reload of the page does not start the jobs again.
    assert_eq!(
        f.invoke("startup", json!({"onEvent": "__CHANNEL__:12"})),
        Ok(json!(false))
    );
    assert!(f.events(12).is_empty());
    let repos = f.invoke("workspace_status", json!({})).unwrap();
    assert_eq!(repos[0]["status"], "ready");
    assert_eq!(repos[0]["files"], 2);
}

#[test]
fn a_run_streams_every_step_over_the_channel_and_is_kept_in_history() {
    let f = fixture();
    f.add_project();
    // Step 0 is the model's route, here to Burrow's search with the task; the model writes
    // steps 1 and 2.
    f.use_fake_model(vec![
        FakeTurn::text(r#"{"tool": "search"}"#),
        tool("calculate", json!({"expression": "6 * 7"})),
        answer("42"),
    ]);
    let outcome = f
        .invoke(
            "start_run",
            json!({"task": "What is 6 * 7?", "onEvent": "__CHANNEL__:21"}),
        )
        .unwrap();
    assert_eq!(outcome["status"], "succeeded");
    assert_eq!(outcome["final_answer"], "42");
    let events = f.events(21);
    let k = kinds(&events);
    assert_eq!(k.first().map(String::as_str), Some("agent:run_started"));
    assert_eq!(k.last().map(String::as_str), Some("run_ended"));
    for expected in [
        "agent:step_started",
        "agent:token",
        "agent:step_finished",
        "agent:final",
    ] {
        assert!(k.iter().any(|x| x == expected), "{expected} in {k:?}");
    }
    // Each step reaches the page once, whole, as its record.
    for gone in ["agent:thought", "agent:action", "agent:observation"] {
        assert!(!k.iter().any(|x| x == gone), "{gone} in {k:?}");
    }
    assert!(events.iter().any(|e| e["event"]["type"] == "step_finished"
        && e["event"]["step"]["action"]["tool"] == "calculate"
        && e["event"]["step"]["observation"]
            .as_str()
            .unwrap()
            .contains("6 * 7 = 42")));
    // Tokens arrive in order and add up to the step's output.
    let streamed: String = events
        .iter()
        .filter(|e| e["event"]["type"] == "token" && e["event"]["index"] == 1)
        .map(|e| e["event"]["text"].as_str().unwrap())
        .collect();
    let finished = events
        .iter()
        .find(|e| e["event"]["type"] == "step_finished" && e["event"]["step"]["index"] == 1)
        .unwrap();
    assert!(!streamed.is_empty());
    assert_eq!(
        streamed,
        finished["event"]["step"]["output"].as_str().unwrap()
    );

    let run_id = outcome["run_id"].as_i64().unwrap();
    let runs = f.invoke("list_runs", json!({"limit": 10})).unwrap();
    assert_eq!(runs[0]["id"], run_id);
    assert_eq!(runs[0]["task"], "What is 6 * 7?");
    let run = f.invoke("get_run", json!({"id": run_id})).unwrap();
    assert_eq!(run["steps"].as_array().unwrap().len(), 3);
    assert_eq!(run["steps"][1]["action"]["tool"], "calculate");
}

#[test]
fn stop_run_ends_the_run_cancelled_while_the_window_keeps_answering() {
    let (reached_tx, reached_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let reached_tx = Mutex::new(reached_tx);
    // The run pauses after its first step until the test has pressed Stop.
    let on_delivery: OnDelivery = Arc::new(move |v: &Value| {
        if v["event"]["type"] == "step_finished" && v["event"]["step"]["index"] == 0 {
            reached_tx.lock().unwrap().send(()).unwrap();
            go_rx.lock().unwrap().recv().unwrap();
        }
    });
    let f = fixture_with(|_| Startup::default(), Some(on_delivery));
    f.add_project();
    // Stopped after step 0, Burrow's own search: the model never writes.
    f.use_fake_model(vec![
        tool("calculate", json!({"expression": "1 + 1"})),
        answer("2"),
    ]);
    let window = f.window.clone();
    let run = std::thread::spawn(move || {
        invoke(
            &window,
            "start_run",
            json!({"task": "add", "onEvent": "__CHANNEL__:31"}),
        )
    });
    reached_rx.recv().unwrap();
    // Mid-run: the page can still call commands, a second run is refused, Stop works.
    assert!(f.invoke("app_info", json!({})).unwrap()["running"] == json!(true));
    let err = f
        .invoke(
            "start_run",
            json!({"task": "another", "onEvent": "__CHANNEL__:32"}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "run_in_progress", "{err}");
    assert_eq!(f.invoke("stop_run", json!({})), Ok(json!(true)));
    go_tx.send(()).unwrap();
    let outcome = run.join().unwrap().unwrap();
    assert_eq!(outcome["status"], "cancelled");
    assert_eq!(outcome["steps"].as_array().unwrap().len(), 1);
    let ended = f.events(31).last().cloned().unwrap();
    assert_eq!(ended["kind"], "run_ended");
    assert_eq!(ended["status"], "cancelled");
    assert_eq!(f.invoke("stop_run", json!({})), Ok(json!(false)));
}

/// History's Continue: a run whose process died (still marked running, its lock free) goes on
/// from its kept steps under the same id, streaming as a new run does; an ended run is refused.
#[test]
fn resume_run_continues_an_interrupted_run_from_its_kept_steps() {
    let f = fixture();
    f.add_project();
    let core = f.app.state::<Shell>().app().clone();
    let kept_thought = "kept before the app was closed";
    let id = {
        let ws = core.workspace();
        let handle = ws
            .start_run("What is 6 * 7?", Some("fake"), "json-typed")
            .unwrap();
        let output = json!({"type": "tool", "thinking": kept_thought, "tool_name": "toolbelt_add_tool", "tool_args": {"name": "calculate"}});
        ws.save_step(
            &handle,
            &StepRecord {
                index: 0,
                output: output.to_string(),
                thought: kept_thought.into(),
                action: Some(ActionRecord {
                    tool: "toolbelt_add_tool".into(),
                    args: json!({"name": "calculate"}).as_object().cloned().unwrap(),
                }),
                observation: Some("calculate is now active.".into()),
                ..Default::default()
            },
        )
        .unwrap();
        handle.id
        // The handle drops here: the run's lock is free, as when its process dies.
    };
    f.use_fake_model(vec![
        tool("calculate", json!({"expression": "6 * 7"})),
        answer("42"),
    ]);
    let outcome = f
        .invoke("resume_run", json!({"id": id, "onEvent": "__CHANNEL__:41"}))
        .unwrap();
    assert_eq!(outcome["run_id"], id);
    assert_eq!(outcome["status"], "succeeded", "{outcome}");
    assert_eq!(outcome["final_answer"], "42");
    let events = f.events(41);
    assert_eq!(events[0]["event"]["type"], "run_started");
    assert_eq!(events[0]["event"]["run_id"], id);
    assert_eq!(events.last().unwrap()["kind"], "run_ended");
    // The new steps stream from index 1: the kept step is not run again.
    let started: Vec<i64> = events
        .iter()
        .filter(|e| e["event"]["type"] == "step_started")
        .map(|e| e["event"]["index"].as_i64().unwrap())
        .collect();
    assert_eq!(started, vec![1, 2]);
    let run = f.invoke("get_run", json!({"id": id})).unwrap();
    let steps = run["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{run}");
    assert_eq!(steps[0]["thought"], kept_thought);
    assert_eq!(steps[1]["action"]["tool"], "calculate");
    assert_eq!(run["status"], "succeeded");

    let err = f
        .invoke("resume_run", json!({"id": id, "onEvent": "__CHANNEL__:42"}))
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(&format!("run {id} ended (succeeded)")),
        "{err}"
    );
}

/// Bad input: each failure reaches the page as a kind and a message naming what and where, and
/// nothing indexed or recorded is lost.
#[test]
fn failures_reach_the_page_as_clear_messages_and_lose_nothing() {
    let f = fixture();
    let err = f
        .invoke(
            "start_run",
            json!({"task": "anything", "onEvent": "__CHANNEL__:41"}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "no_model");
    // With a model but nothing in the workspace, a run is refused before it starts.
    f.use_fake_model(vec![answer("never asked")]);
    let err = f
        .invoke(
            "start_run",
            json!({"task": "anything", "onEvent": "__CHANNEL__:40"}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "empty_workspace", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("add a repository"),
        "{err}"
    );

    f.invoke(
        "add_repository",
        json!({"path": f.project, "onEvent": "__CHANNEL__:42"}),
    )
    .unwrap();
    let missing = f.project.join("does-not-exist");
    let err = f
        .invoke(
            "add_repository",
            json!({"path": missing, "onEvent": "__CHANNEL__:43"}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "workspace");
    assert!(
        err["message"].as_str().unwrap().contains("does-not-exist"),
        "{err}"
    );
    let failed = f.events(43).last().cloned().unwrap();
    assert_eq!(failed["kind"], "index_failed");
    assert!(failed["message"]
        .as_str()
        .unwrap()
        .contains("does-not-exist"));

    let bad = f.project.join("issues.json");
    std::fs::write(&bad, "[{\"number\": \"not a number\"").unwrap();
    let err = f
        .invoke(
            "import_issues",
            json!({"path": bad, "slug": "owner/name", "onEvent": "__CHANNEL__:44"}),
        )
        .unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("issues.json"),
        "{err}"
    );

    let broken = f.project.join("broken.gguf");
    std::fs::write(&broken, b"GGUF\x03\x00\x00\x00not really a model").unwrap();
    let err = f
        .invoke(
            "load_model",
            json!({"query": broken, "onEvent": "__CHANNEL__:45"}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "model");
    let load_failed = f.events(45).last().cloned().unwrap();
    assert_eq!(load_failed["kind"], "load_failed");
    assert!(load_failed["message"]
        .as_str()
        .unwrap()
        .contains("broken.gguf"));

    let mut settings = f.invoke("get_settings", json!({})).unwrap();
    settings["max_steps"] = json!(0);
    let err = f
        .invoke("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(err["kind"], "settings");
    assert!(
        err["message"].as_str().unwrap().contains("max_steps"),
        "{err}"
    );
    assert_ne!(f.invoke("get_settings", json!({})).unwrap()["max_steps"], 0);

    // What was indexed is still there.
    let repos = f.invoke("workspace_status", json!({})).unwrap();
    let project = repos
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "project")
        .unwrap();
    assert_eq!(project["files"], 2);
    assert_eq!(project["status"], "ready");
}

#[test]
fn open_item_reads_a_linked_file_through_the_confined_tools() {
    let f = fixture();
    f.invoke(
        "add_repository",
        json!({"path": f.project, "onEvent": "__CHANNEL__:51"}),
    )
    .unwrap();
    let text = f
        .invoke(
            "open_item",
            json!({"item": {"kind": "file", "path": "src/lib.rs", "line": 2, "repo": null}}),
        )
        .unwrap();
    assert!(
        text.as_str().unwrap().contains("pub fn parse_wallet"),
        "{text}"
    );
    let err = f
        .invoke(
            "open_item",
            json!({"item": {"kind": "file", "path": "../../etc/passwd", "line": null, "repo": null}}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "open");
    assert!(err["message"].as_str().unwrap().contains("passwd"), "{err}");
    let err = f
        .invoke(
            "open_item",
            json!({"item": {"kind": "issue", "number": 99, "repo": null}}),
        )
        .unwrap_err();
    assert!(err["message"].as_str().unwrap().contains("#99"), "{err}");
}

/// The search box (the desktop app had none: the user could search only through the agent).
#[test]
fn the_search_box_finds_what_the_workspace_holds_and_refuses_a_bad_date_by_name() {
    let f = fixture();
    f.invoke(
        "add_repository",
        json!({"path": f.project, "onEvent": "__CHANNEL__:52"}),
    )
    .unwrap();
    let page = f
        .invoke(
            "search",
            json!({"request": {"text": "wallet file", "kinds": ["code"], "mode": "words"}}),
        )
        .unwrap();
    let hits = page["results"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{page}");
    assert_eq!(hits[0]["kind"], "code");
    assert_eq!(hits[0]["location"], "src/lib.rs:1");
    assert!(
        hits[0]["snippet"].as_str().unwrap().contains("«wallet»"),
        "{page}"
    );
    // What the result opens is what open_item reads.
    let text = f
        .invoke("open_item", json!({"item": hits[0]["item"]}))
        .unwrap();
    assert!(
        text.as_str().unwrap().contains("pub fn parse_wallet"),
        "{text}"
    );
    // No vectors: a hybrid search ranks by words and says so, rather than failing.
    let page = f
        .invoke("search", json!({"request": {"text": "wallet parser"}}))
        .unwrap();
    assert!(!page["results"].as_array().unwrap().is_empty(), "{page}");
    assert!(
        page["note"]
            .as_str()
            .unwrap()
            .starts_with("ranked by words only"),
        "{page}"
    );
    let err = f
        .invoke(
            "search",
            json!({"request": {"text": "wallet", "since": "yesterday"}}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "workspace");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("since") && message.contains("yesterday"),
        "{err}"
    );
    let err = f
        .invoke("search", json!({"request": {"text": "  "}}))
        .unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("no words"),
        "{err}"
    );
}

#[test]
fn the_catalogue_is_listed_and_a_fetch_failure_reaches_the_page() {
    let f = fixture();
    let catalogue = f.invoke("list_catalogue", json!({})).unwrap();
    let ids: Vec<&str> = catalogue
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"qwen2.5-coder-1.5b-instruct-q4_k_m") && ids.len() >= 3,
        "{ids:?}"
    );
    // An id the catalogue lacks fails before any download, and says which ids it has.
    let err = f
        .invoke(
            "fetch_model",
            json!({"id": "gpt-5", "onEvent": "__CHANNEL__:61"}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "model");
    let failed = f.events(61).last().cloned().unwrap();
    assert_eq!(failed["kind"], "fetch_failed");
    assert_eq!(failed["id"], "gpt-5");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("smollm2-135m-instruct-q4_1"),
        "{failed}"
    );
}

/// A GET over plain HTTP/1.1 (the test needs no HTTP client for one request).
fn http_get(base: &str, path: &str) -> std::io::Result<(u16, Value)> {
    use std::io::{Read, Write};
    let host = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut stream = std::net::TcpStream::connect(&host)?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Ok((status, serde_json::from_str(body).unwrap()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Issue 19: from the Models screen, a model served elsewhere is added (and probed), used,
/// and removed; and the model in use, remote or not, is served over the OpenAI API by a
/// switch, which the settings remember.
#[test]
fn remote_models_are_added_used_and_served_from_the_app() {
    use burrow::app::serve::{self, ServeOptions, Server};
    let f = fixture();
    // The remote server: Burrow's own, over a scripted model.
    let elsewhere = Arc::new(Server::new(
        Some(Arc::new(FakeModel::new([]).with_context_length(2048))),
        ServeOptions::default(),
    ));
    let remote = serve::start("127.0.0.1", 0, elsewhere).unwrap();
    let url = format!("http://{}", remote.addr());
    let added = f
        .invoke(
            "add_remote",
            json!({"url": url, "name": "box", "model": null, "apiKeyEnv": null, "llguidance": true}),
        )
        .unwrap();
    assert_eq!(added["reachable"], true, "{added}");
    // Kept: grammars go to it as llguidance's (a llama-server built with it).
    assert_eq!(added["llguidance"], true, "{added}");
    assert_eq!(added["info"]["model"], "fake");
    let dead = format!("http://127.0.0.1:{}", free_port());
    let unreachable = f
        .invoke(
            "add_remote",
            json!({"url": dead, "name": "off", "model": null, "apiKeyEnv": null}),
        )
        .unwrap();
    assert_eq!(unreachable["reachable"], false);
    assert!(
        unreachable["problem"]
            .as_str()
            .unwrap()
            .contains(&dead[7..]),
        "{unreachable}"
    );
    let err = f
        .invoke(
            "add_remote",
            json!({"url": "not a url", "name": null, "model": null, "apiKeyEnv": null}),
        )
        .unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("not a url"),
        "{err}"
    );
    let listed = f.invoke("list_remotes", json!({})).unwrap();
    let reach: Vec<(String, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["reachable"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reach,
        [("box".to_string(), true), ("off".to_string(), false)]
    );

    // Used as the model: the status says where it is.
    let status = f
        .invoke(
            "load_model",
            json!({"query": "box", "onEvent": "__CHANNEL__:70"}),
        )
        .unwrap();
    assert_eq!(status["remote"]["backend"], "box");
    assert_eq!(status["context_size"], 2048);
    assert_eq!(f.events(70).last().unwrap()["kind"], "loaded");
    // One that does not answer fails clearly, and the one in use stays.
    let err = f
        .invoke(
            "load_model",
            json!({"query": "off", "onEvent": "__CHANNEL__:71"}),
        )
        .unwrap_err();
    assert_eq!(err["kind"], "model");
    assert_eq!(f.events(71).last().unwrap()["kind"], "load_failed");
    assert_eq!(
        f.invoke("model_status", json!({})).unwrap()["remote"]["backend"],
        "box"
    );

    // Served from here, over the OpenAI API.
    assert_eq!(f.invoke("serve_status", json!({})).unwrap(), Value::Null);
    let port = free_port();
    let serving = f.invoke("start_serving", json!({"port": port})).unwrap();
    let base = format!("http://127.0.0.1:{port}/v1");
    assert_eq!(serving["url"], base);
    assert_eq!(serving["model"], "fake");
    let (code, models) = http_get(&base, "/v1/models").unwrap();
    assert_eq!(code, 200);
    assert_eq!(models["data"][0]["id"], "fake");
    assert_eq!(models["data"][0]["context_length"], 2048);
    // The app's own server as the model in use would wait on itself for ever: refused.
    f.invoke(
        "add_remote",
        json!({"url": base, "name": "self", "model": null, "apiKeyEnv": null}),
    )
    .unwrap();
    let err = f
        .invoke(
            "load_model",
            json!({"query": "self", "onEvent": "__CHANNEL__:73"}),
        )
        .unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("own server"),
        "{err}"
    );
    assert_eq!(
        f.invoke("serve_status", json!({})).unwrap()["model"],
        "fake"
    );
    assert_eq!(
        f.invoke("get_settings", json!({})).unwrap()["serve"],
        json!({"enabled": true, "port": port, "api_key_env": ""})
    );
    // The server follows the model in use: unloaded, it says so.
    f.invoke("unload_model", json!({})).unwrap();
    let (code, models) = http_get(&base, "/v1/models").unwrap();
    assert_eq!((code, models["data"].clone()), (200, json!([])));
    assert_eq!(
        f.invoke("serve_status", json!({})).unwrap()["model"],
        Value::Null
    );

    assert_eq!(f.invoke("stop_serving", json!({})).unwrap(), true);
    assert!(http_get(&base, "/v1/models").is_err(), "nothing listens");
    assert_eq!(
        f.invoke("get_settings", json!({})).unwrap()["serve"]["enabled"],
        false
    );
    assert_eq!(
        f.invoke("remove_remote", json!({"name": "off"})).unwrap(),
        true
    );
    assert_eq!(
        f.invoke("remove_remote", json!({"name": "off"})).unwrap(),
        false
    );
    drop(remote);
}

/// Serving as the settings say when the app opens: a port already taken is an error the page
/// is told, and the app goes on.
#[test]
fn serving_at_start_on_a_taken_port_is_reported_and_nothing_else_fails() {
    let f = fixture();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut settings = f.invoke("get_settings", json!({})).unwrap();
    settings["serve"] = json!({"enabled": true, "port": port, "api_key_env": ""});
    f.invoke("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(
        f.invoke("startup", json!({"onEvent": "__CHANNEL__:72"}))
            .unwrap(),
        true
    );
    let failed = f
        .events(72)
        .into_iter()
        .find(|e| e["kind"] == "serve_failed")
        .expect("a serve_failed event");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains(&format!("127.0.0.1:{port}")),
        "{failed}"
    );
    assert_eq!(f.invoke("serve_status", json!({})).unwrap(), Value::Null);
}

/// A default workspace that cannot be read (a folder mistyped or gone) is reported at start as
/// an indexing failure naming it: the error was thrown away, and nothing showed (found in
/// review).
#[test]
fn a_default_workspace_that_cannot_be_read_is_reported_at_startup() {
    let f = fixture_with(
        |p| Startup {
            workspace: Some(p.join("no-such-folder")),
            model: None,
        },
        None,
    );
    assert_eq!(
        f.invoke("startup", json!({"onEvent": "__CHANNEL__:13"})),
        Ok(json!(true))
    );
    let started = std::time::Instant::now();
    while !kinds(&f.events(13)).contains(&"index_failed".to_string())
        && started.elapsed() < std::time::Duration::from_secs(30)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let events = f.events(13);
    let failed = events
        .iter()
        .find(|e| e["kind"] == "index_failed")
        .unwrap_or_else(|| panic!("events: {:?}", kinds(&events)));
    assert!(
        failed["message"]
            .as_str()
            .unwrap_or("")
            .contains("no-such-folder"),
        "{failed}"
    );
}
