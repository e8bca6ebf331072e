//! The server itself: how every request reaches it (with the key), how its failures read,
//! and what it says about itself when connecting.

use serde_json::Value;

use super::{ApiKey, RemoteInfo, RemoteOptions, ServerKind, CONNECT_TIMEOUT};
use crate::llm::engine::LlmError;

/// A server error body is quoted up to this many characters.
const QUOTE_CHARS: usize = 300;

/// The server's address and how to reach it: every request to it goes out through `request`,
/// which adds the key.
pub(super) struct Server {
    pub(super) client: reqwest::Client,
    pub(super) root: String,
    pub(super) key: Option<ApiKey>,
}

impl Server {
    pub(super) fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let req = self.client.request(method, format!("{}{path}", self.root));
        match &self.key {
            Some(k) => req.bearer_auth(&k.0),
            None => req,
        }
    }

    /// A short exchange (not a generation): the answer's JSON, or an error naming the server.
    async fn json(&self, req: reqwest::RequestBuilder, path: &str) -> Result<Value, LlmError> {
        let root = &self.root;
        let resp = req
            .timeout(CONNECT_TIMEOUT)
            .send()
            .await
            .map_err(|e| transport_err(root, &e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| transport_err(root, &e))?;
        if !status.is_success() {
            return Err(status_err(root, status, &text));
        }
        serde_json::from_str(&text).map_err(|e| {
            remote_err(
                root,
                format!("{path} is not JSON ({e}): {}", quote(&text)),
                false,
            )
        })
    }

    async fn get(&self, path: &str) -> Result<Value, LlmError> {
        self.json(self.request(reqwest::Method::GET, path), path)
            .await
    }

    pub(super) async fn post(&self, path: &str, body: &Value) -> Result<Value, LlmError> {
        self.json(self.request(reqwest::Method::POST, path).json(body), path)
            .await
    }
}

pub(super) fn remote_err(url: &str, reason: impl Into<String>, retryable: bool) -> LlmError {
    LlmError::Remote {
        url: url.to_string(),
        reason: reason.into(),
        retryable,
    }
}

/// A transport failure, said plainly: refused, timed out, or cut.
pub(super) fn transport_err(url: &str, e: &reqwest::Error) -> LlmError {
    let reason = if e.is_connect() {
        "cannot connect (is the server running?)".to_string()
    } else if e.is_timeout() {
        "the server did not answer in time".to_string()
    } else if e.is_body() || e.is_decode() {
        "the server closed the connection mid-response".to_string()
    } else {
        // reqwest's message names the URL (ours, without the key) and the cause.
        crate::llm::with_causes(e.to_string(), e)
    };
    remote_err(url, reason, true)
}

pub(super) fn quote(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(QUOTE_CHARS) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

/// An HTTP error status as a clear error: the server's own message where it gave one in
/// OpenAI's shape. 408, 429 and 5xx are worth retrying; other 4xx are the request's fault.
pub(super) fn status_err(url: &str, status: reqwest::StatusCode, body: &str) -> LlmError {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| quote(body));
    let retryable = status.is_server_error()
        || status == reqwest::StatusCode::TOO_MANY_REQUESTS
        || status == reqwest::StatusCode::REQUEST_TIMEOUT;
    let hint = match status.as_u16() {
        401 | 403 => " (check the API key: --api-key-env names the variable holding it)",
        _ => "",
    };
    remote_err(
        url,
        format!("the server answered {status}: {message}{hint}"),
        retryable,
    )
}

pub(super) async fn probe(
    server: &Server,
    options: &RemoteOptions,
) -> Result<RemoteInfo, LlmError> {
    let root = server.root.as_str();
    let listed = server.get("/v1/models").await?;
    let data = listed
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            remote_err(
                root,
                "/v1/models has no \"data\" list: not an OpenAI-compatible server",
                false,
            )
        })?;
    let models: Vec<String> = data
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    let model =
        match &options.model {
            Some(want) => models.iter().find(|m| *m == want).cloned().ok_or_else(|| {
                LlmError::ModelNotFound {
                    query: want.clone(),
                    available: models.clone(),
                }
            })?,
            None => models
                .first()
                .cloned()
                .ok_or_else(|| remote_err(root, "the server lists no models", false))?,
        };
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model.as_str()));
    let vllm_len = entry
        .and_then(|m| m.get("max_model_len"))
        .and_then(Value::as_u64);
    let owned_by_vllm = entry
        .and_then(|m| m.get("owned_by"))
        .and_then(Value::as_str)
        == Some("vllm");
    // Burrow's own server lists it as `context_length`, LM Studio as `max_context_length`.
    let listed_len = entry
        .and_then(|m| {
            m.get("context_length")
                .or_else(|| m.get("max_context_length"))
        })
        .and_then(Value::as_u64);
    // llama-server describes itself at /props; other servers answer 404 there.
    let props = server.get("/props").await.ok();
    let n_ctx = props.as_ref().and_then(|p| {
        p.pointer("/default_generation_settings/n_ctx")
            .or_else(|| p.get("n_ctx"))
            .and_then(Value::as_u64)
    });
    let (kind, reported) = match (n_ctx, vllm_len) {
        (Some(n), _) => (ServerKind::LlamaServer, Some(n)),
        (None, Some(n)) => (ServerKind::Vllm, Some(n)),
        (None, None) if owned_by_vllm => (ServerKind::Vllm, None),
        (None, None) => (ServerKind::OpenAi, listed_len),
    };
    Ok(RemoteInfo {
        url: root.to_string(),
        model,
        models,
        kind,
        context_length: reported
            .map(|n| n as usize)
            .or(options.context_length)
            .unwrap_or(4096),
        context_reported: reported.is_some(),
    })
}
