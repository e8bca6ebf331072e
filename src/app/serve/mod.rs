//! `burrow serve`: an OpenAI-compatible API over the model Burrow has loaded, so other tools
//! (the `openai` clients, evaluation harnesses, editors) can use it unchanged: `/v1/models`,
//! `/v1/chat/completions` (streamed or not, with tools and `response_format`),
//! `/v1/completions` and `/v1/embeddings`.
//!
//! One model answers one request at a time: requests wait their turn in order (at most
//! `max_waiting` of them; more are told the server is busy), and each reuses what the KV cache
//! holds of the one before. A client that goes away mid-stream stops its generation. Errors
//! are OpenAI's shape, naming the field at fault.
//!
//! The parts: `wire` holds the API's request and error shapes; `tools` the tool calls
//! (grammar, reading them back, streaming around them); this module the routes and the turns.

pub mod tools;
pub mod wire;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::llm::embed::EmbeddingModel;
use crate::llm::remote::ApiKey;
use crate::llm::template::{FunctionCall, ToolCall};
use crate::llm::{
    ChatMessage, GenerateRequest, Generation, GenerationEvent, Grammar, LanguageModel, LlmError,
    Prompt, SamplingParams, StopReason, Usage,
};
use tools::{CallStream, ToolSet};
use wire::{ApiError, ChatRequest, Common, CompletionRequest, Content, EmbeddingRequest};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the server failed: {0}")]
    Serve(#[source] std::io::Error),
    #[error(transparent)]
    Model(#[from] LlmError),
}

/// How the server behaves beyond the model it serves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Requests must carry `Authorization: Bearer KEY`. Never logged or shown.
    pub api_key: Option<ApiKey>,
    /// Larger bodies are refused (413).
    pub max_body_bytes: usize,
    /// Requests that may wait for the model; more are told the server is busy (503).
    pub max_waiting: usize,
    /// The embedding model for `/v1/embeddings`, loaded on its first request; or why there
    /// is none.
    pub embedding: Result<PathBuf, String>,
    pub embed_threads: u32,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            api_key: None,
            max_body_bytes: 8 << 20,
            max_waiting: 64,
            embedding: Err("no embedding model was given".into()),
            embed_threads: 2,
        }
    }
}

/// The model being served and what the API says of it, fixed for a request once it starts.
struct Served {
    model: Arc<dyn LanguageModel>,
    name: String,
    context_length: usize,
    /// Whether the chat template shows the model tools (else they go in the system message).
    template_shows_tools: bool,
}

impl Served {
    /// Must not be called on an async runtime's thread (a remote model blocks to render).
    fn of(model: Arc<dyn LanguageModel>) -> Self {
        let d = model.descriptor();
        // A remote backend's descriptor names its server too (`model @ url`); the URL is the
        // user's own business, not the clients'.
        let name = match &d.path {
            None => d
                .name
                .split_once(" @ ")
                .map_or(d.name.as_str(), |(m, _)| m)
                .to_string(),
            Some(_) => d.name.clone(),
        };
        Served {
            template_shows_tools: shows_tools(model.as_ref()),
            name,
            context_length: d.context_length,
            model,
        }
    }
}

/// The served model (which the app may switch or unload while it serves) and the state of
/// its queue.
pub struct Server {
    served: RwLock<Option<Arc<Served>>>,
    options: ServeOptions,
    turn: Arc<Semaphore>,
    waiting: AtomicUsize,
    /// Requests must name this machine as their `Host` (set from the address it listens on).
    local_only: AtomicBool,
    embedder: tokio::sync::OnceCell<Result<Arc<EmbeddingModel>, String>>,
    ids: AtomicU64,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("model", &self.model_name())
            .finish()
    }
}

/// Counts a request among those waiting for the model until it is dropped: when its turn
/// comes, or when its client leaves first.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Server {
    /// Serves `model` (none: every request is told no model is loaded until one is set).
    /// Must not be called on an async runtime's thread (a remote model blocks to render).
    pub fn new(model: Option<Arc<dyn LanguageModel>>, options: ServeOptions) -> Self {
        Server {
            served: RwLock::new(model.map(|m| Arc::new(Served::of(m)))),
            options,
            turn: Arc::new(Semaphore::new(1)),
            waiting: AtomicUsize::new(0),
            local_only: AtomicBool::new(true),
            embedder: tokio::sync::OnceCell::new(),
            ids: AtomicU64::new(seed_id()),
        }
    }

    /// Serves `model` from the next request on; requests already answering finish with the
    /// one they started with. Must not be called on an async runtime's thread.
    pub fn set_model(&self, model: Option<Arc<dyn LanguageModel>>) {
        let served = model.map(|m| Arc::new(Served::of(m)));
        *self.served.write().unwrap_or_else(|e| e.into_inner()) = served;
    }

    /// The name clients see for the served model, if one is loaded.
    pub fn model_name(&self) -> Option<String> {
        self.current().map(|s| s.name.clone())
    }

    fn current(&self) -> Option<Arc<Served>> {
        self.served
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn served(&self) -> Result<Arc<Served>, ApiError> {
        self.current().ok_or_else(|| {
            model_not_loaded("no model is loaded in Burrow: load one, then try again")
        })
    }

    fn id(&self, prefix: &str) -> String {
        // A counter from a random start, scrambled: unique in this process, unlike the last.
        let n = self.ids.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}{:016x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// Whether a request may be answered at all: addressed to this machine (a web page the
    /// user visits can send requests to 127.0.0.1, and through DNS rebinding read the
    /// replies, but only under its own host name) and carrying the key, if one is set.
    fn admit(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if self.local_only.load(Ordering::Relaxed) {
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if !is_local_host(host) {
                return Err(ApiError {
                    status: StatusCode::FORBIDDEN,
                    message: format!(
                        "this server answers requests addressed to this machine (Host: 127.0.0.1, localhost or [::1]), not {host:?}"
                    ),
                    kind: "invalid_request_error",
                    param: None,
                    code: Some("forbidden_host"),
                });
            }
        }
        let Some(key) = &self.options.api_key else {
            return Ok(());
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if constant_time_eq(given.as_bytes(), key.secret().as_bytes()) {
            Ok(())
        } else {
            Err(ApiError {
                status: StatusCode::UNAUTHORIZED,
                message: "missing or incorrect API key: send Authorization: Bearer KEY".into(),
                kind: "invalid_request_error",
                param: None,
                code: Some("invalid_api_key"),
            })
        }
    }

    /// Waits for the model's turn; refuses when `max_waiting` requests already wait.
    async fn wait_turn(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        // The semaphore is fair: a free permit means nobody is waiting.
        if let Ok(permit) = self.turn.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let ahead = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _counted = Counted(&self.waiting);
        if ahead >= self.options.max_waiting {
            return Err(ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: format!("the server is busy: {ahead} requests are waiting for the model"),
                kind: "server_error",
                param: None,
                code: Some("server_busy"),
            });
        }
        self.turn
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::server("the server is shutting down"))
    }
}

/// A `Host` header naming this machine, with or without a port.
fn is_local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn seed_id() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id()) << 32
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether the model's chat template renders the tools it is given.
fn shows_tools(model: &dyn LanguageModel) -> bool {
    let probe = [ChatMessage::user("hi")];
    let tool = json!({"type": "function", "function": {"name": "burrow_probe_tool",
        "description": "probe", "parameters": {"type": "object", "properties": {}}}});
    match model.render_chat(&probe, Some(&[tool])) {
        Ok(with) => with.contains("burrow_probe_tool"),
        Err(_) => false,
    }
}

/// The routes, over `server`.
pub fn router(server: Arc<Server>) -> Router {
    let limit = server.options.max_body_bytes;
    Router::new()
        .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/embeddings", post(embeddings))
        // Without `/v1`, as llama-server takes them: a client given the server's address as
        // its base URL got "no such endpoint".
        .route("/models", get(models))
        .route("/models/{id}", get(model))
        .route("/chat/completions", post(chat))
        .route("/completions", post(completions))
        .route("/embeddings", post(embeddings))
        .fallback(|| async {
            ApiError::invalid(None, "no such endpoint: burrow serve has /v1/models, /v1/chat/completions, /v1/completions and /v1/embeddings")
                .with_status(StatusCode::NOT_FOUND)
        })
        // A wrong method got axum's bare 405, with no body a client could read.
        .method_not_allowed_fallback(|method: axum::http::Method, uri: axum::http::Uri| async move {
            ApiError::invalid(
                None,
                format!("{} takes no {method} request (chat, completions and embeddings take POST; models takes GET)", uri.path()),
            )
            .with_status(StatusCode::METHOD_NOT_ALLOWED)
        })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(server)
}

/// Binds `host:port` (port 0: any free port).
pub async fn bind(host: &str, port: u16) -> Result<tokio::net::TcpListener, ServeError> {
    let addr = format!("{host}:{port}");
    tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves until `stop` completes. Requests still answering are not waited for: they are
/// dropped with the runtime that runs them, which stops their generations (a reply may
/// otherwise run to the end of the context).
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: Arc<Server>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener
        .local_addr()
        .map(|a| a.ip().is_loopback())
        .map_err(ServeError::Serve)?;
    server.local_only.store(local, Ordering::Relaxed);
    tokio::select! {
        r = axum::serve(listener, router(server)).into_future() => r.map_err(ServeError::Serve),
        () = stop => Ok(()),
    }
}

/// A server answering on a thread of its own, for the CLI and the app: stopped by
/// [`Running::stop`], a [`Stopper`], or when dropped.
pub struct Running {
    addr: SocketAddr,
    stop: Stopper,
    thread: Option<std::thread::JoinHandle<Result<(), ServeError>>>,
}

/// Stops a [`Running`] server from elsewhere (a Ctrl-C handler).
#[derive(Clone)]
pub struct Stopper(Arc<tokio::sync::Notify>);

impl Stopper {
    pub fn stop(&self) {
        // notify_one keeps the wake-up for a server that is not waiting yet.
        self.0.notify_one();
    }
}

/// Listens on `host:port` (port 0: any free port) and serves `server` there until stopped.
/// The address is taken before this returns, so a port in use is this call's error.
pub fn start(host: &str, port: u16, server: Arc<Server>) -> Result<Running, ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("burrow-serve")
        .enable_all()
        .build()
        .map_err(ServeError::Serve)?;
    let listener = runtime.block_on(bind(host, port))?;
    let addr = listener.local_addr().map_err(ServeError::Serve)?;
    let stop = Stopper(Arc::new(tokio::sync::Notify::new()));
    let stopped = stop.0.clone();
    let thread = std::thread::Builder::new()
        .name("burrow-serve".into())
        .spawn(move || {
            let done =
                runtime.block_on(serve(
                    listener,
                    server,
                    async move { stopped.notified().await },
                ));
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
            done
        })
        .map_err(ServeError::Serve)?;
    Ok(Running {
        addr,
        stop,
        thread: Some(thread),
    })
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The API's base URL, as OpenAI clients take it.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Blocks until the server stops (see [`Running::stopper`]).
    pub fn wait(mut self) -> Result<(), ServeError> {
        self.join()
    }

    /// Stops the server and waits until it has.
    pub fn stop(mut self) -> Result<(), ServeError> {
        self.stop.stop();
        self.join()
    }

    fn join(&mut self) -> Result<(), ServeError> {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(done)) => done,
            Some(Err(_)) => Err(ServeError::Serve(std::io::Error::other(
                "the server's thread panicked",
            ))),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
        let _ = self.join();
    }
}

async fn models(State(s): State<Arc<Server>>, headers: HeaderMap) -> Response {
    if let Err(e) = s.admit(&headers) {
        return e.into_response();
    }
    Json(json!({"object": "list", "data": model_list(&s)})).into_response()
}

/// One model, as `client.models.retrieve(id)` asks for it (a 404 before, for every id).
async fn model(
    State(s): State<Arc<Server>>,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    if let Err(e) = s.admit(&headers) {
        return e.into_response();
    }
    match model_list(&s).into_iter().find(|m| m["id"] == id.as_str()) {
        Some(m) => Json(m).into_response(),
        None => ApiError {
            code: Some("model_not_found"),
            ..ApiError::invalid(
                Some("model".to_string()),
                format!("the model {id:?} is not served here: see /v1/models"),
            )
            .with_status(StatusCode::NOT_FOUND)
        }
        .into_response(),
    }
}

fn model_list(s: &Server) -> Vec<Value> {
    let mut data: Vec<Value> = s
        .current()
        .map(|m| {
            json!({
                "id": m.name, "object": "model", "created": now(), "owned_by": "burrow",
                "context_length": m.context_length,
            })
        })
        .into_iter()
        .collect();
    if let Ok(path) = &s.options.embedding {
        data.push(json!({
            "id": embedding_name(path), "object": "model", "created": now(), "owned_by": "burrow",
        }));
    }
    data
}

fn embedding_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// A generation request built from an API request, before it runs.
struct Job {
    served: Arc<Served>,
    request: GenerateRequest,
    tools: Option<ToolSet>,
    api: Api,
    stream: bool,
    include_usage: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Api {
    Chat,
    Text,
}

async fn chat(
    State(s): State<Arc<Server>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let server = s.clone();
    match off_the_runtime(move || chat_job(&server, &headers, body)).await {
        Ok(job) => run(s, job).await,
        Err(e) => e.into_response(),
    }
}

/// Reading a request (up to 8 MiB of JSON) and compiling its grammars (a tool schema, a
/// response format) take long enough to hold up the streams of other clients, which the
/// runtime's two threads write: they run on a blocking thread.
async fn off_the_runtime(
    read: impl FnOnce() -> Result<Job, ApiError> + Send + 'static,
) -> Result<Job, ApiError> {
    tokio::task::spawn_blocking(read).await.unwrap_or_else(|e| {
        Err(ApiError::server(format!(
            "reading the request stopped: {e}"
        )))
    })
}

async fn completions(
    State(s): State<Arc<Server>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let server = s.clone();
    match off_the_runtime(move || text_job(&server, &headers, body)).await {
        Ok(job) => run(s, job).await,
        Err(e) => e.into_response(),
    }
}

/// A request's body, which must say it is JSON: a web page can send other types to this
/// machine without the browser asking first, but not `application/json`.
fn body_bytes(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = kind.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(ApiError {
            code: Some("unsupported_media_type"),
            ..ApiError::invalid(
                None,
                format!("the body must be JSON, sent with Content-Type: application/json (not {kind:?})"),
            )
            .with_status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        });
    }
    body.map_err(|r| {
        let status = r.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "the request body is larger than the server accepts".to_string()
        } else {
            format!("the request body cannot be read: {r}")
        };
        ApiError::invalid(None, message).with_status(status)
    })
}

fn sampling(c: &Common) -> Result<SamplingParams, ApiError> {
    if c.n.is_some_and(|n| n != 1) {
        return Err(ApiError::unsupported("n", "more than one choice (n > 1)"));
    }
    for (name, v) in [
        ("frequency_penalty", c.frequency_penalty),
        ("presence_penalty", c.presence_penalty),
    ] {
        if v.is_some_and(|v| v != 0.0) {
            return Err(ApiError::unsupported(
                name,
                &format!("{name} (use repeat_penalty)"),
            ));
        }
    }
    if c.logit_bias.as_ref().is_some_and(|b| !b.is_empty()) {
        return Err(ApiError::unsupported("logit_bias", "logit_bias"));
    }
    let mut s = SamplingParams::default();
    if let Some(t) = c.temperature {
        s.temperature = t;
    }
    if let Some(p) = c.top_p {
        s.top_p = p;
    }
    // OpenAI takes top_p in [0, 1]: 0 keeps only the likeliest token, which is greedy
    // decoding (`temperature: 0, top_p: 0` is a common "deterministic" setting).
    if s.top_p == 0.0 {
        s.top_p = 1.0;
        s.temperature = 0.0;
    }
    if let Some(k) = c.top_k {
        // llama.cpp (and vLLM's clients, which send -1) read k <= 0 as no top-k cut.
        s.top_k = k.max(0);
    }
    if let Some(p) = c.min_p {
        s.min_p = p;
    }
    if let Some(p) = c.repeat_penalty {
        s.repeat_penalty = p;
    }
    if let Some(seed) = c.seed {
        // OpenAI's seeds are any integer; llama.cpp's are 32 bits.
        s.seed = Some(seed as u64 as u32);
    }
    s.validate().map_err(|e| match e {
        LlmError::InvalidSampling { field, .. } => {
            ApiError::invalid(Some(field.to_string()), e.to_string())
        }
        other => ApiError::invalid(None, other.to_string()),
    })?;
    Ok(s)
}

/// The reply's budget: what the request asks for (at least 1), else `default` (none: until
/// the model ends its turn or the context is full, where the engine stops by itself).
fn max_tokens(
    asked: Option<(&str, u64)>,
    default: Option<usize>,
) -> Result<Option<usize>, ApiError> {
    match asked {
        Some((field, 0)) => Err(ApiError::invalid(
            Some(field.to_string()),
            format!("{field} must be at least 1"),
        )),
        Some((_, n)) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        None => Ok(default),
    }
}

fn stops(c: &Common) -> Result<Vec<String>, ApiError> {
    let stops = c.stop.clone().map(wire::Stop::into_vec).unwrap_or_default();
    if stops.len() > 16 {
        return Err(ApiError::invalid(
            Some("stop".to_string()),
            "at most 16 stop strings",
        ));
    }
    Ok(stops.into_iter().filter(|s| !s.is_empty()).collect())
}

fn chat_job(
    s: &Server,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Job, ApiError> {
    s.admit(headers)?;
    let r: ChatRequest = wire::parse(&body_bytes(headers, body)?)?;
    let served = s.served()?;
    if r.logprobs == Some(true) || r.top_logprobs.is_some_and(|n| n > 0) {
        return Err(ApiError::unsupported("logprobs", "logprobs"));
    }
    // The deprecated form of tools: ignored, a forced call came back as plain text.
    // Refused where they would say something: `functions: []` and `function_call: "none"`
    // ask for nothing (some older clients send them always).
    if r.functions
        .as_ref()
        .is_some_and(|f| f.as_array().is_none_or(|a| !a.is_empty()))
    {
        return Err(ApiError::unsupported("functions", "functions (use tools)"));
    }
    if r.function_call
        .as_ref()
        .is_some_and(|c| !matches!(c.as_str(), Some("none" | "auto")))
    {
        return Err(ApiError::unsupported(
            "function_call",
            "function_call (use tool_choice)",
        ));
    }
    if r.messages.is_empty() {
        return Err(ApiError::invalid(
            Some("messages".to_string()),
            "messages is empty",
        ));
    }
    let sampling = sampling(&r.common)?;
    let tools = ToolSet::new(r.tools, r.tool_choice.as_ref(), r.parallel_tool_calls)?;
    let answer = response_schema(r.response_format.as_ref())?;
    let mut messages = chat_messages(&r.messages)?;
    if !served.template_shows_tools {
        messages = without_native_tools(messages, tools.as_ref());
    }
    let grammar = match (&tools, &answer) {
        (Some(t), a) => Some(t.grammar(a.as_ref())?),
        (None, Some(a)) => Some(Grammar::JsonSchema(a.clone())),
        (None, None) => None,
    };
    let untrusted = (0..messages.len()).collect();
    let prompt = Prompt::Chat {
        messages,
        tools: tools
            .as_ref()
            .filter(|_| served.template_shows_tools)
            .map(ToolSet::definitions),
        untrusted,
    };
    let asked = match (r.max_completion_tokens, r.common.max_tokens) {
        (Some(n), _) => Some(("max_completion_tokens", n)),
        (None, Some(n)) => Some(("max_tokens", n)),
        (None, None) => None,
    };
    let mut request = GenerateRequest::new(prompt)
        .sampling(sampling)
        .stop(stops(&r.common)?)
        .ignore_eos(r.common.ignore_eos);
    request.grammar = grammar;
    request.max_tokens = max_tokens(asked, None)?;
    Ok(Job {
        served,
        request,
        tools,
        api: Api::Chat,
        stream: r.common.stream,
        include_usage: r
            .common
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage),
    })
}

fn text_job(
    s: &Server,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Job, ApiError> {
    s.admit(headers)?;
    let r: CompletionRequest = wire::parse(&body_bytes(headers, body)?)?;
    let served = s.served()?;
    if r.echo == Some(true) {
        return Err(ApiError::unsupported("echo", "echo"));
    }
    if r.logprobs.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(ApiError::unsupported("logprobs", "logprobs"));
    }
    if r.best_of.is_some_and(|n| n > 1) {
        return Err(ApiError::unsupported("best_of", "best_of"));
    }
    if r.suffix.as_ref().is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::unsupported("suffix", "suffix (insertion)"));
    }
    let prompt = match &r.prompt {
        Value::String(p) => p.clone(),
        Value::Array(a) if a.len() == 1 && a[0].is_string() => {
            a[0].as_str().unwrap_or_default().to_string()
        }
        Value::Array(a) if a.iter().all(Value::is_string) => {
            return Err(ApiError::unsupported(
                "prompt",
                "more than one prompt per request",
            ))
        }
        _ => {
            return Err(ApiError::unsupported(
                "prompt",
                "a prompt of token ids (send text)",
            ))
        }
    };
    if prompt.is_empty() {
        return Err(ApiError::invalid(
            Some("prompt".to_string()),
            "prompt is empty",
        ));
    }
    let mut request = GenerateRequest::new(Prompt::Text(prompt))
        .sampling(sampling(&r.common)?)
        .stop(stops(&r.common)?)
        .ignore_eos(r.common.ignore_eos);
    // OpenAI's (and vLLM's) default for this endpoint: a text prompt has no turn to end, and
    // would otherwise run to the end of the context.
    request.max_tokens = max_tokens(r.common.max_tokens.map(|n| ("max_tokens", n)), Some(16))?;
    Ok(Job {
        served,
        request,
        tools: None,
        api: Api::Text,
        stream: r.common.stream,
        include_usage: r
            .common
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage),
    })
}

/// The JSON schema a `response_format` asks for, if any.
fn response_schema(format: Option<&Value>) -> Result<Option<Value>, ApiError> {
    let Some(f) = format else { return Ok(None) };
    let param = || Some("response_format".to_string());
    let schema = match f.get("type").and_then(Value::as_str) {
        None | Some("text") => return Ok(None),
        Some("json_object") => json!({"type": "object"}),
        Some("json_schema") => {
            match f.pointer("/json_schema/schema") {
                Some(s @ Value::Object(_)) => s.clone(),
                _ => return Err(ApiError::invalid(
                    param(),
                    "response_format json_schema needs json_schema.schema, a JSON schema object",
                )),
            }
        }
        other => {
            return Err(ApiError::invalid(
                param(),
                format!("response_format type {other:?} is none of text, json_object, json_schema"),
            ))
        }
    };
    Grammar::JsonSchema(schema.clone())
        .validate()
        .map_err(|e| ApiError::invalid(param(), format!("response_format: {e}")))?;
    Ok(Some(schema))
}

/// The API's messages as chat templates take them.
fn chat_messages(wire: &[wire::WireMessage]) -> Result<Vec<ChatMessage>, ApiError> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(wire.len());
    for (i, m) in wire.iter().enumerate() {
        let role = match m.role.as_str() {
            "system" | "developer" => "system",
            "user" => "user",
            "assistant" => "assistant",
            "tool" => "tool",
            other => {
                return Err(ApiError::invalid(
                    Some(format!("messages[{i}].role")),
                    format!("messages[{i}].role {other:?} is none of system, developer, user, assistant, tool"),
                ))
            }
        };
        let content = match &m.content {
            None => String::new(),
            Some(Content::Text(t)) => t.clone(),
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for (j, p) in parts.iter().enumerate() {
                    match (p.kind.as_str(), &p.text) {
                        ("text", Some(t)) => text.push_str(t),
                        (kind, _) => {
                            return Err(ApiError::unsupported(
                                &format!("messages[{i}].content[{j}]"),
                                &format!("content of type {kind:?} (this model reads text)"),
                            ))
                        }
                    }
                }
                text
            }
        };
        let mut msg = ChatMessage::new(role, content);
        if role == "assistant" {
            for (j, c) in m.tool_calls.iter().flatten().enumerate() {
                let at = format!("messages[{i}].tool_calls[{j}].function.arguments");
                let arguments = match &c.function.arguments {
                    Value::String(text) => serde_json::from_str::<Value>(text).map_err(|e| {
                        ApiError::invalid(Some(at.clone()), format!("{at} is not JSON: {e}"))
                    })?,
                    v => v.clone(),
                };
                msg.tool_calls.push(ToolCall {
                    id: c.id.clone().unwrap_or_else(|| format!("call_{i}_{j}")),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: c.function.name.clone(),
                        arguments,
                    },
                });
            }
        }
        if role == "tool" {
            let id = m.tool_call_id.clone();
            // Templates name a tool result by its tool; OpenAI's messages carry only the id.
            let name = m.name.clone().or_else(|| {
                out.iter()
                    .flat_map(|p| &p.tool_calls)
                    .find(|c| Some(&c.id) == id.as_ref())
                    .map(|c| c.function.name.clone())
            });
            msg.tool_call_id = id;
            msg.name = name;
        }
        out.push(msg);
    }
    Ok(out)
}

/// For a chat template with no place for tools: the tools described in the system message,
/// earlier calls written into the assistant's text and results given as the user's, in the
/// form the instructions teach.
fn without_native_tools(messages: Vec<ChatMessage>, tools: Option<&ToolSet>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = messages
        .into_iter()
        .map(|m| match m.role.as_str() {
            "assistant" if !m.tool_calls.is_empty() => {
                let mut text = m.content.clone();
                for c in &m.tool_calls {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    let call = json!({"name": c.function.name, "arguments": c.function.arguments});
                    text.push_str(&format!("{}\n{call}\n{}", tools::OPEN, tools::CLOSE));
                }
                ChatMessage::assistant(text)
            }
            "tool" => {
                ChatMessage::user(format!("<tool_response>\n{}\n</tool_response>", m.content))
            }
            _ => m,
        })
        .collect();
    if let Some(t) = tools {
        let text = t.instructions();
        match out.first_mut() {
            Some(first) if first.role == "system" => {
                first.content = format!("{}\n\n{text}", first.content);
            }
            _ => out.insert(0, ChatMessage::system(text)),
        }
    }
    out
}

/// No model to answer with (none loaded, or it went while the request waited): a 503 the
/// client may retry.
fn model_not_loaded(message: &str) -> ApiError {
    ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        message: message.into(),
        kind: "server_error",
        param: None,
        code: Some("model_not_loaded"),
    }
}

fn llm_error(e: LlmError, api: Api) -> ApiError {
    let prompt = || {
        Some(match api {
            Api::Chat => "messages".to_string(),
            Api::Text => "prompt".to_string(),
        })
    };
    match e {
        LlmError::ContextFull { needed, available } => ApiError::invalid(
            prompt(),
            format!(
                "the prompt needs {needed} tokens but the model's context holds {available} (burrow serve --ctx raises it)"
            ),
        )
        .with_code("context_length_exceeded"),
        LlmError::InvalidSampling { field, .. } => {
            ApiError::invalid(Some(field.to_string()), e.to_string())
        }
        LlmError::EmptyPrompt => ApiError::invalid(None, "the prompt is empty"),
        LlmError::Grammar(_) => ApiError::invalid(None, e.to_string()),
        LlmError::Template(_) | LlmError::ModelTemplate { .. } => ApiError::invalid(
            prompt(),
            format!("the messages cannot be rendered with the model's chat template: {e}"),
        ),
        // The model was switched or unloaded in the app while the request waited: a 503
        // the client may retry, not a 500 of the server's own.
        LlmError::ModelUnloaded => model_not_loaded(
            "the model was unloaded or switched in Burrow while this request waited: try again",
        ),
        other => ApiError::server(other.to_string()),
    }
}

/// Runs a job in the model's turn, answered whole or streamed. A prompt that does not fit
/// the context is refused by the engine before anything is sent; a reply that reaches the
/// end of the context stops there (`length`).
async fn run(s: Arc<Server>, job: Job) -> Response {
    let permit = match s.wait_turn().await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let Job {
        served,
        request,
        tools,
        api,
        stream: streamed,
        include_usage,
    } = job;
    let model = served.model.clone();
    // Rendering and tokenizing the prompt take a while for a long conversation.
    let started = tokio::task::spawn_blocking(move || model.generate(request)).await;
    let generation = match started {
        Ok(Ok(g)) => g,
        Ok(Err(e)) => return llm_error(e, api).into_response(),
        Err(e) => return ApiError::server(format!("the request failed: {e}")).into_response(),
    };
    let reply = Reply {
        id: s.id(match api {
            Api::Chat => "chatcmpl-",
            Api::Text => "cmpl-",
        }),
        created: now(),
        model: served.name.clone(),
        api,
    };
    if streamed {
        stream(s, reply, generation, tools.is_some(), include_usage, permit)
    } else {
        whole(s, reply, generation, tools.is_some(), permit).await
    }
}

/// What every response of one request repeats.
struct Reply {
    id: String,
    created: u64,
    model: String,
    api: Api,
}

impl Reply {
    fn chunk(&self, choice: Value) -> Value {
        let object = match self.api {
            Api::Chat => "chat.completion.chunk",
            Api::Text => "text_completion",
        };
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model,
               "choices": [choice]})
    }

    fn text_chunk(&self, text: &str) -> Value {
        match self.api {
            Api::Chat => self.chunk(json!({"index": 0, "delta": {"content": text},
                                           "logprobs": null, "finish_reason": null})),
            Api::Text => self.chunk(json!({"index": 0, "text": text, "logprobs": null,
                                           "finish_reason": null})),
        }
    }
}

/// A reply cut by its budget or the context says so even after calls: the last one may be cut
/// short, and "tool_calls" had a client run a call with half its arguments.
fn finish_reason(stop: StopReason, calls: bool) -> &'static str {
    match stop {
        StopReason::MaxTokens | StopReason::ContextFull => "length",
        _ if calls => "tool_calls",
        StopReason::EndOfTurn | StopReason::StopString | StopReason::Cancelled => "stop",
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.generated_tokens,
        "total_tokens": u.prompt_tokens + u.generated_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
    })
}

/// llama-server's names for the same figures, which its clients (Burrow's remote backend
/// among them) read.
fn timings_json(u: &Usage) -> Value {
    json!({
        "cache_n": u.cached_tokens,
        "prompt_n": u.prompt_tokens.saturating_sub(u.cached_tokens),
        "prompt_ms": u.prefill_ms,
        "predicted_n": u.generated_tokens,
        "predicted_ms": u.decode_ms,
    })
}

fn calls_json(s: &Server, calls: &[tools::Call]) -> Vec<Value> {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"index": i, "id": s.id("call_"), "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect()
}

async fn whole(
    s: Arc<Server>,
    reply: Reply,
    mut generation: Generation,
    tools: bool,
    permit: OwnedSemaphorePermit,
) -> Response {
    let mut text = String::new();
    let mut usage = Usage::default();
    let stop = loop {
        match generation.next().await {
            Some(GenerationEvent::Token(t)) => text.push_str(&t),
            Some(GenerationEvent::Usage(u)) => usage = u,
            Some(GenerationEvent::Done(stop)) => break stop,
            Some(GenerationEvent::Error(e)) => return llm_error(e, reply.api).into_response(),
            None => return ApiError::server("the generation ended early").into_response(),
        }
    };
    drop(permit);
    let (content, calls) = match tools.then(|| tools::read_calls(&text)).flatten() {
        Some((content, calls)) => (content, calls),
        None => (text, Vec::new()),
    };
    let reason = finish_reason(stop, !calls.is_empty());
    let choice = match reply.api {
        Api::Chat => {
            let mut message = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                if content.trim().is_empty() {
                    message["content"] = Value::Null;
                }
                let mut c = calls_json(&s, &calls);
                for v in &mut c {
                    v.as_object_mut().map(|o| o.remove("index"));
                }
                message["tool_calls"] = json!(c);
            }
            json!({"index": 0, "message": message, "logprobs": null, "finish_reason": reason})
        }
        Api::Text => {
            json!({"index": 0, "text": content, "logprobs": null, "finish_reason": reason})
        }
    };
    let mut body = reply.chunk(choice);
    body["object"] = json!(match reply.api {
        Api::Chat => "chat.completion",
        Api::Text => "text_completion",
    });
    body["usage"] = usage_json(&usage);
    body["timings"] = timings_json(&usage);
    Json(body).into_response()
}

fn sse(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// Streams the reply as server-sent events. The generation runs in a task that ends, and so
/// stops the model, as soon as the client is gone.
fn stream(
    s: Arc<Server>,
    reply: Reply,
    mut generation: Generation,
    tools: bool,
    include_usage: bool,
    permit: OwnedSemaphorePermit,
) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(32);
    tokio::spawn(async move {
        let _permit = permit;
        let send = |v: Value| {
            let tx = tx.clone();
            async move { tx.send(sse(&v)).await.is_ok() }
        };
        if reply.api == Api::Chat {
            let first = reply.chunk(
                json!({"index": 0, "delta": {"role": "assistant", "content": ""},
                                           "logprobs": null, "finish_reason": null}),
            );
            if !send(first).await {
                return;
            }
        }
        let mut calls = tools.then(CallStream::default);
        let mut usage = Usage::default();
        let stop = loop {
            let event = tokio::select! {
                e = generation.next() => e,
                _ = tx.closed() => return,
            };
            match event {
                Some(GenerationEvent::Token(t)) => {
                    let text = match &mut calls {
                        Some(c) => c.push(&t),
                        None => t,
                    };
                    if !text.is_empty() && !send(reply.text_chunk(&text)).await {
                        return;
                    }
                }
                Some(GenerationEvent::Usage(u)) => usage = u,
                Some(GenerationEvent::Done(stop)) => break stop,
                Some(GenerationEvent::Error(e)) => {
                    send(llm_error(e, reply.api).body()).await;
                    return;
                }
                None => {
                    send(ApiError::server("the generation ended early").body()).await;
                    return;
                }
            }
        };
        let made = match calls {
            Some(c) => {
                let (held, made) = c.finish();
                if !held.is_empty() && !send(reply.text_chunk(&held)).await {
                    return;
                }
                made
            }
            None => Vec::new(),
        };
        if !made.is_empty() {
            let delta = json!({"tool_calls": calls_json(&s, &made)});
            let chunk = reply.chunk(json!({"index": 0, "delta": delta, "logprobs": null,
                                           "finish_reason": null}));
            if !send(chunk).await {
                return;
            }
        }
        let reason = finish_reason(stop, !made.is_empty());
        let last = match reply.api {
            Api::Chat => {
                json!({"index": 0, "delta": {}, "logprobs": null, "finish_reason": reason})
            }
            Api::Text => json!({"index": 0, "text": "", "logprobs": null, "finish_reason": reason}),
        };
        let mut last = reply.chunk(last);
        last["timings"] = timings_json(&usage);
        if !send(last).await {
            return;
        }
        if include_usage {
            let mut u = reply.chunk(json!(null));
            u["choices"] = json!([]);
            u["usage"] = usage_json(&usage);
            if !send(u).await {
                return;
            }
        }
        let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::convert::Infallible>(b), rx))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|e| ApiError::server(e.to_string()).into_response())
}

async fn embeddings(
    State(s): State<Arc<Server>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match embed(&s, &headers, body).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

/// Inputs one embeddings request may carry (OpenAI's own limit).
const MAX_INPUTS: usize = 2048;

async fn embed(
    s: &Arc<Server>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Value, ApiError> {
    s.admit(headers)?;
    let r: EmbeddingRequest = wire::read(&wire::json(&body_bytes(headers, body)?)?)?;
    let inputs: Vec<String> = match &r.input {
        Value::String(t) => vec![t.clone()],
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_string) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        Value::Array(a) if a.is_empty() => {
            return Err(ApiError::invalid(
                Some("input".to_string()),
                "input is empty",
            ))
        }
        _ => {
            return Err(ApiError::unsupported(
                "input",
                "input of token ids (send text)",
            ))
        }
    };
    if inputs.len() > MAX_INPUTS {
        return Err(ApiError::invalid(
            Some("input".to_string()),
            format!("at most {MAX_INPUTS} inputs per request"),
        ));
    }
    if let Some(i) = inputs.iter().position(String::is_empty) {
        return Err(ApiError::invalid(
            Some(format!("input[{i}]")),
            format!("input[{i}] is empty"),
        ));
    }
    let base64 = match r.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                Some("encoding_format".to_string()),
                format!("encoding_format {other:?} is neither float nor base64"),
            ))
        }
    };
    let model = s
        .embedder
        .get_or_init(|| async {
            let (path, threads) = match &s.options.embedding {
                Ok(p) => (p.clone(), s.options.embed_threads),
                Err(why) => return Err(why.clone()),
            };
            tokio::task::spawn_blocking(move || EmbeddingModel::load(&path, threads))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map(Arc::new).map_err(|e| e.to_string()))
        })
        .await
        .clone()
        .map_err(|why| {
            ApiError::invalid(
                Some("model".to_string()),
                format!("no embedding model is available: {why} (burrow serve --embedding-model names one)"),
            )
            .with_status(StatusCode::NOT_FOUND)
            .with_code("model_not_found")
        })?;
    if let Some(d) = r.dimensions {
        if d as usize != model.dimension() {
            return Err(ApiError::invalid(
                Some("dimensions".to_string()),
                format!(
                    "this embedding model makes {} dimensions, not {d}",
                    model.dimension()
                ),
            ));
        }
    }
    let permit = s.wait_turn().await?;
    let m = model.clone();
    let texts = inputs.clone();
    let vectors = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let tokens: usize = texts.iter().map(|t| m.tokens(t).len()).sum();
        m.embed(&refs).map(|v| (v, tokens))
    })
    .await;
    drop(permit);
    let (vectors, tokens) = vectors
        .map_err(|e| ApiError::server(e.to_string()))?
        .map_err(|e| ApiError::server(format!("embedding failed: {e}")))?;
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let embedding = if base64 {
                use base64::Engine as _;
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    let name = s
        .options
        .embedding
        .as_ref()
        .map(|p| embedding_name(p))
        .unwrap_or_default();
    Ok(json!({"object": "list", "data": data, "model": name,
              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}))
}

#[cfg(test)]
mod tests;
