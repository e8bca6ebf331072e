//! `/v1/embeddings`: texts embedded with the embedding model, loaded on the first request.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use super::request::body_bytes;
use super::wire::{self, ApiError, EmbeddingRequest};
use super::Server;
use crate::llm::embed::EmbeddingModel;

pub(super) fn embedding_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Inputs one embeddings request may carry (OpenAI's own limit).
const MAX_INPUTS: usize = 2048;

pub(super) async fn embed(
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
