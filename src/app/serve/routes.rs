//! The HTTP routes of `burrow serve` and their handlers: the models listed, and each request
//! admitted, read off the runtime and handed to the model's turn.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::embeddings::{embed, embedding_name};
use super::reply::run;
use super::request::{chat_job, text_job, Job};
use super::wire::ApiError;
use super::{now, Server};

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
