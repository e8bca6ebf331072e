//! A reply streamed as server-sent events, stopping the generation when the client leaves.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::errors::llm_error;
use super::reply::{calls_json, finish_reason, timings_json, usage_json, Reply};
use super::request::Api;
use super::tools::CallStream;
use super::wire::ApiError;
use super::Server;
use crate::llm::{Generation, GenerationEvent, Usage};

fn sse(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// Streams the reply as server-sent events. The generation runs in a task that ends, and so
/// stops the model, as soon as the client is gone.
pub(super) fn stream(
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
