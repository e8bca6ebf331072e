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
//! (grammar, reading them back, streaming around them); `routes` the routes and their
//! handlers; `request` a request read into a job for the model; `reply` the job run in the
//! model's turn and answered whole, `streaming` answered as server-sent events; `errors` the
//! model's errors as the API's; `embeddings` `/v1/embeddings`; `running` listening and
//! stopping; this module the server: the model it serves, its options and its queue.

pub mod tools;
pub mod wire;

mod embeddings;
mod errors;
mod reply;
mod request;
mod routes;
mod running;
mod streaming;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{header, HeaderMap, StatusCode};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::llm::embed::EmbeddingModel;
use crate::llm::remote::ApiKey;
use crate::llm::{ChatMessage, LanguageModel, LlmError};
use errors::model_not_loaded;
use wire::ApiError;

pub use routes::router;
pub use running::{bind, serve, start, Running, Stopper};

// Named by the tests as `super::llm_error` and `super::Api`.
#[cfg(test)]
use errors::llm_error;
#[cfg(test)]
use request::Api;

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

#[cfg(test)]
mod tests;
