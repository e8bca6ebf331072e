//! Tools from MCP servers the user configured (issue 19): each server is started as a child
//! process speaking MCP on stdio, and its tools join the agent's toolbelt as `<server>__<tool>`,
//! with their input schemas as step grammars. Only servers named in the settings run; none is
//! started by opening the app, only by the shells that run the agent.
//!
//! A server is untrusted like the workspace: what its tools return reaches the model as an
//! observation (defanged as every observation is), a failure is an observation the model can
//! act on, and a server that crashes or hangs costs a call a bounded wait, never the run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents, Tool as McpTool,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde::{Deserialize, Serialize};

use super::{ToolError, ToolOutput, ToolRegistry, ToolSpec};

/// Between a server's name and its tool's in the name an MCP tool has here (`git__git_log`);
/// no tool of Burrow's own has it in its name.
pub const SEPARATOR: &str = "__";

/// One MCP server, as `settings.json` names it under `mcp_servers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerConfig {
    /// A short name (letters, digits, `-`, `_`); its tools are `<name>__<tool>`.
    pub name: String,
    /// The program to start; it speaks MCP on its stdin and stdout. Empty for a `url`.
    #[serde(default)]
    pub command: String,
    /// A server already running, reached over Streamable HTTP (instead of a command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for it, besides the inherited environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How long it may take to start, list its tools, or answer one call (default 30 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl McpServerConfig {
    fn timeout(&self) -> Duration {
        self.timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_TIMEOUT)
    }

    /// Checks what can be checked without starting it.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "the MCP server name {:?} must be letters, digits, - or _",
                self.name
            ));
        }
        match (&self.url, self.command.trim().is_empty()) {
            (None, true) => Err(format!(
                "the MCP server {:?} needs a command or a url",
                self.name
            )),
            (Some(_), false) => Err(format!(
                "the MCP server {:?} has both a command and a url: give one",
                self.name
            )),
            (Some(url), true) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Err(format!(
                    "the MCP server {:?}: {url:?} is not an http:// or https:// URL",
                    self.name
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Why an MCP server could not join the toolbelt.
#[derive(Debug, thiserror::Error)]
pub enum McpClientError {
    #[error("MCP server {server:?}: {reason}")]
    Config { server: String, reason: String },
    #[error("MCP server {server:?}: cannot start `{command}`: {source}")]
    Spawn {
        server: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("MCP server {server:?}: {what}: {reason}")]
    Protocol {
        server: String,
        what: &'static str,
        reason: String,
    },
    #[error("MCP server {server:?} did not {what} within {secs} s")]
    Timeout {
        server: String,
        what: &'static str,
        secs: u64,
    },
}

/// A started server and the tools it listed. Dropping it stops the server.
pub struct McpServer {
    name: String,
    timeout: Duration,
    tools: Vec<McpTool>,
    // Declared before the runtime: the session is dropped (and the child killed) while the
    // runtime that drives it still exists.
    client: RunningService<RoleClient, ()>,
    runtime: tokio::runtime::Runtime,
    _group: ProcessGroup,
}

/// The server's process group, killed when the server is dropped or fails to connect. rmcp
/// kills the child it started from a task on the runtime, which a runtime dropped at once
/// never runs, and a shell wrapper's own children (`sh -c '…'`) outlive their parent: both
/// were left running after a server timed out.
struct ProcessGroup(Option<u32>);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: kill(2) with a negative pid signals that process group; the group was
            // made for this server alone (process_group(0) at spawn).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl McpServer {
    /// Starts the server, initializes the session and lists its tools, each within the
    /// server's timeout.
    pub fn connect(config: &McpServerConfig) -> Result<McpServer, McpClientError> {
        let server = config.name.clone();
        config.validate().map_err(|reason| McpClientError::Config {
            server: server.clone(),
            reason,
        })?;
        let timeout = config.timeout();
        // One worker drives the session while the agent's thread waits on a call.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| McpClientError::Protocol {
                server: server.clone(),
                what: "cannot start its runtime",
                reason: e.to_string(),
            })?;
        if let Some(url) = &config.url {
            let transport = {
                let _entered = runtime.enter();
                rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str())
            };
            let client = Self::start(&runtime, &server, timeout, ().serve(transport))?;
            return Self::listed(config, client, runtime, ProcessGroup(None));
        }
        let mut command = tokio::process::Command::new(&config.command);
        command.args(&config.args).envs(&config.env);
        #[cfg(unix)]
        command.process_group(0);
        let spawned = {
            let _entered = runtime.enter();
            TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::piped())
                .spawn()
        };
        let (transport, stderr) = spawned.map_err(|source| McpClientError::Spawn {
            server: server.clone(),
            command: config.command.clone(),
            source,
        })?;
        let group = ProcessGroup(transport.id());
        let said = stderr.map(|e| StderrTail::read(&runtime, e));
        let client = Self::start(&runtime, &server, timeout, ().serve(transport))
            .map_err(|e| with_what_it_said(e, said.as_ref(), &runtime))?;
        Self::listed(config, client, runtime, group)
    }

    /// The session, started within the timeout.
    fn start<E: std::fmt::Display>(
        runtime: &tokio::runtime::Runtime,
        server: &str,
        timeout: Duration,
        serving: impl std::future::Future<Output = Result<RunningService<RoleClient, ()>, E>>,
    ) -> Result<RunningService<RoleClient, ()>, McpClientError> {
        within(
            runtime,
            server,
            timeout,
            (
                "answer the MCP initialize request",
                "the session did not start",
            ),
            serving,
        )
    }

    /// The server with the tools it lists within the timeout.
    fn listed(
        config: &McpServerConfig,
        client: RunningService<RoleClient, ()>,
        runtime: tokio::runtime::Runtime,
        group: ProcessGroup,
    ) -> Result<McpServer, McpClientError> {
        let timeout = config.timeout();
        let tools = within(
            &runtime,
            &config.name,
            timeout,
            ("list its tools", "listing its tools failed"),
            client.list_all_tools(),
        )?;
        Ok(McpServer {
            name: config.name.clone(),
            timeout,
            tools,
            client,
            runtime,
            _group: group,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    /// Calls one of its tools by its own name, waiting at most the server's timeout.
    pub fn call(&self, tool: &str, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            serde_json::Value::Object(o) => o,
            serde_json::Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "the arguments must be an object, not {other}"
                )))
            }
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let answer = self.runtime.block_on(async {
            tokio::time::timeout(self.timeout, self.client.call_tool(params)).await
        });
        match answer {
            Err(_) => Err(ToolError::Transient(format!(
                "the MCP server {:?} did not answer within {} s",
                self.name,
                self.timeout.as_secs()
            ))),
            Ok(Err(ServiceError::McpError(e))) => Err(ToolError::InvalidArguments(format!(
                "the MCP server {:?} refused the call: {}",
                self.name, e.message
            ))),
            Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => Err(
                ToolError::Failed(format!("the MCP server {:?} stopped: {e}", self.name)),
            ),
            Ok(Err(e)) => Err(ToolError::Failed(format!(
                "the MCP server {:?}: {e}",
                self.name
            ))),
            Ok(Ok(result)) => output(&self.name, tool, result),
        }
    }
}

/// What `doing` gives within the timeout; `(late, failed)` say what the server did not do in
/// time, and what failed.
fn within<T, E: std::fmt::Display>(
    runtime: &tokio::runtime::Runtime,
    server: &str,
    timeout: Duration,
    (late, failed): (&'static str, &'static str),
    doing: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, McpClientError> {
    runtime
        .block_on(async { tokio::time::timeout(timeout, doing).await })
        .map_err(|_| McpClientError::Timeout {
            server: server.to_string(),
            what: late,
            secs: timeout.as_secs(),
        })?
        .map_err(|e| McpClientError::Protocol {
            server: server.to_string(),
            what: failed,
            reason: e.to_string(),
        })
}

/// The end of what a server wrote to stderr, read as it comes (a pipe left unread would stop a
/// server that writes much there): a server that fails at start says why there (a repository
/// that is not one, a missing token), and that went nowhere.
struct StderrTail {
    tail: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: tokio::task::JoinHandle<()>,
}

/// How much of a server's stderr is kept: the last lines, where the reason is.
const STDERR_TAIL: usize = 2_000;

impl StderrTail {
    fn read(runtime: &tokio::runtime::Runtime, mut stderr: tokio::process::ChildStderr) -> Self {
        use tokio::io::AsyncReadExt;
        let tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = tail.clone();
        let reader = runtime.spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut t = kept.lock().unwrap_or_else(|e| e.into_inner());
                t.extend_from_slice(&buf[..n]);
                let over = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..over);
            }
        });
        StderrTail { tail, reader }
    }

    /// What it wrote, once it stopped writing (briefly waited for: a server that failed has
    /// exited, and its pipe ends).
    fn said(&self, runtime: &tokio::runtime::Runtime) -> String {
        runtime.block_on(async {
            let _ = tokio::time::timeout(Duration::from_millis(500), async {
                while !self.reader.is_finished() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
        });
        let t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&t).trim().to_string()
    }
}

/// A failed start's error, with what the server wrote to stderr.
fn with_what_it_said(
    e: McpClientError,
    said: Option<&StderrTail>,
    runtime: &tokio::runtime::Runtime,
) -> McpClientError {
    match (e, said.map(|s| s.said(runtime)).filter(|s| !s.is_empty())) {
        (
            McpClientError::Protocol {
                server,
                what,
                reason,
            },
            Some(said),
        ) => McpClientError::Protocol {
            server,
            what,
            reason: format!("{reason}; it wrote: {said}"),
        },
        (e, _) => e,
    }
}

/// A tool's result as an observation: its text blocks, and its structured content as data.
fn output(server: &str, tool: &str, result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut text = String::new();
    for block in &result.content {
        if !text.is_empty() {
            text.push('\n');
        }
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::Image(_) => text.push_str("[an image]"),
            ContentBlock::Audio(_) => text.push_str("[an audio clip]"),
            // A file's contents come as an embedded resource (GitHub's get_file_contents):
            // its text is the answer, said with where it is from. It was a placeholder.
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text: t, .. } => {
                    text.push_str(&format!("[{uri}]\n{t}"))
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    text.push_str(&format!(
                        "[{uri}: binary content{}]",
                        mime_type
                            .as_deref()
                            .map(|m| format!(" ({m})"))
                            .unwrap_or_default()
                    ))
                }
                _ => text.push_str("[an embedded resource]"),
            },
            ContentBlock::ResourceLink(link) => {
                text.push_str(&format!("[a link to {} ({})]", link.uri, link.name))
            }
            _ => text.push_str("[content that is not text]"),
        }
    }
    if text.is_empty() {
        if let Some(data) = &result.structured_content {
            text = data.to_string();
        }
    }
    if result.is_error == Some(true) {
        return Err(ToolError::Failed(format!("{server}__{tool}: {text}")));
    }
    let data = result
        .structured_content
        .clone()
        .unwrap_or_else(|| serde_json::json!({ "text": text }));
    Ok(ToolOutput::new(text, data))
}

/// Adds the server's tools to the registry as `<server>__<tool>`. A tool whose name cannot be a
/// tool's or whose schema cannot be a step grammar is left out, and said why.
pub fn register(registry: &mut ToolRegistry, server: Arc<McpServer>) -> Vec<String> {
    let mut left_out = Vec::new();
    for tool in server.tools() {
        let name = format!("{}{SEPARATOR}{}", server.name(), tool.name);
        if !tool
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            left_out.push(format!(
                "{name}: the name is not letters, digits, - or _; left out"
            ));
            continue;
        }
        let spec = ToolSpec {
            name: name.clone(),
            description: tool.description.as_deref().unwrap_or_default().to_string(),
            parameters: serde_json::Value::Object((*tool.input_schema).clone()),
            opens: None,
        };
        let (server, own) = (server.clone(), tool.name.to_string());
        let call = move |args: serde_json::Value| server.call(&own, args);
        if let Err(e) = registry.register_dynamic(spec, Box::new(call)) {
            left_out.push(format!("{e}; left out"));
        }
    }
    left_out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str, command: &str, url: Option<&str>) -> McpServerConfig {
        McpServerConfig {
            name: name.into(),
            command: command.into(),
            url: url.map(Into::into),
            args: Vec::new(),
            env: BTreeMap::new(),
            timeout_secs: None,
        }
    }

    #[test]
    fn a_server_needs_a_plain_name_and_one_way_to_reach_it() {
        assert!(config("time", "mcp-server-time", None).validate().is_ok());
        assert!(config("docs", "", Some("https://example.org/mcp"))
            .validate()
            .is_ok());
        for (bad, why) in [
            (config("", "x", None), "letters"),
            (config("a b", "x", None), "letters"),
            (config("a__b;rm", "x", None), "letters"),
            (config("none", " ", None), "a command or a url"),
            (config("both", "x", Some("http://h/mcp")), "both"),
            (
                config("file", "", Some("file:///etc/passwd")),
                "not an http",
            ),
        ] {
            let err = bad.validate().unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }
}
