//! A job run in the model's turn, and its reply answered whole: the response's shape, its
//! finish reason, usage and tool calls.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio::sync::OwnedSemaphorePermit;

use super::errors::llm_error;
use super::request::{Api, Job};
use super::streaming::stream;
use super::tools;
use super::wire::ApiError;
use super::{now, Server};
use crate::llm::{Generation, GenerationEvent, StopReason, Usage};

/// Runs a job in the model's turn, answered whole or streamed. A prompt that does not fit
/// the context is refused by the engine before anything is sent; a reply that reaches the
/// end of the context stops there (`length`).
pub(super) async fn run(s: Arc<Server>, job: Job) -> Response {
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
pub(super) struct Reply {
    id: String,
    created: u64,
    model: String,
    pub(super) api: Api,
}

impl Reply {
    pub(super) fn chunk(&self, choice: Value) -> Value {
        let object = match self.api {
            Api::Chat => "chat.completion.chunk",
            Api::Text => "text_completion",
        };
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model,
               "choices": [choice]})
    }

    pub(super) fn text_chunk(&self, text: &str) -> Value {
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
pub(super) fn finish_reason(stop: StopReason, calls: bool) -> &'static str {
    match stop {
        StopReason::MaxTokens | StopReason::ContextFull => "length",
        _ if calls => "tool_calls",
        StopReason::EndOfTurn | StopReason::StopString | StopReason::Cancelled => "stop",
    }
}

pub(super) fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.generated_tokens,
        "total_tokens": u.prompt_tokens + u.generated_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
    })
}

/// llama-server's names for the same figures, which its clients (Burrow's remote backend
/// among them) read.
pub(super) fn timings_json(u: &Usage) -> Value {
    json!({
        "cache_n": u.cached_tokens,
        "prompt_n": u.prompt_tokens.saturating_sub(u.cached_tokens),
        "prompt_ms": u.prefill_ms,
        "predicted_n": u.generated_tokens,
        "predicted_ms": u.decode_ms,
    })
}

pub(super) fn calls_json(s: &Server, calls: &[tools::Call]) -> Vec<Value> {
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
