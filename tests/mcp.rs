//! MCP both ways. `burrow mcp` serves the workspace tools to other agents over MCP on stdio,
//! driven here by the official MCP Python client (PyPI `mcp`, installed into tests/.venv by
//! `scripts/setup.sh --test`), as Claude Code or Goose would drive it; and the MCP servers the
//! settings name (over stdio or Streamable HTTP) lend their tools to the agent.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::git;
use serde_json::{json, Value};

fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/.venv/bin/python");
    assert!(
        venv.exists(),
        "the MCP client is missing at {}: run scripts/setup.sh --test",
        venv.display()
    );
    venv
}

/// A home with one small repository indexed.
fn home_with_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("app");
    std::fs::create_dir_all(repo.join("src/net")).unwrap();
    let who = ("Ann", "ann@x.org");
    git(
        &repo,
        &["init", "-q", "-b", "main"],
        "2024-01-01T00:00:00Z",
        who,
    );
    std::fs::write(
        repo.join("src/net/client.rs"),
        "/// Connects, retrying with exponential backoff.\npub fn connect() {\n    retry_with_backoff(3);\n}\n",
    )
    .unwrap();
    std::fs::write(repo.join("README.md"), "# App\n\nA client that retries.\n").unwrap();
    git(&repo, &["add", "-A"], "2024-01-01T00:00:00Z", who);
    git(
        &repo,
        &["commit", "-q", "-m", "Retry connections with backoff"],
        "2024-01-01T00:00:00Z",
        who,
    );
    let home = dir.join("home");
    common::workspace_add(&home, &repo);
    home
}

/// An app whose settings name these MCP servers, in a home under `dir`.
fn app_with(dir: &Path, servers: Value) -> burrow::app::App {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("settings.json"),
        json!({ "mcp_servers": servers }).to_string(),
    )
    .unwrap();
    burrow::app::App::open(burrow::config::BurrowHome::new(&home)).unwrap()
}

/// Runs the client against `burrow mcp` with these calls; what it saw, as JSON.
fn client(home: &Path, calls: Value) -> Value {
    let out = common::output_within(
        Command::new(python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py"))
            .arg(env!("CARGO_BIN_EXE_burrow"))
            .arg(home)
            .arg(calls.to_string()),
        std::time::Duration::from_secs(120),
        "the MCP client",
    );
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "client printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn another_agent_lists_and_calls_the_workspace_tools_over_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_repo(dir.path());
    let seen = client(
        &home,
        json!([
            {"name": "search", "arguments": {"query": "retry backoff"}},
            {"name": "read_file", "arguments": {"path": "src/net/client.rs"}},
            {"name": "read_file", "arguments": {"path": "../../../../etc/passwd"}},
            {"name": "search", "arguments": {}},
            {"name": "get_issue", "arguments": {"number": 4242}},
            {"name": "rm_rf", "arguments": {"path": "/"}},
        ]),
    );
    assert_eq!(seen["server"], "burrow");

    // The same tools, names, descriptions and arguments as `burrow tool --list`, each read-only.
    let listed = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["tool", "--list", "--json"])
        .env("BURROW_HOME", &home)
        .output()
        .unwrap();
    let specs: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let tools = seen["tools"].as_array().unwrap();
    assert_eq!(tools.len(), specs.len());
    for (tool, spec) in tools.iter().zip(&specs) {
        assert_eq!(tool["name"], spec["name"]);
        assert_eq!(tool["description"], spec["description"]);
        assert_eq!(tool["inputSchema"], spec["parameters"], "{}", spec["name"]);
        assert_eq!(tool["readOnly"], true, "{}", spec["name"]);
    }

    let calls = seen["calls"].as_array().unwrap();
    let (found, opened, escape, no_query, no_issue, unknown) = (
        &calls[0], &calls[1], &calls[2], &calls[3], &calls[4], &calls[5],
    );
    assert_eq!(found["isError"], false, "{found}");
    assert!(
        found["text"]
            .as_str()
            .unwrap()
            .contains("src/net/client.rs"),
        "{found}"
    );
    assert!(found["structured"].is_object(), "{found}");
    assert_eq!(opened["isError"], false, "{opened}");
    assert!(
        opened["text"]
            .as_str()
            .unwrap()
            .contains("retry_with_backoff(3)"),
        "{opened}"
    );
    // A tool's failure is a result the calling agent reads, not a broken session.
    assert_eq!(escape["isError"], true, "{escape}");
    assert!(
        !escape["text"].as_str().unwrap().contains("root:"),
        "{escape}"
    );
    assert_eq!(no_query["isError"], true, "{no_query}");
    assert!(
        no_query["text"]
            .as_str()
            .unwrap()
            .contains("invalid arguments"),
        "{no_query}"
    );
    assert_eq!(no_issue["isError"], true, "{no_issue}");
    assert!(
        no_issue["text"].as_str().unwrap().contains("4242"),
        "{no_issue}"
    );
    // A tool that does not exist cannot be routed: a protocol error naming the real ones.
    let refused = unknown["protocolError"].as_str().unwrap_or_default();
    assert!(
        refused.contains("rm_rf") && refused.contains("read_file"),
        "{unknown}"
    );
}

/// Issue 19: the MCP servers named in the settings start for a run and their tools join the
/// toolbelt as `<server>__<tool>`, called as the agent calls any tool. A real server from PyPI
/// (mcp-server-time) answers; one that cannot start, one that never answers and one that speaks
/// something other than JSON-RPC are each a line saying why, and cost the others nothing.
#[test]
fn tools_of_the_mcp_servers_in_the_settings_join_the_toolbelt() {
    let dir = tempfile::tempdir().unwrap();
    let time_server = python().with_file_name("mcp-server-time");
    let pid_file = dir.path().join("noise-child.pid");
    let mut app = app_with(
        dir.path(),
        json!([
            {"name": "time", "command": time_server, "args": ["--local-timezone", "UTC"]},
            {"name": "missing", "command": dir.path().join("no-such-server")},
            {"name": "mute", "command": "sleep", "args": ["30"], "timeout_secs": 2},
            {"name": "noise", "command": "sh",
             "args": ["-c", format!("sleep 30 & echo $! > {}; echo hello; wait", pid_file.display())],
             "timeout_secs": 2},
        ]),
    );
    // Opening the app starts none of them.
    assert!(app.tool_spec("time__get_current_time").is_none());
    let problems = app.connect_mcp_servers();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].contains("\"missing\"") && problems[0].contains("cannot start"),
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("\"mute\"") && problems[1].contains("within 2 s"),
        "{problems:#?}"
    );
    assert!(problems[2].contains("\"noise\""), "{problems:#?}");
    // A server given up on is stopped with everything it started: the shell's own child was
    // left running before.
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        // SAFETY: signal 0 only asks whether the process exists.
        unsafe { libc::kill(child, 0) != 0 }
    });
    assert!(gone, "the noise server's child {child} is still running");

    let spec = app.tool_spec("time__get_current_time").unwrap();
    assert!(
        spec.parameters["properties"]["timezone"].is_object(),
        "{spec:?}"
    );
    assert!(app.tool_spec("time__convert_time").is_some());
    // The workspace's own tools are all still there.
    assert!(app.tool_spec("search").is_some() && app.tool_spec("read_file").is_some());

    let now = app
        .call_tool(
            "time__get_current_time",
            json!({"timezone": "Europe/Paris"}),
        )
        .unwrap();
    assert!(now.text.contains("Europe/Paris"), "{}", now.text);
    assert!(now.text.contains("datetime"), "{}", now.text);
    // The server's own refusal is an observation for the model.
    let err = app
        .call_tool(
            "time__get_current_time",
            json!({"timezone": "Mars/Olympus"}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("Mars/Olympus"), "{err}");
}

/// Issue 19: an MCP server's tool is one of the agent's own: the step grammar offers it with its
/// schema (a call with a timezone is accepted, a made-up argument is not), the run calls it, and
/// the server's answer is the step's observation.
#[test]
fn the_agent_calls_an_mcp_servers_tool_under_its_step_grammar() {
    use burrow::agent::protocol::{Action, Protocol};
    use burrow::agent::record::RunStatus;
    use burrow::agent::AgentConfig;
    use burrow::llm::engine::CancelToken;
    use burrow::llm::fake::{FakeModel, FakeTurn};
    use burrow::llm::grammar::Grammar;

    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(
        dir.path(),
        json!([{"name": "time",
            "command": python().with_file_name("mcp-server-time"),
            "args": ["--local-timezone", "UTC"]}]),
    );
    assert!(app.connect_mcp_servers().is_empty());
    let step = |tool: &str, args: Value| {
        json!({"type": "tool", "thinking": "ask the clock", "tool_name": tool, "tool_args": args})
            .to_string()
    };
    let model = FakeModel::new([
        FakeTurn::text(&step(
            "time__get_current_time",
            json!({"timezone": "Asia/Tokyo"}),
        )),
        FakeTurn::text(
            &json!({"type": "final", "thinking": "done", "final": "It is evening in Tokyo."})
                .to_string(),
        ),
    ]);
    let agent = app
        .agent(
            &model,
            AgentConfig {
                search_first: false,
                ..Default::default()
            },
        )
        .unwrap();
    let outcome = agent.run(
        "What time is it in Tokyo?",
        &CancelToken::new(),
        &mut |_| {},
    );
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let observed = outcome.steps[0].observation.clone().unwrap_or_default();
    assert!(observed.contains("Asia/Tokyo"), "{observed}");

    // The step as the model would write it under the grammar.
    let written = |args: Value| {
        Protocol::JsonTyped.write_call(
            "ask the clock",
            &Action {
                tool: "time__get_current_time".into(),
                args: args.as_object().unwrap().clone(),
            },
        )
    };
    let grammar = model.requests()[0].grammar.clone().unwrap();
    let g = Grammar::JsonSchema(serde_json::from_str(&grammar).unwrap());
    assert!(g
        .accepts(&written(json!({"timezone": "Europe/Paris"})))
        .unwrap());
    // Its required argument is required.
    assert!(!g.accepts(&written(json!({}))).unwrap());
}

/// Issue 19: a server that hangs on a call or dies in the middle of one costs the run a bounded
/// wait and an observation saying so, never the run: the hung call is retryable, the dead
/// server's every later call fails at once.
#[test]
fn an_mcp_server_that_hangs_or_dies_mid_call_is_an_observation() {
    use burrow::tools::ToolError;

    let dir = tempfile::tempdir().unwrap();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/unreliable_server.py");
    let mut app = app_with(
        dir.path(),
        json!([{"name": "shaky", "command": python(), "args": [server],
                                "timeout_secs": 3}]),
    );
    assert!(app.connect_mcp_servers().is_empty());
    let echoed = app.call_tool("shaky__echo", json!({"text": "hi"})).unwrap();
    assert_eq!(echoed.text, "hi");

    let hung = app.call_tool("shaky__hang", json!({})).unwrap_err();
    assert!(
        matches!(&hung, ToolError::Transient(m) if m.contains("within 3 s")),
        "{hung:?}"
    );
    // The session survives a call given up on.
    assert_eq!(
        app.call_tool("shaky__echo", json!({"text": "still here"}))
            .unwrap()
            .text,
        "still here"
    );

    let died = app.call_tool("shaky__crash", json!({})).unwrap_err();
    assert!(
        matches!(&died, ToolError::Failed(m) if m.contains("shaky")),
        "{died:?}"
    );
    let started = std::time::Instant::now();
    let after = app
        .call_tool("shaky__echo", json!({"text": "hi"}))
        .unwrap_err();
    assert!(matches!(&after, ToolError::Failed(_)), "{after:?}");
    // A guard against a hang, not a timing: a dead server fails at once, not at the timeout.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{after:?}"
    );
}

/// Issue 19: a server already running, named by its URL, is reached over Streamable HTTP; one
/// that is not there is a line saying so.
#[test]
fn an_mcp_server_named_by_url_is_reached_over_streamable_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/unreliable_server.py");
    let mut server = Command::new(python())
        .arg(script)
        .args(["http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut std::process::Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _kill = Kill(&mut server);
    let listening = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(listening, "the HTTP server did not start");

    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(
        dir.path(),
        json!([
            {"name": "remote", "url": format!("http://127.0.0.1:{port}/mcp")},
            {"name": "gone", "url": format!("http://127.0.0.1:{closed}/mcp"), "timeout_secs": 5},
        ]),
    );
    let problems = app.connect_mcp_servers();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("\"gone\""), "{problems:#?}");
    let echoed = app
        .call_tool("remote__echo", json!({"text": "over http"}))
        .unwrap();
    assert_eq!(echoed.text, "over http");
}

/// A file's contents returned as an embedded resource (as GitHub's server answers
/// `get_file_contents`) reach the model with where they are from: they were a placeholder,
/// "[content that is not text]" (found in review).
#[test]
fn an_embedded_text_resource_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("files_server.py");
    std::fs::write(
        &script,
        r#"
from mcp.server.mcpserver import MCPServer
from mcp.types import EmbeddedResource, TextResourceContents

server = MCPServer("files")

@server.tool()
def get_file(path: str) -> EmbeddedResource:
    """A file's contents, as an embedded resource."""
    return EmbeddedResource(type="resource", resource=TextResourceContents(
        uri=f"file:///{path}", mime_type="text/plain", text="fn main() { println!(\"hi\"); }"))

server.run("stdio")
"#,
    )
    .unwrap();
    let mut app = app_with(
        dir.path(),
        json!([{"name": "files", "command": python(), "args": [script]}]),
    );
    assert!(app.connect_mcp_servers().is_empty());
    let out = app
        .call_tool("files__get_file", json!({"path": "src/main.rs"}))
        .unwrap();
    assert!(
        out.text.contains("println!") && out.text.contains("file:///src/main.rs"),
        "the model saw: {:?}",
        out.text
    );
}

/// A server that fails at start says why in what it wrote to stderr, and the problem reported
/// carries it: its stderr went nowhere, and the problem said only that the connection closed
/// (found in review).
#[test]
fn a_server_that_exits_at_start_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with(
        dir.path(),
        json!([{"name": "git", "command": "sh",
                "args": ["-c", "echo 'error: /no/such/repo is not a git repository' >&2; exit 1"]}]),
    );
    let problems = app.connect_mcp_servers();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].contains("not a git repository"),
        "{problems:#?}"
    );
}

/// A tool whose result is a list (list_directory, search_commits, list_repositories)
/// reaches the client as its text, with the data as structured content; the list's JSON was put
/// before the text as a text block instead, and no structured content came (found in review).
#[test]
fn a_listing_reaches_the_client_as_its_text_and_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_repo(dir.path());
    let seen = client(
        &home,
        json!([
            {"name": "list_directory", "arguments": {}},
            {"name": "search_commits", "arguments": {}},
            {"name": "list_repositories", "arguments": {}},
        ]),
    );
    for call in seen["calls"].as_array().unwrap() {
        assert_eq!(call["isError"], false, "{call}");
        let text = call["text"].as_str().unwrap();
        assert!(
            !text.starts_with('['),
            "a JSON dump before the text: {text}"
        );
        assert!(
            !call["structured"].is_null(),
            "no structured content: {call}"
        );
    }
}

/// A folder of thousands of files, or a commit that adds them, is cut for the calling
/// agent as the agent's own observations are (3,000 characters there; Claude Code refuses an MCP
/// result over 25,000 tokens): list_directory and show_commit returned every entry (found in review).
#[test]
fn a_huge_folder_or_commit_is_cut_for_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("big");
    std::fs::create_dir_all(repo.join("many")).unwrap();
    let who = ("Ann", "ann@x.org");
    git(
        &repo,
        &["init", "-q", "-b", "main"],
        "2024-01-01T00:00:00Z",
        who,
    );
    for i in 0..4000 {
        std::fs::write(
            repo.join(format!("many/file_with_a_longish_name_{i}.txt")),
            format!("x{i}\n"),
        )
        .unwrap();
    }
    git(&repo, &["add", "-A"], "2024-01-01T00:00:00Z", who);
    git(
        &repo,
        &["commit", "-q", "-m", "Vendor"],
        "2024-01-01T00:00:00Z",
        who,
    );
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_string();
    let home = dir.path().join("home");
    common::workspace_add(&home, &repo);
    let seen = client(
        &home,
        json!([
            {"name": "list_directory", "arguments": {"path": "many"}},
            {"name": "show_commit", "arguments": {"hash": head}},
        ]),
    );
    let sizes: Vec<usize> = seen["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            assert_eq!(call["isError"], false, "{call}");
            call["text"].as_str().unwrap().chars().count()
        })
        .collect();
    assert!(
        sizes.iter().all(|&n| n < 100_000),
        "characters of list_directory and show_commit: {sizes:?}"
    );
}
