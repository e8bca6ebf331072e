//! A generation request as the server takes it: the endpoint, the JSON body (prompt, sampling,
//! grammar) and the chat messages in OpenAI's shape, with untrusted text defanged.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::native::NativePrompt;
use super::{RemoteModel, ServerKind};
use crate::llm::engine::{GenerateRequest, LlmError, Prompt};
use crate::llm::grammar::{json_schema_to_compact_gbnf, Grammar};
use crate::llm::template::ChatMessage;

/// A request as it goes to the server.
pub(super) struct ServerRequest {
    pub(super) endpoint: &'static str,
    pub(super) body: Value,
    /// The same request with the grammar as GBNF, for a llama-server built without
    /// llguidance, and whether that still constrains the step.
    pub(super) without_llguidance: Option<(Value, bool)>,
    /// The prompt, to send as ids (llama-server's `/completion`).
    pub(super) native: Option<NativePrompt>,
    /// Whether the request's grammar is enforced.
    pub(super) constrained: bool,
}

impl RemoteModel {
    /// `request` as this server takes it: the endpoint, the body and what its stream needs.
    pub(super) fn build_request(
        &self,
        request: &GenerateRequest,
    ) -> Result<ServerRequest, LlmError> {
        let info = &self.inner.info;
        let llama = info.kind == ServerKind::LlamaServer;
        let mut body = json!({
            "model": info.model,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let native = match &request.prompt {
            Prompt::Chat {
                messages,
                tools,
                untrusted,
            } if llama && tools.as_ref().is_none_or(|t| t.is_empty()) => {
                Some(NativePrompt::Chat(openai_messages(messages, untrusted)))
            }
            Prompt::Text(t) if llama => Some(NativePrompt::Text(t.clone())),
            Prompt::Segments(s) if llama => Some(NativePrompt::Text(segments_text(s))),
            _ => None,
        };
        let endpoint = match &request.prompt {
            _ if native.is_some() => {
                body["return_tokens"] = json!(true);
                "/completion"
            }
            Prompt::Chat {
                messages,
                tools,
                untrusted,
            } => {
                body["messages"] = openai_messages(messages, untrusted);
                if let Some(tools) = tools.as_ref().filter(|t| !t.is_empty()) {
                    body["tools"] = Value::Array(tools.clone());
                }
                "/v1/chat/completions"
            }
            Prompt::Text(t) => {
                body["prompt"] = Value::String(t.clone());
                "/v1/completions"
            }
            Prompt::Segments(s) => {
                body["prompt"] = Value::String(segments_text(s));
                "/v1/completions"
            }
        };
        let s = &request.sampling;
        s.validate()?;
        body["temperature"] = json!(s.temperature);
        body["top_p"] = json!(s.top_p);
        if let Some(seed) = s.seed {
            body["seed"] = json!(seed);
        }
        if let Some(n) = request.max_tokens {
            body["max_tokens"] = json!(n);
        }
        if !request.stop.is_empty() {
            body["stop"] = json!(request.stop);
        }
        let llama = info.kind == ServerKind::LlamaServer;
        if llama || info.kind == ServerKind::Vllm {
            // Both read these beyond OpenAI's fields; others would refuse or ignore them.
            body["top_k"] = json!(s.top_k);
            body["min_p"] = json!(s.min_p);
            // vLLM's name for it: it ignored `repeat_penalty` with a warning, and the agent's
            // steps ran without their penalty there.
            let penalty = if llama {
                "repeat_penalty"
            } else {
                "repetition_penalty"
            };
            body[penalty] = json!(s.repeat_penalty);
        }
        if llama {
            body["repeat_last_n"] = json!(s.repeat_last_n);
            body["cache_prompt"] = json!(true);
            if request.ignore_eos {
                body["ignore_eos"] = json!(true);
            }
        }
        // Only to `/completion`: with native tools the chat endpoint refuses any grammar.
        let llguidance = match &request.grammar {
            Some(g) if native.is_some() && self.inner.llguidance.load(Ordering::Relaxed) => {
                // A grammar llguidance cannot compile would run unconstrained there (the
                // server only logs it): refused here, as the engine refuses it.
                g.validate()?;
                g.to_llguidance_text()
            }
            _ => None,
        };
        let mut without_llguidance = None;
        let constrained = match (&request.grammar, llguidance) {
            (None, _) => true,
            (Some(g), Some(text)) => {
                // The grammar the engine enforces in-process, compiled by the same
                // llguidance there; GBNF kept for a server built without it.
                let mut gbnf = body.clone();
                let enforced = apply_grammar(&mut gbnf, g, info.kind)?;
                without_llguidance = Some((gbnf, enforced));
                body["grammar"] = Value::String(text);
                true
            }
            (Some(g), None) => apply_grammar(&mut body, g, info.kind)?,
        };
        if native.is_some() {
            // `/completion` reads a schema from its own field.
            for b in std::iter::once(&mut body).chain(without_llguidance.as_mut().map(|(b, _)| b)) {
                if let Some(schema) = b
                    .as_object_mut()
                    .and_then(|o| o.remove("response_format"))
                    .and_then(|f| f.pointer("/json_schema/schema").cloned())
                {
                    b["json_schema"] = schema;
                }
            }
        }
        Ok(ServerRequest {
            endpoint,
            body,
            without_llguidance,
            native,
            constrained,
        })
    }
}

/// A prompt of segments as one text, the untrusted ones defanged (see [`defang`]).
fn segments_text(segments: &[crate::llm::engine::PromptSegment]) -> String {
    segments
        .iter()
        .map(|seg| {
            if seg.trusted {
                seg.text.clone()
            } else {
                defang(&seg.text)
            }
        })
        .collect()
}

/// Puts `grammar` in the request as the server understands it; false when it cannot be
/// enforced there (the step then runs free).
pub(super) fn apply_grammar(
    body: &mut Value,
    grammar: &Grammar,
    kind: ServerKind,
) -> Result<bool, LlmError> {
    match (grammar, kind) {
        (Grammar::Gbnf(_) | Grammar::JsonSchema(_), ServerKind::LlamaServer) => {
            // The same GBNF llama.cpp's sampler gets in-process (JSON schemas converted by
            // Burrow, compact as the engine writes them), so the server's tokens can match.
            let gbnf = match grammar {
                // Burrow's converter does not say every keyword llguidance enforces here (the
                // thought's `pattern` with Unicode classes, the exclusions of repeated calls,
                // numeric bounds): without them the
                // schema still fixes every key, value type and the compact form, where the
                // server's own converter would drop them and allow any whitespace too.
                Grammar::JsonSchema(schema) => json_schema_to_compact_gbnf(schema)
                    .or_else(|_| json_schema_to_compact_gbnf(&without_patterns(schema))),
                other => other.to_gbnf(),
            };
            match gbnf {
                Ok(gbnf) => body["grammar"] = Value::String(gbnf),
                Err(e) => {
                    tracing::debug!("grammar left to the server's converter: {e}");
                    let Grammar::JsonSchema(schema) = grammar else {
                        return Ok(false);
                    };
                    body["response_format"] = response_format(schema);
                }
            }
            Ok(true)
        }
        (Grammar::JsonSchema(schema), _) => {
            body["response_format"] = response_format(schema);
            Ok(true)
        }
        (Grammar::Gbnf(gbnf), ServerKind::Vllm) => {
            body["guided_grammar"] = Value::String(gbnf.clone());
            Ok(true)
        }
        (Grammar::Lark(lark), ServerKind::Vllm) => {
            body["guided_grammar"] = Value::String(lark.clone());
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// `schema` without what Burrow's GBNF converter cannot say: `pattern`, `format`, numeric
/// bounds and Burrow's `x-` keywords (what they ruled out is then the parser's and the tools'
/// to refuse, as observations).
fn without_patterns(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| {
                    let string_rule = matches!(k.as_str(), "pattern" | "format") && v.is_string();
                    let bound = matches!(
                        k.as_str(),
                        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum"
                    ) && v.is_number();
                    // Burrow's own keywords (`x-not`: values a repeated call may not take).
                    let extension = k.starts_with("x-");
                    !(string_rule || bound || extension)
                })
                .map(|(k, v)| (k.clone(), without_patterns(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_patterns).collect()),
        other => other.clone(),
    }
}

fn response_format(schema: &Value) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {"name": "step", "schema": schema, "strict": true},
    })
}

/// A chat's messages in OpenAI's shape, tool output and the messages listed in `untrusted`
/// as data.
fn openai_messages(messages: &[ChatMessage], untrusted: &[usize]) -> Value {
    Value::Array(
        messages
            .iter()
            .enumerate()
            .map(|(i, m)| openai_message(m, m.role == "tool" || untrusted.contains(&i)))
            .collect(),
    )
}

/// A message in OpenAI's shape: tool-call arguments as a JSON string. `data` (workspace text,
/// tool output) has the spellings of common special tokens broken, since the server tokenizes
/// the whole prompt with special tokens parsed and such text could otherwise forge a turn.
pub(super) fn openai_message(m: &ChatMessage, data: bool) -> Value {
    let content = if data {
        defang(&m.content)
    } else {
        m.content.clone()
    };
    let mut v = json!({"role": m.role, "content": content});
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = Value::Array(
            m.tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": c.kind,
                        "function": {
                            "name": c.function.name,
                            "arguments": match &c.function.arguments {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            },
                        },
                    })
                })
                .collect(),
        );
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    if let Some(name) = &m.name {
        v["name"] = json!(name);
    }
    v
}

/// Breaks the spellings of chat-format control tokens (`<|im_end|>`, `<s>`, `[INST]`,
/// `<start_of_turn>`, …) with a word joiner, which no tokenizer reads as part of them. The
/// in-process engine tokenizes such text without special tokens instead; a remote server
/// offers no such switch for chat messages.
pub fn defang(text: &str) -> String {
    const JOIN: char = '\u{2060}';
    const MARKERS: [&str; 10] = [
        "<|",
        "|>",
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "<start_of_turn>",
        "<end_of_turn>",
        "<|begin_of_text|>",
        "<｜",
    ];
    if !MARKERS.iter().any(|m| text.contains(m)) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(m) = MARKERS.iter().find(|m| rest.starts_with(**m)) {
            let mut chars = m.chars();
            if let Some(first) = chars.next() {
                out.push(first);
                out.push(JOIN);
                out.push_str(chars.as_str());
            }
            rest = &rest[m.len()..];
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}
