//! Reading a chat or text completion request: its body, sampling, budget and stop strings
//! checked, its messages and tools put as the model takes them, into a job for the model.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderMap, StatusCode};
use serde_json::{json, Value};

use super::tools::{self, ToolSet};
use super::wire::{self, ApiError, ChatRequest, Common, CompletionRequest, Content};
use super::{Served, Server};
use crate::llm::template::{FunctionCall, ToolCall};
use crate::llm::{ChatMessage, GenerateRequest, Grammar, LlmError, Prompt, SamplingParams};

/// A generation request built from an API request, before it runs.
pub(super) struct Job {
    pub(super) served: Arc<Served>,
    pub(super) request: GenerateRequest,
    pub(super) tools: Option<ToolSet>,
    pub(super) api: Api,
    pub(super) stream: bool,
    pub(super) include_usage: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Api {
    Chat,
    Text,
}

/// A request's body, which must say it is JSON: a web page can send other types to this
/// machine without the browser asking first, but not `application/json`.
pub(super) fn body_bytes(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Bytes, ApiError> {
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

pub(super) fn chat_job(
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

pub(super) fn text_job(
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
