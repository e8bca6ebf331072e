//! A model served by another program over the OpenAI API. Tested against llama.cpp's
//! own llama-server (built from the llama.cpp sources on PyPI by scripts/build-llama-server.sh,
//! which the README's test command runs) serving SmolLM2, beside the same model in-process;
//! and against tests/remote/fault_server.py for the failures a real server shows only by
//! accident.

mod common;
#[path = "common/project.rs"]
mod project;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use burrow::llm::remote::{ApiKey, RemoteModel, RemoteOptions, ServerKind};
use burrow::llm::{
    ChatMessage, GenerateRequest, GenerationEvent, Grammar, LanguageModel, LlmError, Prompt,
    SamplingParams, StopReason,
};
use serde_json::{json, Value};

/// A server process, killed when the test ends.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn llama_server_bin() -> PathBuf {
    let out = Command::new(root().join("scripts/build-llama-server.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "building llama-server failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// llama-server serving SmolLM2 on 127.0.0.1, one slot, ready.
fn llama_server() -> Server {
    let port = free_port();
    let child = Command::new(llama_server_bin())
        .arg("-m")
        .arg(common::smollm2())
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", "4096", "-np", "1", "-t", "2", "--no-warmup"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    // Loading, it answers 503; before listening, nothing.
    while RemoteModel::connect(RemoteOptions::new(&server.url)).is_err() {
        assert!(Instant::now() < deadline, "llama-server did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    server
}

/// The body of `GET path` from the server at `url` (HTTP/1.1, closed after the reply).
fn http_get(url: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let host = url.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(host).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    reply.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// tests/remote/fault_server.py in `mode`.
fn fault_server(mode: &str) -> Server {
    let mut child = Command::new("python3")
        .arg(root().join("tests/remote/fault_server.py"))
        .arg(mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    Server {
        child,
        url: format!("http://127.0.0.1:{}", line.trim()),
    }
}

fn chat(text: &str) -> GenerateRequest {
    GenerateRequest::new(Prompt::chat(vec![ChatMessage::user(text)]))
        .sampling(SamplingParams::greedy())
}

#[test]
fn a_turn_through_llama_server_is_the_turn_the_engine_here_writes() {
    let server = llama_server();
    let remote = RemoteModel::connect(RemoteOptions::new(format!("{}/v1/", server.url))).unwrap();
    let (_guard, local) = common::model();
    assert_eq!(
        remote.descriptor().context_length,
        4096,
        "reported by /props"
    );
    assert!(remote.descriptor().name.contains(&server.url));

    // Free, cut at the token budget.
    let req = || chat("Write a short poem about the sea.").max_tokens(24);
    let here = local.generate(req()).unwrap().complete().unwrap();
    let there = remote.generate(req()).unwrap().complete().unwrap();
    assert_eq!(there.text, here.text);
    assert_eq!(there.stop_reason, StopReason::MaxTokens);
    assert_eq!(there.usage.generated_tokens, 24);
    assert!(there.usage.prompt_tokens > 10, "{:?}", there.usage);
    assert!(there.usage.time_to_first_token_ms > 0.0);

    // A JSON schema, as GBNF to a server not said to have llguidance: the same compact JSON.
    let schema = json!({
        "type": "object",
        "properties": {"colour": {"type": "string", "maxLength": 20}, "count": {"type": "integer"}},
        "required": ["colour", "count"],
    });
    let req = || {
        chat("Name a colour and a number, as JSON.")
            .grammar(Grammar::JsonSchema(schema.clone()))
            .max_tokens(40)
    };
    let there = remote.generate(req()).unwrap().complete().unwrap();
    assert!(!there.usage.unconstrained);
    assert!(
        Grammar::JsonSchema(schema.clone())
            .accepts(&there.text)
            .unwrap(),
        "{:?}",
        there.text
    );
    let v: Value = serde_json::from_str(&there.text).unwrap();
    assert!(v["count"].is_i64(), "{v}");

    // To a llama-server said to have llguidance (as this one has), what GBNF could not say
    // reaches it as the engine enforces it: a string's `pattern` (before, it was dropped on
    // the way to GBNF and the model wrote what it liked).
    let mut options = RemoteOptions::new(&server.url);
    options.llguidance = true;
    let remote = RemoteModel::connect(options).unwrap();
    let schema = json!({
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}},
        "required": ["code"],
    });
    let req = || {
        chat("Make up a product code, as JSON.")
            .grammar(Grammar::JsonSchema(schema.clone()))
            .max_tokens(40)
    };
    let here = local.generate(req()).unwrap().complete().unwrap();
    let there = remote.generate(req()).unwrap().complete().unwrap();
    let code = serde_json::from_str::<Value>(&there.text).unwrap()["code"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        code.len() == 6
            && code[..3].chars().all(|c| c.is_ascii_uppercase())
            && &code[3..4] == "-"
            && code[4..].chars().all(|c| c.is_ascii_digit()),
        "{:?}",
        there.text
    );
    // Not compared with the text here: a made-up code is a near tie, which the two llama.cpp
    // builds' arithmetic decides differently ("AUD-12" there, "CAL-12" here).
    assert!(
        here.text.len() == there.text.len(),
        "{:?} {:?}",
        here.text,
        there.text
    );

    // A GBNF grammar with a stop string: the text ends before the stop string.
    let req = || {
        chat("Say a.")
            .grammar(Grammar::Gbnf("root ::= \"a\" \"b\"+\n".into()))
            .stop(["bbb"])
            .max_tokens(10)
    };
    let here = local.generate(req()).unwrap().complete().unwrap();
    let there = remote.generate(req()).unwrap().complete().unwrap();
    assert_eq!(there.text, here.text);
    assert!(
        there.text.starts_with('a') && !there.text.contains("bbb"),
        "{:?}",
        there.text
    );
    assert_ne!(there.stop_reason, StopReason::MaxTokens);

    // Counting uses the server's tokenizer: the same counts as the model here.
    let text = "fn main() { println!(\"<|im_end|> is text here\"); } // ünïcode";
    assert_eq!(
        remote.count_tokens(text).unwrap(),
        local.count_tokens(text).unwrap()
    );
}

/// Issue 19: through the chat endpoint llama-server tokenized the previous reply again, and a
/// reply written under a grammar splits differently when re-read, so the server's cache was of
/// no use from there on and each agent step evaluated the last one's reply again (about 55
/// tokens a step). The prompt now goes as ids, the reply's as sampled: the next turn reuses
/// all of the last one.
#[test]
fn the_next_turn_reuses_the_servers_cache_of_the_last_reply() {
    let server = llama_server();
    let remote = RemoteModel::connect(RemoteOptions::new(server.url.clone())).unwrap();
    let schema = json!({
        "type": "object",
        "properties": {"thought": {"type": "string", "maxLength": 120}, "tool": {"enum": ["search", "read_file"]}},
        "required": ["thought", "tool"],
    });
    let mut messages = vec![ChatMessage::user(
        "Plan how to find where the configuration file is parsed. Answer as JSON.",
    )];
    let turn = |messages: &[ChatMessage]| {
        GenerateRequest::new(Prompt::chat(messages.to_vec()))
            .sampling(SamplingParams::greedy())
            .grammar(Grammar::JsonSchema(schema.clone()))
            .max_tokens(60)
    };
    let first = remote
        .generate(turn(&messages))
        .unwrap()
        .complete()
        .unwrap();
    assert!(first.usage.generated_tokens > 10, "{:?}", first.usage);
    messages.push(ChatMessage::assistant(first.text.clone()));
    messages.push(ChatMessage::user("Observation: nothing found. Try again."));
    let second = remote
        .generate(turn(&messages))
        .unwrap()
        .complete()
        .unwrap();
    // All of the first prompt and of what the model wrote (its last token was sampled, not
    // yet evaluated) is in the server's cache and used.
    let held = first.usage.prompt_tokens + first.usage.generated_tokens - 1;
    assert!(
        second.usage.cached_tokens >= held,
        "cached {} of the {held} the server holds: {:?}",
        second.usage.cached_tokens,
        second.usage
    );
    // Read again whole by a fresh server, the same prompt is other tokens: the split the
    // model sampled is not the one the tokenizer makes.
    let fresh_server = llama_server();
    let fresh = RemoteModel::connect(RemoteOptions::new(fresh_server.url.clone())).unwrap();
    let again = fresh.generate(turn(&messages)).unwrap().complete().unwrap();
    assert_eq!(again.usage.cached_tokens, 0);
    assert!(again.usage.prompt_tokens > 50, "{:?}", again.usage);
}

#[test]
fn a_cancelled_generation_frees_the_server_at_once() {
    let server = llama_server();
    let remote = RemoteModel::connect(RemoteOptions::new(&server.url)).unwrap();
    let _guard = common::exclusive();
    // 3,000 tokens would keep the one slot busy for half a minute.
    let mut long = remote
        .generate(
            chat("Count to ten thousand.")
                .max_tokens(3000)
                .ignore_eos(true),
        )
        .unwrap();
    match long.blocking_next() {
        Some(GenerationEvent::Token(_)) => {}
        other => panic!("expected a token, got {other:?}"),
    }
    long.cancel();
    let mut stop = None;
    while let Some(ev) = long.blocking_next() {
        if let GenerationEvent::Done(s) = ev {
            stop = Some(s);
        }
    }
    assert_eq!(stop, Some(StopReason::Cancelled));
    // The dropped request stopped the server's generation: the next one is not queued
    // behind 3,000 tokens.
    let started = Instant::now();
    let next = remote
        .generate(chat("Say hi.").max_tokens(4))
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(next.usage.generated_tokens, 4);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the next request waited {:?}: the cancelled one was still running",
        started.elapsed()
    );
}

/// A home with one small repository indexed.
fn home_with_repo(dir: &Path) -> PathBuf {
    let repo = project::project(dir);
    let home = dir.join("home");
    common::workspace_add(&home, &repo);
    home
}

fn burrow(home: &Path, args: &[&str]) -> std::process::Output {
    burrow_env(home, args, &[])
}

fn burrow_env(home: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(args)
        .env("BURROW_HOME", home)
        .env_remove("BURROW_LOG")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn steps_of(out: &std::process::Output) -> Vec<Value> {
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["steps"].as_array().unwrap().clone()
}

#[test]
fn an_agent_run_through_llama_server_answers_as_in_process_and_names_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_repo(dir.path());
    let server = llama_server();
    let _guard = common::exclusive();
    let task = "Which function parses the wallet file?";
    let smol = common::smollm2();
    let here = burrow(
        &home,
        &[
            "ask",
            "-m",
            smol.to_str().unwrap(),
            "--max-steps",
            "3",
            // Burrow's own first steps are the comparison's fixed points; the model's route
            // would make the second step the model's, sampled with a penalty each backend
            // counts differently.
            "--no-route",
            "--json",
            task,
        ],
    );
    let there = burrow(
        &home,
        &[
            "ask",
            "--backend",
            &server.url,
            "--backend-llguidance",
            "--max-steps",
            "3",
            "--no-route",
            "--json",
            task,
        ],
    );
    let stderr = String::from_utf8_lossy(&there.stderr);
    assert!(
        stderr.contains(&server.url) && stderr.contains("llama-server"),
        "the run says where its model is: {stderr}"
    );
    let (here, there) = (steps_of(&here), steps_of(&there));
    assert_eq!(there.len(), here.len());
    // Burrow's own steps (the search with the task, the opening of its best match) are the
    // same; the model's answer cites what it cites in-process. Its text can differ, under the
    // same grammar (llguidance there too): llama-server's repetition penalty also counts the
    // prompt's last 64 tokens, the engine's only what the model wrote (the agent samples with
    // a penalty of 1.15), and the two llama.cpp builds differ in version (near ties go either
    // way: see the turn test above).
    for i in 0..2 {
        assert_eq!(here[i]["output"], there[i]["output"], "step {i}");
    }

    let last = there.last().unwrap();
    assert_eq!(last["citations"], here.last().unwrap()["citations"]);
    let step: Value = serde_json::from_str(last["output"].as_str().unwrap()).unwrap();
    assert_eq!(step["type"], "final", "{step}");
    // The run is kept with the server's address as its model.
    let runs = burrow(&home, &["runs", "list", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let models: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["model"].as_str())
        .collect();
    assert!(models.iter().any(|m| m.contains(&server.url)), "{models:?}");
}

fn expect_remote_error(e: LlmError, says: &str, retryable: bool) {
    let msg = e.to_string();
    assert!(msg.contains(says), "{msg:?} should say {says:?}");
    assert_eq!(e.is_retryable(), retryable, "{msg}");
}

fn run_to_error(model: &RemoteModel) -> (String, LlmError) {
    let mut g = model.generate(chat("hi")).unwrap();
    let mut text = String::new();
    while let Some(ev) = g.blocking_next() {
        match ev {
            GenerationEvent::Token(t) => text.push_str(&t),
            GenerationEvent::Error(e) => return (text, e),
            GenerationEvent::Done(s) => panic!("ended {s:?} after {text:?}, expected an error"),
            GenerationEvent::Usage(_) => {}
        }
    }
    panic!("no final event")
}

#[test]
fn a_failing_server_gives_a_clear_error_and_never_a_hang() {
    // Nothing listening.
    let port = free_port();
    let e =
        RemoteModel::connect(RemoteOptions::new(format!("http://127.0.0.1:{port}"))).unwrap_err();
    expect_remote_error(e, "cannot connect", true);

    // A model the server does not have: the ones it has are named.
    let s = fault_server("cut");
    let mut o = RemoteOptions::new(&s.url);
    o.model = Some("gpt-9".into());
    match RemoteModel::connect(o) {
        Err(LlmError::ModelNotFound { available, .. }) => assert_eq!(available, ["fault-model"]),
        other => panic!("{other:?}"),
    }

    // Cut mid-stream: what came is kept, the error says the stream ended early.
    let m = RemoteModel::connect(RemoteOptions::new(&s.url)).unwrap();
    let (text, e) = run_to_error(&m);
    assert_eq!(text, "Hello");
    expect_remote_error(e, "closed the stream before the reply was complete", true);

    let s = fault_server("malformed");
    let m = RemoteModel::connect(RemoteOptions::new(&s.url)).unwrap();
    let (_, e) = run_to_error(&m);
    expect_remote_error(e, "malformed event in the stream", false);

    let s = fault_server("error-event");
    let m = RemoteModel::connect(RemoteOptions::new(&s.url)).unwrap();
    let (_, e) = run_to_error(&m);
    expect_remote_error(e, "out of memory on the GPU", false);

    // A refused key: the server's message and a hint, never the key.
    let s = fault_server("unauthorized");
    let mut o = RemoteOptions::new(&s.url);
    o.api_key = Some(ApiKey::new("sk-do-not-print-me"));
    let m = RemoteModel::connect(o).unwrap();
    let (_, e) = run_to_error(&m);
    assert!(!e.to_string().contains("do-not-print-me"));
    assert!(!format!("{e:?} {m:?}").contains("do-not-print-me"));
    expect_remote_error(e, "Invalid API key", false);

    // Busy while loading (503), then fine: retried, and the reply is whole.
    let s = fault_server("busy-then-ok");
    let m = RemoteModel::connect(RemoteOptions::new(&s.url)).unwrap();
    let c = m.generate(chat("hi")).unwrap().complete().unwrap();
    assert_eq!(c.text, "Hello world");
    assert_eq!(c.usage.generated_tokens, 2);

    // Said to have llguidance, a llama-server built without it that refuses a `%llguidance`
    // grammar (the newest builds; older ones abort): the step goes again as GBNF, and later
    // steps go as GBNF from the start. Not said to, it gets GBNF only.
    let s = fault_server("no-llguidance");
    let mut o = RemoteOptions::new(&s.url);
    o.llguidance = true;
    let m = RemoteModel::connect(o).unwrap();
    assert_eq!(m.info().kind, ServerKind::LlamaServer);
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
    let step = |m: &RemoteModel| {
        let c = m
            .generate(chat("hi").grammar(Grammar::JsonSchema(schema.clone())))
            .unwrap()
            .complete()
            .unwrap();
        assert_eq!(c.text, "{\"a\": 1}");
        assert!(!c.usage.unconstrained);
    };
    let sent = || -> Vec<String> { serde_json::from_str(&http_get(&s.url, "/grammars")).unwrap() };
    step(&m);
    step(&m);
    let grammars = sent();
    assert_eq!(grammars.len(), 3, "{grammars:?}");
    assert!(grammars[0].starts_with("%llguidance"), "{grammars:?}");
    assert!(
        grammars[1..].iter().all(|g| g.contains("root ::=")),
        "{grammars:?}"
    );
    step(&RemoteModel::connect(RemoteOptions::new(&s.url)).unwrap());
    let grammars = sent();
    assert_eq!(grammars.len(), 4, "{grammars:?}");
    assert!(grammars[3].contains("root ::="), "{grammars:?}");

    // Silent: the idle timeout ends it, after the retries.
    let s = fault_server("silent");
    let mut o = RemoteOptions::new(&s.url);
    o.idle_timeout = Duration::from_millis(300);
    let m = RemoteModel::connect(o).unwrap();
    let (_, e) = run_to_error(&m);
    expect_remote_error(e, "no answer within", true);
}

#[test]
fn a_remote_backend_is_added_by_name_listed_used_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let s = fault_server("busy-then-ok");
    let key = [("GPU_KEY", "sk-never-saved")];
    let add = burrow_env(
        &home,
        &[
            "models",
            "add-remote",
            &s.url,
            "--name",
            "gpu-box",
            "--api-key-env",
            "GPU_KEY",
        ],
        &key,
    );
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let config = std::fs::read_to_string(home.join("config.json")).unwrap();
    assert!(
        config.contains("GPU_KEY") && !config.contains("sk-never-saved"),
        "{config}"
    );

    let list = burrow_env(&home, &["models", "list", "--json"], &key);
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "gpu-box")
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(entry["remote"], true);
    assert_eq!(entry["reachable"], true);
    assert_eq!(entry["info"]["model"], "fault-model");

    // Without its key's variable set, it says which variable.
    let out = burrow(&home, &["chat", "-m", "gpu-box", "hi", "--json"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("GPU_KEY"));

    let out = burrow_env(&home, &["chat", "-m", "gpu-box", "hi", "--json"], &key);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["text"], "Hello world");
    assert!(reply["model"].as_str().unwrap().contains(&s.url));

    let out = burrow(&home, &["models", "remove-remote", "gpu-box"]);
    assert!(out.status.success());
    let config = std::fs::read_to_string(home.join("config.json")).unwrap();
    assert!(!config.contains("gpu-box"), "{config}");
    let out = burrow(&home, &["models", "remove-remote", "gpu-box"]);
    assert!(
        !out.status.success(),
        "removing it twice says it is not there"
    );
}

/// A stream whose body ends after its finish reason without `[DONE]` counts as whole, and its
/// tool calls are passed on: they were flushed at `[DONE]` alone, so the step got an empty
/// reply (found in review).
#[test]
fn streamed_tool_calls_survive_a_stream_without_done() {
    let s = fault_server("tools-no-done");
    let m = RemoteModel::connect(RemoteOptions::new(&s.url)).unwrap();
    let c = m
        .generate(chat("weather in Paris?"))
        .unwrap()
        .complete()
        .unwrap();
    assert!(
        c.text.contains("get_weather") && c.text.contains("Paris"),
        "the call was lost: {c:?}"
    );
}

// ---- Streams as servers write them, from scripted raw HTTP servers (found in review) ----

type Reply = Box<dyn Fn(&mut std::net::TcpStream) + Send + Sync>;

/// A server that lists one model, answers 404 elsewhere on GET, and answers the n-th POST
/// with `replies[n]` (the last one again past the end), written byte for byte, then closes.
fn scripted_bytes(replies: Vec<Reply>) -> String {
    scripted_full(
        r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#,
        replies,
    )
    .0
}

/// As `scripted_bytes`, with `/v1/models` answering `models`; also the POST bodies.
fn scripted_full(
    models: &'static str,
    replies: Vec<Reply>,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = bodies.clone();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let replies = std::sync::Arc::new(replies);
    let posts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let replies = replies.clone();
            let posts = posts.clone();
            let seen = seen.clone();
            std::thread::spawn(move || {
                let _ = s.set_nodelay(true);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if s.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let len = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                let mut body = vec![0u8; len];
                let _ = s.read_exact(&mut body);
                if head.starts_with("POST ") {
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&body).to_string());
                }
                if head.starts_with("GET /v1/models") {
                    let b = models;
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                        b.len()
                    );
                } else if head.starts_with("GET ") {
                    let _ = write!(
                        s,
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                } else {
                    let n = posts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    replies[n.min(replies.len() - 1)](&mut s);
                }
                let _ = s.flush();
            });
        }
    });
    (url, bodies)
}

fn write_bytes(s: &mut std::net::TcpStream, bytes: &[u8]) {
    use std::io::Write;
    let _ = s.write_all(bytes);
    let _ = s.flush();
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

/// Every event of a generation until its end, or what came when `secs` ran out.
fn events_of(
    model: &RemoteModel,
    request: GenerateRequest,
    secs: u64,
) -> Result<(String, Result<StopReason, LlmError>), String> {
    let mut g = model.generate(request).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        while let Some(ev) = g.blocking_next() {
            match ev {
                GenerationEvent::Token(t) => text.push_str(&t),
                GenerationEvent::Usage(_) => {}
                GenerationEvent::Done(s) => {
                    let _ = tx.send((text, Ok(s)));
                    return;
                }
                GenerationEvent::Error(e) => {
                    let _ = tx.send((text, Err(e)));
                    return;
                }
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .map_err(|_| format!("no end within {secs} s: the run hangs"))
}

fn delta_chunk(text: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
        .to_string()
}

fn finish_chunk(reason: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string()
}

/// Valid SSE variations are read: CRLF line ends, comments, `event:`/`id:` fields, a
/// payload over two `data:` lines, `data:` without a space, every byte its own write (a
/// UTF-8 character split), and no newline after `[DONE]`.
#[test]
fn sse_variations_are_read_as_one_reply() {
    let stream = format!(
        ": keep-alive\r\n\r\nevent: message\r\nid: 1\r\ndata: {}\r\n\r\ndata:{}\r\n\r\ndata: {{\"choices\": [{{\"index\": 0,\r\ndata: \"delta\": {{\"content\": \"日本\"}}, \"finish_reason\": \"stop\"}}]}}\r\n\r\ndata: [DONE]",
        delta_chunk("Hé"),
        delta_chunk("llo "),
    );
    let url = scripted_bytes(vec![Box::new(move |s| {
        write_bytes(s, SSE_HEAD);
        for b in stream.as_bytes() {
            write_bytes(s, &[*b]);
            std::thread::sleep(Duration::from_micros(300));
        }
    })]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    let (text, end) = events_of(&m, chat("hi"), 20).unwrap();
    assert_eq!(text, "Héllo 日本");
    assert!(matches!(end, Ok(StopReason::EndOfTurn)), "{end:?}");
}

/// Ollama (issue ollama/ollama#15457, still so for models without a registered parser,
/// #15497) streams every tool call whole with `index: 0`, each with its own id: two calls in
/// one reply must stay two calls, not one with names and arguments run together.
#[test]
fn tool_calls_that_all_say_index_0_stay_separate() {
    let call = |id: &str, path: &str| {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id,
            "type": "function", "function": {"name": "read_file",
            "arguments": json!({"path": path}).to_string()}}]}, "finish_reason": null}]})
        .to_string()
    };
    let (a, b) = (call("call_a", "a.rs"), call("call_b", "b.rs"));
    let url = scripted_bytes(vec![Box::new(move |s| {
        write_bytes(s, SSE_HEAD);
        for e in [&a, &b, &finish_chunk("tool_calls"), &"[DONE]".to_string()] {
            write_bytes(s, format!("data: {e}\n\n").as_bytes());
        }
    })]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    let (text, end) = events_of(&m, chat("read a.rs and b.rs"), 20).unwrap();
    assert!(end.is_ok(), "{end:?}");
    assert!(
        !text.contains("read_fileread_file"),
        "two calls run together: {text}"
    );
    assert_eq!(text.matches("<tool_call>").count(), 2, "{text}");
}

/// A stream cut in the middle of a tool call (nothing shown yet, so retried) and then
/// answered whole: the reply is the second attempt's call alone, not both attempts' deltas
/// appended into one call.
#[test]
fn a_tool_call_cut_and_retried_is_not_doubled() {
    let first = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
        "id": "call_1", "type": "function", "function": {"name": "get_weather",
        "arguments": "{\"city\": \"Par"}}]}, "finish_reason": null}]})
    .to_string();
    let whole = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
        "id": "call_2", "type": "function", "function": {"name": "get_weather",
        "arguments": "{\"city\": \"Paris\"}"}}]}, "finish_reason": null}]})
    .to_string();
    let url = scripted_bytes(vec![
        Box::new(move |s| {
            write_bytes(s, SSE_HEAD);
            write_bytes(s, format!("data: {first}\n\n").as_bytes());
        }),
        Box::new(move |s| {
            write_bytes(s, SSE_HEAD);
            for e in [&whole, &finish_chunk("tool_calls"), &"[DONE]".to_string()] {
                write_bytes(s, format!("data: {e}\n\n").as_bytes());
            }
        }),
    ]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    let (text, end) = events_of(&m, chat("weather in Paris?"), 20).unwrap();
    assert!(end.is_ok(), "{end:?}");
    let call = text
        .strip_prefix("<tool_call>\n")
        .and_then(|t| t.strip_suffix("\n</tool_call>"))
        .unwrap_or_default();
    let call: Value = serde_json::from_str(call).unwrap_or_default();
    assert_eq!(
        call,
        json!({"name": "get_weather", "arguments": {"city": "Paris"}}),
        "{text}"
    );
}

/// llama-server before its HTTP rewrite streamed a failure as an `error:` event, then
/// `data: [DONE]` (server.cpp: `server_sent_event(sink, "error", error_data)`): the reply is
/// an error with the server's message, not a whole-looking answer.
#[test]
fn an_error_event_field_is_not_a_complete_reply() {
    let url = scripted_bytes(vec![Box::new(move |s| {
        write_bytes(s, SSE_HEAD);
        write_bytes(s, format!("data: {}\n\n", delta_chunk("Hello")).as_bytes());
        write_bytes(
            s,
            b"error: {\"code\":500,\"message\":\"failed to decode the batch\",\"type\":\"server_error\"}\n\n",
        );
        write_bytes(s, b"data: [DONE]\n\n");
    })]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    let (text, end) = events_of(&m, chat("hi"), 20).unwrap();
    match end {
        Err(e) => assert!(e.to_string().contains("failed to decode"), "{e}"),
        Ok(s) => panic!("ended {s:?} after {text:?}: the server's error was dropped"),
    }
}

/// An error status whose body never comes (a proxy that sent its headers and stalled): the
/// idle timeout ends it, as it ends a silent stream.
#[test]
fn an_error_status_with_a_stalled_body_does_not_hang() {
    let url = scripted_bytes(vec![Box::new(move |s| {
        write_bytes(
            s,
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 500\r\n\r\n<html>",
        );
        std::thread::sleep(Duration::from_secs(120));
    })]);
    let mut o = RemoteOptions::new(&url);
    o.idle_timeout = Duration::from_millis(300);
    let m = RemoteModel::connect(o).unwrap();
    let (_, end) = events_of(&m, chat("hi"), 15).unwrap();
    assert!(end.is_err(), "{end:?}");
}

/// `finish_reason: "length"` under `max_tokens` from a server that sends no usage, its
/// tokens two to a delta: the step was cut by the token limit, not by a full context (which
/// makes the agent summarize its history and start the step over).
#[test]
fn length_without_usage_is_the_token_limit() {
    let url = scripted_bytes(vec![Box::new(move |s| {
        write_bytes(s, SSE_HEAD);
        for e in [
            delta_chunk("Hello wor"),
            delta_chunk("ld again"),
            finish_chunk("length"),
        ] {
            write_bytes(s, format!("data: {e}\n\n").as_bytes());
        }
        write_bytes(s, b"data: [DONE]\n\n");
    })]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    let (_, end) = events_of(&m, chat("hi").max_tokens(4), 20).unwrap();
    assert!(matches!(end, Ok(StopReason::MaxTokens)), "{end:?}");
}

/// An event whose data is empty (`data:` alone, a heartbeat) dispatches nothing under the
/// SSE standard (WHATWG HTML 9.2.6: "If the data buffer is an empty string ... return").
#[test]
fn an_empty_data_heartbeat_is_no_event() {
    let url = scripted_bytes(vec![Box::new(move |s| {
        write_bytes(s, SSE_HEAD);
        write_bytes(s, format!("data: {}\n\n", delta_chunk("Hello")).as_bytes());
        write_bytes(s, b"data:\n\n");
        write_bytes(s, format!("data: {}\n\n", finish_chunk("stop")).as_bytes());
        write_bytes(s, b"data: [DONE]\n\n");
    })]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    let (text, end) = events_of(&m, chat("hi"), 20).unwrap();
    assert!(end.is_ok(), "{end:?}");
    assert_eq!(text, "Hello");
}

/// Lines ended by a lone CR are valid SSE (WHATWG: end-of-line = CRLF / LF / CR).
#[test]
fn cr_line_ends_are_read() {
    let url = scripted_bytes(vec![Box::new(move |s| {
        write_bytes(s, SSE_HEAD);
        for e in [
            delta_chunk("Hello"),
            finish_chunk("stop"),
            "[DONE]".to_string(),
        ] {
            write_bytes(s, format!("data: {e}\r\r").as_bytes());
        }
    })]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    let (text, end) = events_of(&m, chat("hi"), 20).unwrap();
    assert!(end.is_ok(), "{end:?}");
    assert_eq!(text, "Hello");
}

/// vLLM reads the repetition penalty as `repetition_penalty` (its ChatCompletionRequest; an
/// unknown `repeat_penalty` is ignored with a warning): the agent's penalty must reach it.
#[test]
fn vllm_gets_the_repetition_penalty_under_its_own_name() {
    let (url, bodies) = scripted_full(
        r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":8192}]}"#,
        vec![Box::new(move |s| {
            write_bytes(s, SSE_HEAD);
            write_bytes(
                s,
                format!("data: {}\n\ndata: [DONE]\n\n", finish_chunk("stop")).as_bytes(),
            );
        })],
    );
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    assert_eq!(m.info().kind, ServerKind::Vllm);
    let mut sampling = SamplingParams::greedy();
    sampling.repeat_penalty = 1.15;
    let (_, end) = events_of(&m, chat("hi").sampling(sampling), 20).unwrap();
    assert!(end.is_ok(), "{end:?}");
    let body: Value = serde_json::from_str(&bodies.lock().unwrap()[0]).unwrap();
    let p = body.get("repetition_penalty").and_then(Value::as_f64);
    assert!(
        p.is_some_and(|p| (p - 1.15).abs() < 1e-3),
        "vLLM gets no repetition_penalty: {body}"
    );
}

/// Stop works while a server that accepted the request stays silent, and while an
/// error status's body stalls.
#[test]
fn stop_ends_a_request_the_server_never_answers() {
    let url = scripted_bytes(vec![
        Box::new(|_s| std::thread::sleep(Duration::from_secs(120))),
        Box::new(|s| {
            write_bytes(
                s,
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 500\r\n\r\n<html>",
            );
            std::thread::sleep(Duration::from_secs(120));
        }),
    ]);
    let m = RemoteModel::connect(RemoteOptions::new(&url)).unwrap();
    for _ in 0..2 {
        let mut g = m.generate(chat("hi")).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let t = Instant::now();
        g.cancel();
        let mut last = None;
        while let Some(ev) = g.blocking_next() {
            last = Some(ev);
        }
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(
            matches!(last, Some(GenerationEvent::Done(StopReason::Cancelled))),
            "{last:?}"
        );
    }
}
