//! `burrow serve`, the model over the OpenAI API, used as users' programs use it:
//! by the official `openai` Python client (PyPI `openai`, installed into tests/.venv by the
//! README's test command; tests/serve/client.py) against the real server process serving
//! SmolLM2 and all-MiniLM-L6-v2, and by Burrow's own remote backend. The API's shapes, errors
//! and queue over a scripted model: src/app/serve/tests.rs.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use burrow::llm::remote::{RemoteModel, RemoteOptions};
use burrow::llm::{ChatMessage, GenerateRequest, LanguageModel, Prompt, SamplingParams};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    let venv = root().join("tests/.venv/bin/python");
    assert!(
        venv.exists(),
        "the openai client is missing at {}: run scripts/setup.sh --test",
        venv.display()
    );
    venv
}

/// The catalogue's embedding model, converted from its wheel (fetched by the test command).
fn minilm() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| common::convert_minilm("serve-minilm"))
}

/// `burrow serve` on a free port, killed when the test ends.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(home: &Path, args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["serve", "--port", "0"])
        .args(args)
        .env("BURROW_HOME", home)
        .env_remove("BURROW_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // The first line on stdout is the base URL, once the server listens.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("burrow serve said where it listens");
    let url = line.trim().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"),
        "{url:?}"
    );
    Served { child, url }
}

#[test]
fn the_openai_client_uses_burrow_serve_as_it_would_openai() {
    // One model test at a time: the disconnect check compares times, and two models decoding
    // at once on two cores would blur them.
    let (_guard, here) = common::model();
    let home = tempfile::tempdir().unwrap();
    let smollm2 = common::smollm2();
    let server = serve(
        home.path(),
        &[
            "-m",
            smollm2.to_str().unwrap(),
            "--ctx",
            "2048",
            "--threads",
            "2",
            "--embedding-model",
            minilm().to_str().unwrap(),
        ],
    );
    // Burrow's own remote backend reads the server's context and gets what the model in
    // this process writes, token for token (first, while neither has a prompt cached: a
    // prompt evaluated in other pieces rounds differently).
    let remote =
        RemoteModel::connect(RemoteOptions::new(server.url.trim_end_matches("/v1"))).unwrap();
    assert_eq!(remote.descriptor().context_length, 2048);
    let ask = || {
        GenerateRequest::new(Prompt::chat(vec![ChatMessage::user("Tell me about owls.")]))
            .sampling(SamplingParams::greedy())
            .max_tokens(20)
    };
    let there = remote.generate(ask()).unwrap().complete().unwrap();
    let here = here.generate(ask()).unwrap().complete().unwrap();
    assert_eq!(there.text, here.text);
    assert_eq!(there.usage.generated_tokens, 20);
    let out = Command::new(python())
        .arg(root().join("tests/serve/client.py"))
        .args([&server.url, "all-MiniLM-L6-v2.F16"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &r;

    assert_eq!(r["models"][0], "SmolLM2-135M-Instruct", "{r}");
    // Greedy: the streamed reply is the whole one, piece by piece.
    let whole = &r["whole"];
    assert!(!whole["text"].as_str().unwrap().is_empty());
    assert_eq!(whole["text"], r["streamed"]["text"]);
    assert_eq!(whole["finish"], "length");
    assert_eq!(r["streamed"]["finish"], "length");
    assert_eq!(whole["usage"]["completion_tokens"], 24);
    assert_eq!(r["streamed"]["usage"]["completion_tokens"], 24);

    // Tool calls: held to the schema, whole or streamed, and their results taken back.
    for key in ["tool_call", "tool_call_streamed"] {
        let t = &r[key];
        assert_eq!(t["finish"], "tool_calls", "{key}: {t}");
        let calls = t["calls"].as_array().unwrap();
        assert!(!calls.is_empty(), "{key}: {t}");
        for c in calls {
            assert_eq!(c["name"], "get_weather", "{key}: {t}");
            assert!(c["arguments"]["city"].is_string(), "{key}: {t}");
        }
    }
    assert_eq!(
        r["tool_call"]["calls"][0]["arguments"],
        r["tool_call_streamed"]["calls"][0]["arguments"]
    );
    let answer = &r["tool_answer"];
    assert!(answer["calls"].is_null(), "{answer}");
    assert!(
        !answer["text"].as_str().unwrap().trim().is_empty(),
        "{answer}"
    );

    let js = &r["json_schema"];
    assert!(js["city"].is_string() && js["population"].is_i64(), "{js}");
    assert_eq!(js.as_object().unwrap().len(), 2, "{js}");
    assert!(!r["completion"]["text"].as_str().unwrap().is_empty());

    // The second request shares the first's system prompt, and the KV cache still has it.
    let cached = r["cached"][1].as_u64().unwrap();
    assert!(cached >= 50, "{}", r["cached"]);

    let e = &r["embeddings"];
    assert_eq!(e["n"], 3);
    assert_eq!(e["dims"], serde_json::json!([384, 384, 384]));
    assert_eq!(e["same_as_float"], true, "base64 and float say the same");
    assert!(
        e["near"].as_f64().unwrap() > e["far"].as_f64().unwrap() + 0.3,
        "{e}"
    );

    // Eight clients at once: every one answered whole.
    let concurrent = r["concurrent"].as_array().unwrap();
    assert_eq!(concurrent.len(), 8);
    for c in concurrent {
        assert_eq!(c["finish"], "length", "{c}");
        assert!(c["pieces"].as_u64().unwrap() > 0, "{c}");
    }

    // The client that left stopped its generation: the next request did not wait for it.
    let d = &r["disconnect"];
    assert_eq!(d["next_finish"], "length");
    assert!(
        d["next_wait_s"].as_f64().unwrap() < d["abandoned_would_take_s"].as_f64().unwrap() / 4.0,
        "{d}"
    );
    assert_eq!(r["bad_role"]["status"], 400);
    assert_eq!(r["bad_role"]["param"], "messages[0].role");
}

/// Native tool calls through a server: the tool-calls protocol's path over a remote backend.
/// Qwen2.5-Coder (the default model, whose template shows tools itself) is served; Burrow's
/// remote backend sends the tools, and the call the server returns as `tool_calls` comes back
/// as the Hermes text the protocol reads.
#[test]
fn a_tool_call_made_behind_burrow_serve_reaches_the_remote_backend() {
    let qwen = root().join("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    assert!(
        qwen.is_file(),
        "the default model is missing: run scripts/setup.sh --test"
    );
    let _guard = common::exclusive();
    let home = tempfile::tempdir().unwrap();
    let server = serve(
        home.path(),
        &[
            "-m",
            qwen.to_str().unwrap(),
            "--ctx",
            "1024",
            "--threads",
            "2",
        ],
    );
    let remote =
        RemoteModel::connect(RemoteOptions::new(server.url.trim_end_matches("/v1"))).unwrap();
    let tools = vec![serde_json::json!({"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}})];
    let request = GenerateRequest::new(Prompt::Chat {
        messages: vec![ChatMessage::user("What is the weather in Paris?")],
        tools: Some(tools),
        untrusted: Vec::new(),
    })
    .sampling(SamplingParams::greedy())
    .max_tokens(60);
    let out = remote.generate(request).unwrap().complete().unwrap();
    let call = out
        .text
        .strip_prefix("<tool_call>\n")
        .and_then(|t| t.strip_suffix("\n</tool_call>"))
        .unwrap_or_else(|| panic!("not one call: {:?}", out.text));
    let call: Value = serde_json::from_str(call).unwrap();
    assert_eq!(call["name"], "get_weather", "{call}");
    assert_eq!(call["arguments"]["city"], "Paris", "{call}");
}

#[test]
fn a_missing_key_variable_or_a_taken_port_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["serve", "--api-key-env", "BURROW_TEST_NO_SUCH_VAR"])
        .env("BURROW_HOME", home.path())
        .env_remove("BURROW_TEST_NO_SUCH_VAR")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BURROW_TEST_NO_SUCH_VAR"), "{err}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["serve", "-m"])
        .arg(common::smollm2())
        .args(["--port", &port])
        .env("BURROW_HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{:?}", started.elapsed());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{err}"
    );
}
