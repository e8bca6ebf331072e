//! A streamed generation: the request sent (and retried), its events turned into the
//! engine's (tokens, usage, the stop reason), and cancellation honoured throughout.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::native::LastIds;
use super::request::ServerRequest;
use super::server::{quote, remote_err, status_err, transport_err};
use super::sse::{SseEvent, SseReader};
use super::Inner;
use crate::llm::engine::{GenerationEvent, GenerationSink, LlmError, StopReason, Usage};

/// Failed attempts before a request that never started streaming is given up on.
const ATTEMPTS: usize = 3;
/// How often a waiting request checks whether it was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// What one stream has given so far.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) text: String,
    pub(super) pieces: usize,
    pub(super) first_token: Option<Instant>,
    pub(super) finish: Option<String>,
    pub(super) usage: Option<Value>,
    pub(super) timings: Option<Value>,
    /// Native tool calls, assembled from their deltas: (name, arguments text).
    pub(super) tool_calls: Vec<(String, String)>,
    /// For each delta index, the call it goes on now and that call's id: a new id at an index
    /// is a new call (Ollama sends every call whole at index 0, and two merged into one).
    pub(super) call_slots: std::collections::HashMap<usize, (usize, Option<String>)>,
    /// `/completion`: the reply's ids, grouped with the text each group spells (ids whose
    /// text the server held back join the next piece it sends).
    pub(super) groups: Vec<(Vec<i64>, String)>,
    pub(super) held: Vec<i64>,
    pub(super) ids_broken: bool,
}

/// One request to send, with what its usage needs to know.
pub(super) struct Job {
    pub(super) request: ServerRequest,
    pub(super) max_tokens: Option<usize>,
    pub(super) started: Instant,
    pub(super) setup_ms: f64,
}

/// Why a stream ended early.
pub(super) enum StreamEnd {
    Cancelled,
    Failed(LlmError),
    /// llama-server refused a `%llguidance` grammar: it was built without llguidance.
    NoLlguidance(LlmError),
}

/// What llama-server answers (400) to a `%llguidance` grammar when built without llguidance
/// (common/sampling.cpp).
const LLGUIDANCE_OFF: &str = "llguidance is not enabled";

impl Inner {
    pub(super) async fn run(self: Arc<Self>, job: Job, sink: GenerationSink) {
        let Job {
            request:
                ServerRequest {
                    endpoint,
                    mut body,
                    mut without_llguidance,
                    native,
                    mut constrained,
                },
            max_tokens,
            started,
            setup_ms,
        } = job;
        let root = self.info.url.clone();
        let mut progress = Progress::default();
        let mut sent: Option<LastIds> = None;
        let mut attempt = 0;
        let outcome = loop {
            attempt += 1;
            // A retried request starts its reply's ids afresh (a failed attempt may have left
            // ids whose text was held back).
            progress.groups.clear();
            progress.held.clear();
            progress.ids_broken = false;
            // Nor does it keep a failed attempt's tool calls, passed on only at the end: the
            // retry's pieces were appended to them (`get_weatherget_weather`).
            progress.tool_calls.clear();
            progress.call_slots.clear();
            if progress.pieces == 0 {
                progress.first_token = None;
                progress.finish = None;
            }
            let step = async {
                if let (Some(native), None) = (&native, &sent) {
                    let ids = self.prompt_ids(native).await.map_err(StreamEnd::Failed)?;
                    body["prompt"] = json!(ids.ids);
                    sent = Some(ids);
                }
                self.stream(endpoint, &body, &sink, &mut progress).await
            };
            let result = tokio::select! {
                r = step => r,
                _ = cancelled(&sink) => Err(StreamEnd::Cancelled),
            };
            match result {
                Ok(()) => break Ok(()),
                Err(StreamEnd::Cancelled) => break Err(StreamEnd::Cancelled),
                Err(StreamEnd::NoLlguidance(e)) => {
                    let Some((mut gbnf, enforced)) = without_llguidance.take() else {
                        break Err(StreamEnd::Failed(e));
                    };
                    // Said once per server: every later request goes as GBNF from the start.
                    self.llguidance.store(false, Ordering::Relaxed);
                    tracing::info!("{root}: llama-server was built without llguidance: grammars go to it as GBNF");
                    if let Some(prompt) = body.get("prompt") {
                        gbnf["prompt"] = prompt.clone();
                    }
                    body = gbnf;
                    constrained = enforced;
                    // Not a failed attempt: nothing was generated.
                    attempt -= 1;
                }
                Err(StreamEnd::Failed(e)) => {
                    // Retried only while nothing was shown: a half-written step is not resent.
                    let retry = e.is_retryable() && progress.pieces == 0 && attempt < ATTEMPTS;
                    if !retry {
                        break Err(StreamEnd::Failed(e));
                    }
                    tracing::warn!("{root}: attempt {attempt} failed, retrying: {e}");
                    let wait = Duration::from_millis(500 * (1 << (attempt - 1)));
                    if sleep_unless_cancelled(wait, &sink).await {
                        break Err(StreamEnd::Cancelled);
                    }
                }
            }
        };
        let usage = usage_of(&progress, started, setup_ms, constrained);
        if native.is_some() {
            let kept = match (&outcome, sent) {
                (Ok(()), Some(mut last)) => {
                    last.generated = std::mem::take(&mut progress.groups);
                    Some(last)
                }
                // Whatever the server's cache holds now, the next prompt is tokenized whole.
                _ => None,
            };
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) = kept;
        }
        match outcome {
            Ok(()) => {
                // Without usage the count is of deltas, which may hold several tokens each:
                // then the request's own limit is taken for the cause (a full context made
                // the agent summarize its history and start the step again).
                let counted = progress.usage.is_some() || progress.timings.is_some();
                let stop = match progress.finish.as_deref() {
                    Some("length") => {
                        if max_tokens.is_some_and(|n| !counted || usage.generated_tokens >= n) {
                            StopReason::MaxTokens
                        } else {
                            StopReason::ContextFull
                        }
                    }
                    _ => StopReason::EndOfTurn,
                };
                sink.send(GenerationEvent::Usage(usage));
                sink.send(GenerationEvent::Done(stop));
            }
            Err(StreamEnd::Cancelled) => {
                sink.send(GenerationEvent::Usage(usage));
                sink.send(GenerationEvent::Done(StopReason::Cancelled));
            }
            Err(StreamEnd::Failed(e) | StreamEnd::NoLlguidance(e)) => {
                sink.send(GenerationEvent::Error(e));
            }
        }
    }

    /// One attempt: the request, then its events until `[DONE]` or the end of the body.
    async fn stream(
        &self,
        endpoint: &str,
        body: &Value,
        sink: &GenerationSink,
        progress: &mut Progress,
    ) -> Result<(), StreamEnd> {
        let root = &self.info.url;
        let req = self
            .server
            .request(reqwest::Method::POST, endpoint)
            .header("Accept", "text/event-stream")
            .json(body);
        let mut resp = tokio::select! {
            r = req.send() => r.map_err(|e| StreamEnd::Failed(transport_err(root, &e)))?,
            _ = cancelled(sink) => return Err(StreamEnd::Cancelled),
            _ = tokio::time::sleep(self.idle_timeout) => {
                return Err(StreamEnd::Failed(remote_err(root, format!(
                    "no answer within {} s", self.idle_timeout.as_secs()), true)))
            }
        };
        let status = resp.status();
        if !status.is_success() {
            // Bounded as the stream's chunks are: a proxy that sent a 5xx head and stalled
            // held the run until Stop.
            let text = tokio::select! {
                t = resp.text() => t.unwrap_or_default(),
                _ = cancelled(sink) => return Err(StreamEnd::Cancelled),
                _ = tokio::time::sleep(self.idle_timeout) => String::new(),
            };
            let e = status_err(root, status, &text);
            if status == reqwest::StatusCode::BAD_REQUEST && text.contains(LLGUIDANCE_OFF) {
                return Err(StreamEnd::NoLlguidance(e));
            }
            return Err(StreamEnd::Failed(e));
        }
        let mut sse = SseReader::default();
        loop {
            let chunk = tokio::select! {
                c = resp.chunk() => c.map_err(|e| StreamEnd::Failed(transport_err(root, &e)))?,
                _ = cancelled(sink) => return Err(StreamEnd::Cancelled),
                _ = tokio::time::sleep(self.idle_timeout) => {
                    return Err(StreamEnd::Failed(remote_err(root, format!(
                        "the server stopped sending for {} s", self.idle_timeout.as_secs()), true)))
                }
            };
            let Some(chunk) = chunk else {
                // The body ended without `[DONE]`: the server went away mid-stream. After the
                // finish reason the reply is whole, its tool calls too (they were passed on at
                // `[DONE]` alone, so a server that omits it lost them).
                if progress.finish.is_some() {
                    self.flush_tool_calls(sink, progress);
                    return Ok(());
                }
                return Err(StreamEnd::Failed(remote_err(
                    root,
                    "the server closed the stream before the reply was complete",
                    true,
                )));
            };
            for event in sse.push(&chunk) {
                let data = match event {
                    SseEvent::Data(data) => data,
                    SseEvent::Error(e) => {
                        let message = serde_json::from_str::<Value>(&e)
                            .ok()
                            .and_then(|v| {
                                v.get("message")
                                    .or_else(|| v.pointer("/error/message"))
                                    .and_then(Value::as_str)
                                    .map(str::to_string)
                            })
                            .unwrap_or(e);
                        return Err(StreamEnd::Failed(remote_err(
                            root,
                            format!("the server failed mid-stream: {message}"),
                            progress.pieces == 0,
                        )));
                    }
                };
                if data.trim() == "[DONE]" {
                    self.flush_tool_calls(sink, progress);
                    return Ok(());
                }
                self.event(&data, sink, progress)?;
            }
        }
    }

    /// One event's JSON: text to pass on, the finish reason, usage and timings.
    fn event(
        &self,
        data: &str,
        sink: &GenerationSink,
        progress: &mut Progress,
    ) -> Result<(), StreamEnd> {
        let root = &self.info.url;
        let v: Value = serde_json::from_str(data).map_err(|e| {
            StreamEnd::Failed(remote_err(
                root,
                format!("malformed event in the stream ({e}): {}", quote(data)),
                false,
            ))
        })?;
        if let Some(err) = v.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(StreamEnd::Failed(remote_err(
                root,
                format!("the server failed mid-stream: {message}"),
                progress.pieces == 0,
            )));
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            progress.usage = Some(u.clone());
        }
        if let Some(t) = v.get("timings") {
            progress.timings = Some(t.clone());
        }
        if v.get("choices").is_none() && v.get("stop").is_some() {
            return native_event(&v, sink, progress);
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return Ok(());
        };
        let piece = choice
            .pointer("/delta/content")
            .or_else(|| choice.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !piece.is_empty() {
            progress.first_token.get_or_insert_with(Instant::now);
            progress.pieces += 1;
            progress.text.push_str(piece);
            if !sink.send(GenerationEvent::Token(piece.to_string())) {
                return Err(StreamEnd::Cancelled);
            }
        }
        if let Some(calls) = choice
            .pointer("/delta/tool_calls")
            .and_then(Value::as_array)
        {
            progress.first_token.get_or_insert_with(Instant::now);
            for call in calls {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|i| !i.is_empty());
                let at = match progress.call_slots.get(&index) {
                    Some((at, known)) if id.is_none() || known.as_deref() == id => *at,
                    _ => {
                        progress.tool_calls.push((String::new(), String::new()));
                        let at = progress.tool_calls.len() - 1;
                        progress
                            .call_slots
                            .insert(index, (at, id.map(str::to_string)));
                        at
                    }
                };
                let slot = &mut progress.tool_calls[at];
                if let Some(n) = call.pointer("/function/name").and_then(Value::as_str) {
                    slot.0.push_str(n);
                }
                if let Some(a) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    slot.1.push_str(a);
                }
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            progress.finish = Some(f.to_string());
        }
        Ok(())
    }

    /// Native tool calls become text in the Hermes form (`<tool_call>{…}</tool_call>`), which
    /// is how the tool-calls protocol reads a model's calls in-process.
    fn flush_tool_calls(&self, sink: &GenerationSink, progress: &mut Progress) {
        for (name, args) in std::mem::take(&mut progress.tool_calls) {
            let arguments: Value =
                serde_json::from_str(&args).unwrap_or(Value::String(args.clone()));
            let text = format!(
                "<tool_call>\n{}\n</tool_call>",
                json!({"name": name, "arguments": arguments})
            );
            progress.pieces += 1;
            progress.text.push_str(&text);
            sink.send(GenerationEvent::Token(text));
        }
    }
}

/// An event of llama-server's `/completion`: a piece of text with the ids it came from,
/// or the last one, with why it stopped.
pub(super) fn native_event(
    v: &Value,
    sink: &GenerationSink,
    progress: &mut Progress,
) -> Result<(), StreamEnd> {
    if let Some(ids) = v.get("tokens").and_then(Value::as_array) {
        progress.held.extend(ids.iter().filter_map(Value::as_i64));
    }
    let piece = v.get("content").and_then(Value::as_str).unwrap_or_default();
    if !piece.is_empty() {
        progress.first_token.get_or_insert_with(Instant::now);
        progress.pieces += 1;
        progress.text.push_str(piece);
        // The server sends no event for a token that ends inside a character, so a
        // piece beyond ASCII may lack an id: the reply's ids are trusted up to there.
        let ids = std::mem::take(&mut progress.held);
        if piece.is_ascii() && !ids.is_empty() && !progress.ids_broken {
            progress.groups.push((ids, piece.to_string()));
        } else {
            progress.ids_broken = true;
        }
        if !sink.send(GenerationEvent::Token(piece.to_string())) {
            return Err(StreamEnd::Cancelled);
        }
    }
    if v.get("stop").and_then(Value::as_bool) == Some(true) {
        let stop = v.get("stop_type").and_then(Value::as_str).unwrap_or("eos");
        // The event that ended on a stop string or an end-of-generation token carried that
        // token's id with only the text before it (the stop string is cut, the end token
        // has no text): its ids spell more than its text, so they are not reused.
        if matches!(stop, "word" | "eos") {
            progress.groups.pop();
        }
        progress.finish = Some(if stop == "limit" { "length" } else { "stop" }.to_string());
    }
    Ok(())
}

/// Resolves once the generation is cancelled (or its receiver is gone).
async fn cancelled(sink: &GenerationSink) {
    while !sink.is_cancelled() {
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

/// Sleeps `wait`; true if cancelled meanwhile.
async fn sleep_unless_cancelled(wait: Duration, sink: &GenerationSink) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = cancelled(sink) => true,
    }
}

fn usage_of(progress: &Progress, started: Instant, setup_ms: f64, constrained: bool) -> Usage {
    let now = Instant::now();
    let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1000.0;
    let num =
        |v: &Option<Value>, key: &str| v.as_ref().and_then(|v| v.get(key)).and_then(Value::as_f64);
    let u = &progress.usage;
    let t = &progress.timings;
    let ttft = progress.first_token.map(|f| ms(started, f)).unwrap_or(0.0);
    let cached = num(t, "cache_n")
        .or_else(|| {
            u.as_ref()
                .and_then(|u| u.pointer("/prompt_tokens_details/cached_tokens"))
                .and_then(Value::as_f64)
        })
        .unwrap_or(0.0) as usize;
    let prompt_tokens = num(u, "prompt_tokens")
        .map(|n| n as usize)
        .or_else(|| num(t, "prompt_n").map(|n| n as usize + cached))
        .unwrap_or(0);
    let generated = num(u, "completion_tokens")
        .or_else(|| num(t, "predicted_n"))
        .map(|n| n as usize)
        .unwrap_or(progress.pieces);
    Usage {
        prompt_tokens,
        cached_tokens: cached,
        generated_tokens: generated,
        // A server does not say what its grammar forced.
        forced_tokens: 0,
        setup_ms,
        prefill_ms: num(t, "prompt_ms").unwrap_or((ttft - setup_ms).max(0.0)),
        decode_ms: num(t, "predicted_ms")
            .unwrap_or_else(|| progress.first_token.map(|f| ms(f, now)).unwrap_or(0.0)),
        time_to_first_token_ms: ttft,
        unconstrained: !constrained,
    }
}
