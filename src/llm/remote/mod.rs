//! A `LanguageModel` on another machine (or process): any server that speaks the OpenAI
//! chat-completions API with streaming (llama.cpp's llama-server, vLLM, Ollama, LM Studio).
//!
//! Requests go out as `POST /v1/chat/completions` (chat prompts) or `/v1/completions` (text),
//! streamed as server-sent events on a small runtime of the model's own, so the engine's
//! synchronous interface (`generate`, `count_tokens`) works as the in-process one does. What a
//! server offers beyond the standard is found when connecting: llama-server's `/props` (context
//! size), `/tokenize` (exact token counts), `/apply-template` (the prompt as the server renders
//! it), its `grammar` and `cache_prompt` fields and its `timings`. A grammar goes to llama-server
//! as llguidance's (`%llguidance`: the Lark grammar, or the strict JSON Schema under `%json`),
//! which the server compiles with the same llguidance as the engine, so a step is held to
//! everything the engine holds it to (patterns, the exclusions of repeated calls), when the
//! options say the server has llguidance; else as GBNF (a server built without llguidance
//! aborts on an llguidance grammar, or, in the newest builds, refuses it: then GBNF from there
//! on). Elsewhere a JSON schema goes as `response_format`, other grammars cannot be enforced
//! (the usage says so, and the agent's parser takes what comes), and tokens are counted with
//! tiktoken's cl100k, an estimate.
//!
//! To llama-server, prompts without native tools go to its own `/completion` as token ids
//! instead: the prompt rendered by its `/apply-template`, and where it continues the last
//! request, that request's ids and the ids the model generated, as sampled. Through the chat
//! endpoint the server tokenized the previous reply again, which under a grammar often splits
//! differently from how it was sampled, and its KV cache was of no use from there on (an agent
//! step re-read the whole previous step); the in-process engine keeps the sampled tokens the
//! same way (`tokenize_after_last`).
//!
//! An API key is read from an environment variable named in the settings, never stored; it goes
//! in the `Authorization` header only, and no error or `Debug` output shows it.

mod native;
mod request;
mod server;
mod sse;
mod stream;

#[cfg(test)]
mod tests;

pub use request::defang;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::engine::{GenerateRequest, Generation, LanguageModel, LlmError, ModelDescriptor};
use super::template::ChatMessage;
use native::LastIds;
use request::openai_message;
use server::{probe, remote_err, Server};
use stream::Job;

/// How long connecting (and each probe when connecting) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An API key, kept out of `Debug` output and error messages.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key in the environment variable `var`: missing or empty is an error naming `var`.
    pub fn from_env(var: &str) -> Result<Self, LlmError> {
        match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => Ok(ApiKey(k.trim().to_string())),
            _ => Err(LlmError::InvalidLoadOption {
                option: "api_key_env",
                reason: format!("the environment variable {var} is not set or empty"),
            }),
        }
    }
}

impl ApiKey {
    /// The key itself, for the one place that compares or sends it.
    pub(crate) fn secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<hidden>)")
    }
}

/// Where a remote model is and how to reach it.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The server's address: `http://host:port`, with or without a trailing `/v1`.
    pub url: String,
    /// The model to use among those the server lists (default: the first it lists).
    pub model: Option<String>,
    pub api_key: Option<ApiKey>,
    /// The context window, where the server does not say (default 4096).
    pub context_length: Option<usize>,
    /// How long the server may stay silent, before its first token or between two.
    pub idle_timeout: Duration,
    /// The server is a llama-server built with llguidance (`-DLLAMA_LLGUIDANCE=ON`): grammars
    /// go to it as llguidance's, compiled there as the engine compiles them. Off by default:
    /// llama-server builds without llguidance abort on such a grammar (most releases), and
    /// nothing a server says tells the two apart beforehand.
    pub llguidance: bool,
}

impl RemoteOptions {
    pub fn new(url: impl Into<String>) -> Self {
        RemoteOptions {
            url: url.into(),
            model: None,
            api_key: None,
            context_length: None,
            idle_timeout: Duration::from_secs(300),
            llguidance: false,
        }
    }
}

/// What kind of server answered, for the fields it understands beyond OpenAI's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// llama.cpp's llama-server: llguidance or GBNF grammars, `/tokenize`, `/apply-template`,
    /// timings.
    LlamaServer,
    /// vLLM: `max_model_len` in its model list.
    Vllm,
    /// Anything else that speaks the OpenAI API.
    OpenAi,
}

/// What connecting found: for `burrow models list` and the run's header.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RemoteInfo {
    /// The server's root address (no `/v1`).
    pub url: String,
    pub model: String,
    /// Every model the server lists.
    pub models: Vec<String>,
    pub kind: ServerKind,
    pub context_length: usize,
    /// Whether the server reported the context length (else it is the settings' or 4096).
    pub context_reported: bool,
}

/// A model served over HTTP.
pub struct RemoteModel {
    inner: Arc<Inner>,
    /// Owned here so that the synchronous interface can wait on requests; shut down in the
    /// background on drop, as a runtime dropped inside another one would panic.
    runtime: Option<tokio::runtime::Runtime>,
}

struct Inner {
    server: Server,
    info: RemoteInfo,
    idle_timeout: Duration,
    /// llama-server: the last prompt sent as ids, and what the model wrote after it.
    last: Mutex<Option<LastIds>>,
    /// Grammars go to llama-server as llguidance's: asked for in the options, until the
    /// server says it was built without llguidance.
    llguidance: AtomicBool,
}

impl std::fmt::Debug for RemoteModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteModel")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

impl Drop for RemoteModel {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The server's root: scheme, host and port (and a path prefix), without `/v1` or a trailing
/// slash. Only http and https are accepted.
pub fn normalize_url(url: &str) -> Result<String, LlmError> {
    let bad = |reason: &str| LlmError::InvalidLoadOption {
        option: "backend",
        reason: format!("{url:?}: {reason}"),
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("the address must start with http:// or https://"));
    }
    if parsed.host_str().is_none() {
        return Err(bad("no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad(
            "credentials do not belong in the address: name an environment variable with --api-key-env",
        ));
    }
    let mut root = parsed.as_str().trim_end_matches('/').to_string();
    if let Some(q) = root.find(['?', '#']) {
        root.truncate(q);
    }
    let root = root.trim_end_matches('/');
    Ok(root.strip_suffix("/v1").unwrap_or(root).to_string())
}

impl RemoteModel {
    /// Reaches the server, picks the model and learns what the server can do. Nothing is
    /// generated.
    pub fn connect(options: RemoteOptions) -> Result<RemoteModel, LlmError> {
        let root = normalize_url(&options.url)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("burrow-remote")
            .enable_all()
            .build()
            .map_err(|e| LlmError::Worker(format!("cannot start the HTTP runtime: {e}")))?;
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // llama-server closes a kept-alive connection after a few requests, and a pooled
            // one it had just closed failed a /tokenize ("connection closed before message
            // completed"). A connection per request costs little beside a model call.
            .pool_max_idle_per_host(0)
            .no_proxy()
            .build()
            .map_err(|e| remote_err(&root, format!("cannot build the HTTP client: {e}"), false))?;
        let server = Server {
            client,
            root,
            key: options.api_key.clone(),
        };
        let info = runtime.block_on(probe(&server, &options))?;
        Ok(RemoteModel {
            inner: Arc::new(Inner {
                server,
                info,
                idle_timeout: options.idle_timeout,
                last: Mutex::new(None),
                llguidance: AtomicBool::new(options.llguidance),
            }),
            runtime: Some(runtime),
        })
    }

    pub fn info(&self) -> &RemoteInfo {
        &self.inner.info
    }

    fn block_on<F>(&self, f: F) -> Result<F::Output, LlmError>
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        let rt = self
            .runtime
            .as_ref()
            .ok_or_else(|| LlmError::Worker("the HTTP runtime is gone".into()))?;
        if tokio::runtime::Handle::try_current().is_ok() {
            // Waiting here would stall the caller's runtime; run on a thread of our own.
            let handle = rt.handle().clone();
            return std::thread::scope(|s| {
                s.spawn(|| handle.block_on(f))
                    .join()
                    .map_err(|_| LlmError::Worker("an HTTP request panicked".into()))
            });
        }
        Ok(rt.block_on(f))
    }
}

impl LanguageModel for RemoteModel {
    fn descriptor(&self) -> ModelDescriptor {
        let info = &self.inner.info;
        ModelDescriptor {
            name: format!("{} @ {}", info.model, info.url),
            path: None,
            context_length: info.context_length,
            has_chat_template: true,
        }
    }

    fn generate(&self, request: GenerateRequest) -> Result<Generation, LlmError> {
        let started = Instant::now();
        let server_request = self.build_request(&request)?;
        let setup_ms = started.elapsed().as_secs_f64() * 1000.0;
        let (generation, sink) = Generation::channel();
        let rt = self
            .runtime
            .as_ref()
            .ok_or_else(|| LlmError::Worker("the HTTP runtime is gone".into()))?;
        let inner = self.inner.clone();
        let job = Job {
            request: server_request,
            max_tokens: request.max_tokens,
            started,
            setup_ms,
        };
        rt.spawn(inner.run(job, sink));
        Ok(generation)
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        if self.inner.info.kind != ServerKind::LlamaServer {
            return super::tokens::estimate_tokens(text);
        }
        let inner = self.inner.clone();
        let text = text.to_string();
        self.block_on(async move { inner.tokenize(&text, false, false).await.map(|t| t.len()) })?
    }

    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[Value]>,
    ) -> Result<String, LlmError> {
        if self.inner.info.kind == ServerKind::LlamaServer {
            let inner = self.inner.clone();
            let mut body = json!({
                "messages": messages.iter().map(|m| openai_message(m, false)).collect::<Vec<_>>(),
            });
            if let Some(t) = tools.filter(|t| !t.is_empty()) {
                body["tools"] = Value::Array(t.to_vec());
            }
            let rendered = self.block_on(async move { inner.apply_template(&body).await.ok() })?;
            if let Some(prompt) = rendered {
                return Ok(prompt);
            }
        }
        // The server renders with its own template, which Burrow cannot see: this is the text
        // in ChatML, close enough in size for budgeting.
        let mut out = String::new();
        if let Some(t) = tools.filter(|t| !t.is_empty()) {
            out.push_str(&Value::Array(t.to_vec()).to_string());
            out.push('\n');
        }
        for m in messages {
            out.push_str(&format!(
                "<|im_start|>{}\n{}<|im_end|>\n",
                m.role, m.content
            ));
        }
        out.push_str("<|im_start|>assistant\n");
        Ok(out)
    }
}
