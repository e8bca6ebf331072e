//! `burrow serve` over a scripted model: the API's shapes, tool calls, errors, keys and the
//! queue, through real HTTP. The real model and the official `openai` client: tests/serve.rs.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::llm::fake::{FakeModel, FakeTurn};

const CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

async fn start(model: FakeModel, options: ServeOptions) -> (String, Arc<Server>) {
    let server = Arc::new(Server::new(Some(Arc::new(model)), options));
    let listener = bind("127.0.0.1", 0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve(listener, server.clone(), std::future::pending()));
    (url, server)
}

async fn post(url: &str, path: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// The `data:` payloads of a streamed reply, `[DONE]` included.
async fn events(url: &str, body: Value) -> Vec<String> {
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = r.text().await.unwrap();
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").unwrap().to_string())
        .collect()
}

fn weather_tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_whole_and_streamed_says_the_same() {
    let text = "The answer is 42.";
    let fake = FakeModel::new([FakeTurn::text(text), FakeTurn::text(text)]);
    let (url, _) = start(fake.clone(), ServeOptions::default()).await;
    let messages = json!([{"role": "system", "content": "Be brief."},
                          {"role": "user", "content": [{"type": "text", "text": "What is it?"}]}]);
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"model": "any", "messages": messages}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "fake");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["message"]["content"], text);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["completion_tokens"], 4);
    let prompt = &fake.requests()[0].prompt;
    assert!(
        prompt.contains("Be brief.") && prompt.contains("What is it?"),
        "{prompt}"
    );
    // Every message's content is data: its control-token spellings are not parsed.
    assert_eq!(
        fake.requests()[0].untrusted,
        vec!["Be brief.", "What is it?"]
    );

    let ev = events(
        &url,
        json!({"messages": messages, "stream": true,
                                 "stream_options": {"include_usage": true}}),
    )
    .await;
    assert_eq!(ev.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == chunks[0]["id"]));
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, text);
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("stop")]);
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_go_out_as_openai_tool_calls_and_come_back_as_history() {
    let fake = FakeModel::new([
        FakeTurn::text(CALL),
        FakeTurn::text(&format!("Let me look.\n{CALL}")),
        FakeTurn::text("It is 18C in Paris."),
    ]);
    let (url, server) = start(fake.clone(), ServeOptions::default()).await;
    // ChatML has no place for tools: they are described in the system message.
    assert!(!server.current().unwrap().template_shows_tools);
    let ask = json!([{"role": "user", "content": "Weather in Paris?"}]);
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": ask, "tools": weather_tools(), "tool_choice": "required"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    let id = call["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("call_"));
    let asked = &fake.requests()[0];
    assert!(
        asked.prompt.contains("<tools>") && asked.prompt.contains("get_weather"),
        "{}",
        asked.prompt
    );
    assert!(
        asked.grammar.as_deref().unwrap().contains("call_0"),
        "the calls are held to the schema"
    );

    // Streamed: the text before the call as content, the call as a tool_calls delta.
    let ev = events(
        &url,
        json!({"messages": ask, "tools": weather_tools(), "stream": true}),
    )
    .await;
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Let me look.\n");
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0][0]["index"], 0);
    assert_eq!(calls[0][0]["function"]["name"], "get_weather");
    assert_eq!(
        chunks
            .iter()
            .rev()
            .find_map(|c| c["choices"][0]["finish_reason"].as_str()),
        Some("tool_calls")
    );

    // The round trip: the call and its result go back into the prompt in the taught form.
    let history = json!([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": id, "content": "18C, sunny"}]);
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": history, "tools": weather_tools()}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "It is 18C in Paris.");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let prompt = &fake.requests()[2].prompt;
    assert!(prompt.contains("<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>"), "{prompt}");
    assert!(
        prompt.contains("<tool_response>\n18C, sunny\n</tool_response>"),
        "{prompt}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_that_shows_tools_gets_them_itself() {
    let template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}\
                    {% if tools %}{% for t in tools %}tool {{ t.function.name }}\n{% endfor %}{% endif %}";
    let fake = FakeModel::new([FakeTurn::text(CALL)]).with_template(template);
    let (url, server) = start(fake.clone(), ServeOptions::default()).await;
    assert!(server.current().unwrap().template_shows_tools);
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"tools": weather_tools(),
        "messages": [{"role": "user", "content": "Weather?"}]}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let prompt = &fake.requests()[0].prompt;
    assert_eq!(prompt, "user: Weather?\ntool get_weather\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_schema_response_is_held_to_its_schema() {
    let fake = FakeModel::new([FakeTurn::text("{\"city\": \"Paris\"}")]);
    let (url, _) = start(fake.clone(), ServeOptions::default()).await;
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let (status, v) = post(&url, "/v1/chat/completions", json!({
        "messages": [{"role": "user", "content": "A city?"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}})).await;
    assert_eq!(status, 200, "{v}");
    let grammar: Value =
        serde_json::from_str(fake.requests()[0].grammar.as_deref().unwrap()).unwrap();
    assert_eq!(grammar, schema);
}

#[tokio::test(flavor = "multi_thread")]
async fn text_completions() {
    let fake = FakeModel::new([
        FakeTurn::text("fox jumps"),
        FakeTurn::text("fox jumps over"),
    ]);
    let (url, _) = start(fake.clone(), ServeOptions::default()).await;
    let (status, v) = post(
        &url,
        "/v1/completions",
        json!({"prompt": "The quick brown", "max_tokens": 2, "stop": "\n"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["choices"][0]["text"], "fox jumps");
    assert_eq!(fake.requests()[0].prompt, "The quick brown");
    assert_eq!(fake.requests()[0].max_tokens, Some(2));
    assert_eq!(fake.requests()[0].stop, vec!["\n"]);
    let (_, v) = post(
        &url,
        "/v1/completions",
        json!({"prompt": "The quick brown", "max_tokens": 2}),
    )
    .await;
    assert_eq!(v["choices"][0]["finish_reason"], "length");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_get_openai_errors_that_name_the_field() {
    let fake = FakeModel::new([]).with_context_length(64);
    let options = ServeOptions {
        max_body_bytes: 4096,
        ..Default::default()
    };
    let (url, _) = start(fake.clone(), options).await;
    let user = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            Some("messages[0].role"),
            None,
        ),
        (json!({"messages": "hi"}), Some("messages"), None),
        (
            json!({"messages": user, "temperature": -1}),
            Some("temperature"),
            None,
        ),
        (
            json!({"messages": user, "n": 2}),
            Some("n"),
            Some("unsupported_parameter"),
        ),
        (
            json!({"messages": user, "logprobs": true}),
            Some("logprobs"),
            Some("unsupported_parameter"),
        ),
        (
            json!({"messages": user, "tools": weather_tools(), "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
            Some("tool_choice"),
            None,
        ),
        (
            json!({"messages": user, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}),
            Some("response_format"),
            None,
        ),
        (
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]}),
            Some("messages[0].tool_calls[0].function.arguments"),
            None,
        ),
        (
            json!({"messages": [{"role": "user", "content": "word ".repeat(200)}]}),
            Some("messages"),
            Some("context_length_exceeded"),
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}),
            Some("messages[0].content[0]"),
            Some("unsupported_parameter"),
        ),
        // The fields both endpoints share are named too (read through serde's flatten, their
        // path was lost: "the body is not a valid request", param null).
        (
            json!({"messages": user, "max_tokens": "100"}),
            Some("max_tokens"),
            None,
        ),
        (
            json!({"messages": user, "temperature": "hot"}),
            Some("temperature"),
            None,
        ),
        (json!({"messages": user, "stop": 5}), Some("stop"), None),
        // A budget of nothing still produced one token.
        (
            json!({"messages": user, "max_tokens": 0}),
            Some("max_tokens"),
            None,
        ),
        (
            json!({"messages": user, "max_completion_tokens": 0}),
            Some("max_completion_tokens"),
            None,
        ),
    ];
    for (body, param, code) in cases {
        let (status, v) = post(&url, "/v1/chat/completions", body.clone()).await;
        assert_eq!(status, 400, "{body} -> {v}");
        let e = &v["error"];
        assert_eq!(e["type"], "invalid_request_error", "{v}");
        assert!(!e["message"].as_str().unwrap().is_empty());
        assert_eq!(e["param"].as_str(), param, "{body} -> {v}");
        assert_eq!(e["code"].as_str(), code, "{body} -> {v}");
    }
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{v}"
    );
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "x".repeat(5000)}]}),
    )
    .await;
    assert_eq!(status, 413, "{v}");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    let (status, v) = post(&url, "/v1/nothing", json!({})).await;
    assert_eq!(status, 404);
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1/chat/completions"));
    for (body, param) in [
        (json!({"prompt": "a", "echo": true}), "echo"),
        (json!({"prompt": [1, 2, 3]}), "prompt"),
        (json!({"prompt": ["a", "b"]}), "prompt"),
        (json!({"prompt": "a", "max_tokens": -1}), "max_tokens"),
        // A text prompt over the context names the prompt, not `messages`.
        (json!({"prompt": "word ".repeat(200)}), "prompt"),
    ] {
        let (status, v) = post(&url, "/v1/completions", body).await;
        assert_eq!(
            (status, v["error"]["param"].as_str()),
            (400, Some(param)),
            "{v}"
        );
    }
    let (status, v) = post(&url, "/v1/embeddings", json!({"input": "hi"})).await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["error"]["code"], "model_not_found");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--embedding-model"),
        "{v}"
    );
    assert!(
        fake.requests().is_empty(),
        "no bad request reached the model"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_key_is_required_and_never_shown() {
    let key = "sk-test-0123456789";
    let fake = FakeModel::new([FakeTurn::text("ok")]);
    let options = ServeOptions {
        api_key: Some(crate::llm::remote::ApiKey::new(key)),
        ..Default::default()
    };
    let (url, _) = start(fake, options).await;
    let client = reqwest::Client::new();
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    for auth in [None, Some("Bearer wrong"), Some(key)] {
        let mut r = client
            .post(format!("{url}/v1/chat/completions"))
            .json(&body);
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), 401);
        let text = r.text().await.unwrap();
        assert!(
            text.contains("invalid_api_key") && !text.contains(key),
            "{text}"
        );
    }
    let models = client.get(format!("{url}/v1/models")).send().await.unwrap();
    assert_eq!(models.status(), 401);
    let ok = client
        .post(format!("{url}/v1/chat/completions"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let health = client.get(format!("{url}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_wait_their_turn_and_too_many_are_told_the_server_is_busy() {
    let fake = FakeModel::new([FakeTurn::text("first")]);
    let options = ServeOptions {
        max_waiting: 1,
        ..Default::default()
    };
    let (url, server) = start(fake, options).await;
    // The model is busy with something else.
    let busy = server.turn.clone().acquire_owned().await.unwrap();
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    let waiting = tokio::spawn({
        let (url, body) = (url.clone(), body.clone());
        async move { post(&url, "/v1/chat/completions", body).await }
    });
    while server.waiting.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let (status, v) = post(&url, "/v1/chat/completions", body).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["error"]["code"], "server_busy");
    drop(busy);
    let (status, v) = waiting.await.unwrap();
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "first");
    let (_, models) = {
        let r = reqwest::get(format!("{url}/v1/models")).await.unwrap();
        (r.status(), r.json::<Value>().await.unwrap())
    };
    assert_eq!(models["data"][0]["id"], "fake");
    assert_eq!(models["data"][0]["context_length"], 8192);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_completion_without_max_tokens_gets_openais_sixteen() {
    let fake = FakeModel::new([FakeTurn::text("and so on")]);
    let (url, _) = start(fake.clone(), ServeOptions::default()).await;
    let (status, v) = post(&url, "/v1/completions", json!({"prompt": "Once"})).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(fake.requests()[0].max_tokens, Some(16));
}

/// Regression: a request that gave up while queued (its client timed out) stayed counted
/// among those waiting, and after `max_waiting` of them every request was told the server is
/// busy, for good.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_leaves_the_queue_frees_its_place() {
    let fake = FakeModel::new([FakeTurn::text("served")]);
    let options = ServeOptions {
        max_waiting: 1,
        ..Default::default()
    };
    let (url, server) = start(fake, options).await;
    let busy = server.turn.clone().acquire_owned().await.unwrap();
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    let impatient = reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(300))
        .build()
        .unwrap();
    let mut left = 0;
    for _ in 0..3 {
        let gave_up = impatient
            .post(format!("{url}/v1/chat/completions"))
            .json(&body)
            .send()
            .await;
        match gave_up {
            Err(e) => {
                assert!(e.is_timeout(), "{e}");
                left += 1;
            }
            // On a loaded machine the server may not yet have seen the one before leave: this
            // one was told the server is busy and never queued (once failed the lib suite on
            // 2 cores).
            Ok(r) => assert_eq!(r.status(), 503),
        }
    }
    assert!(left >= 1, "no request queued and gave up");
    // The server sees each closed connection and drops its request.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while server.waiting.load(Ordering::SeqCst) != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} requests still counted as waiting",
            server.waiting.load(Ordering::SeqCst)
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    drop(busy);
    let (status, v) = post(&url, "/v1/chat/completions", body).await;
    assert_eq!(status, 200, "{v}");
}

/// A web page the user visits may post to 127.0.0.1: a body not sent as JSON (which a page
/// can send without the browser asking first) and a Host that is not this machine (DNS
/// rebinding) are refused before anything runs.
#[tokio::test(flavor = "multi_thread")]
async fn requests_from_web_pages_are_refused() {
    let fake = FakeModel::new([FakeTurn::text("ok")]);
    let (url, _) = start(fake.clone(), ServeOptions::default()).await;
    let body = json!({"messages": [{"role": "user", "content": "hi"}]}).to_string();
    let client = reqwest::Client::new();
    let r = client
        .post(format!("{url}/v1/chat/completions"))
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("application/json"),
        "{v}"
    );
    for host in [
        "attacker.example",
        "attacker.example:8089",
        "127.0.0.1.attacker.example",
    ] {
        let r = client
            .post(format!("{url}/v1/chat/completions"))
            .header("content-type", "application/json")
            .header("host", host)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{host}");
        let r = client
            .get(format!("{url}/v1/models"))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{host}");
    }
    assert!(fake.requests().is_empty());
    for host in ["localhost:8089", "127.0.0.1", "[::1]:8089", "LOCALHOST"] {
        let r = client
            .get(format!("{url}/v1/models"))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{host}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_served_model_can_be_switched_or_unloaded_while_serving() {
    let (url, server) = start(FakeModel::new([]), ServeOptions::default()).await;
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    let s = server.clone();
    tokio::task::spawn_blocking(move || s.set_model(None))
        .await
        .unwrap();
    let (status, v) = post(&url, "/v1/chat/completions", body.clone()).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["error"]["code"], "model_not_loaded");
    let models: Value = reqwest::get(format!("{url}/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"], json!([]));

    let other = FakeModel::new([FakeTurn::text("from the other")]).with_context_length(512);
    let s = server.clone();
    tokio::task::spawn_blocking(move || s.set_model(Some(Arc::new(other))))
        .await
        .unwrap();
    let (status, v) = post(&url, "/v1/chat/completions", body).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "from the other");
    let models: Value = reqwest::get(format!("{url}/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["context_length"], 512);
}

/// `start` takes the address before it returns, and stopping does not wait for a reply in
/// progress: its generation is dropped, and so stopped.
#[test]
fn a_started_server_stops_at_once_with_a_reply_in_progress() {
    let fake = FakeModel::new([FakeTurn::text("never read")]);
    let server = Arc::new(Server::new(Some(Arc::new(fake)), ServeOptions::default()));
    let running = super::start("127.0.0.1", 0, server.clone()).unwrap();
    let taken = super::start("127.0.0.1", running.addr().port(), server.clone());
    assert!(
        matches!(taken, Err(ServeError::Bind { .. })),
        "{:?}",
        taken.err()
    );
    assert!(running.url().starts_with("http://127.0.0.1:"));
    // The model is held by a request that never ends.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let busy = rt.block_on(server.turn.clone().acquire_owned()).unwrap();
    let url = running.url();
    let pending = rt.spawn(async move {
        reqwest::Client::new()
            .post(format!("{url}/chat/completions"))
            .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
    });
    while server.waiting.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let started = std::time::Instant::now();
    running.stop().unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let answered = rt.block_on(pending).unwrap();
    assert!(answered.is_err(), "{answered:?}");
    drop(busy);
}

/// OpenAI's schema allows `null` for `stream` (and its options): read as not streaming, where it
/// was refused with a 400 "invalid type: null, expected a boolean" (found in review).
#[tokio::test(flavor = "multi_thread")]
async fn a_null_stream_is_read_as_not_streaming() {
    let (url, _) = start(
        FakeModel::new([FakeTurn::text("ok"), FakeTurn::text("ok")]),
        ServeOptions::default(),
    )
    .await;
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"}], "stream": null,
               "stream_options": {"include_usage": null}, "ignore_eos": null}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "ok", "{v}");
    let (status, v) = post(
        &url,
        "/v1/completions",
        json!({"prompt": "hi", "stream": null}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
}

/// A call cut short by `max_tokens` came back whole (its JSON closed by the agent's tolerant
/// reader) with `finish_reason: "tool_calls"`, and a client ran it with half its arguments:
/// it is text, and the reply says `length`, whole and streamed (found in review).
#[tokio::test(flavor = "multi_thread")]
async fn a_call_cut_by_max_tokens_is_not_a_whole_call() {
    let cut = || {
        FakeTurn::Chunks(vec![
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par".into(),
            "is\"}}\n</tool_call>".into(),
        ])
    };
    let (url, _) = start(FakeModel::new([cut(), cut()]), ServeOptions::default()).await;
    let body = json!({"messages": [{"role": "user", "content": "Weather in Paris?"}],
                      "tools": weather_tools(), "tool_choice": "required", "max_tokens": 1});
    let (status, v) = post(&url, "/v1/chat/completions", body.clone()).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["finish_reason"], "length", "{v}");
    assert!(v["choices"][0]["message"]["tool_calls"].is_null(), "{v}");
    let mut streamed = body;
    streamed["stream"] = json!(true);
    let chunks: Vec<Value> = events(&url, streamed)
        .await
        .iter()
        .filter_map(|e| serde_json::from_str(e).ok())
        .collect();
    let finish = chunks
        .iter()
        .find_map(|c| c["choices"][0]["finish_reason"].as_str());
    assert_eq!(finish, Some("length"), "{chunks:?}");
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"][0]["delta"]["tool_calls"].is_null()),
        "{chunks:?}"
    );
}

/// The deprecated `functions` and `function_call` were dropped unread: a client forcing a
/// call got a plain answer from a model that never saw the functions (found in review).
#[tokio::test(flavor = "multi_thread")]
async fn legacy_functions_are_refused_not_ignored() {
    let (url, _) = start(
        FakeModel::new([FakeTurn::text("It is sunny."), FakeTurn::text("Hello.")]),
        ServeOptions::default(),
    )
    .await;
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "Weather in Paris?"}],
               "functions": [{"name": "get_weather", "parameters": {"type": "object"}}],
               "function_call": {"name": "get_weather"}}),
    )
    .await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["code"], "unsupported_parameter", "{v}");
    assert_eq!(v["error"]["param"], "functions", "{v}");
    // Sent always by some older clients, they ask for nothing.
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"}], "functions": [],
               "function_call": "none"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
}

/// OpenAI takes `top_p` in [0, 1] and llama-server's clients send `top_k: -1` for no cut:
/// both were refused with 400 (found in review). `top_p: 0` decodes greedily.
#[tokio::test(flavor = "multi_thread")]
async fn top_p_zero_and_top_k_minus_one_are_taken() {
    let fake = FakeModel::new([FakeTurn::text("ok"), FakeTurn::text("ok")]);
    let (url, _) = start(fake.clone(), ServeOptions::default()).await;
    let hi = json!([{"role": "user", "content": "hi"}]);
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": hi, "temperature": 0.8, "top_p": 0}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = post(
        &url,
        "/v1/chat/completions",
        json!({"messages": hi, "top_k": -1}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let sent: Vec<_> = fake.requests().iter().map(|r| r.sampling.clone()).collect();
    assert_eq!(sent[0].temperature, 0.0, "{sent:?}");
    assert_eq!(sent[1].top_k, 0, "{sent:?}");
}

/// A wrong method on a known path got axum's bare 405 with an empty body (found in review).
#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_method_gets_an_openai_error() {
    let (url, _) = start(FakeModel::new([]), ServeOptions::default()).await;
    let r = reqwest::get(format!("{url}/v1/chat/completions"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().contains("GET"),
        "{v}"
    );
}

/// `client.models.retrieve(id)` got a 404 for every id, and a client given the server's
/// address without `/v1` (llama-server takes both) got "no such endpoint" (found in review).
#[tokio::test(flavor = "multi_thread")]
async fn a_model_is_retrieved_by_id_and_paths_without_v1_are_served() {
    let (url, _) = start(
        FakeModel::new([FakeTurn::text("ok")]),
        ServeOptions::default(),
    )
    .await;
    // With `/v1` and without it (`/models/{id}` without it was missed at first).
    for prefix in ["/v1", ""] {
        let list: Value = reqwest::get(format!("{url}{prefix}/models"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = list["data"][0]["id"].as_str().unwrap().to_string();
        let r = reqwest::get(format!("{url}{prefix}/models/{id}"))
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{prefix}");
        let one: Value = r.json().await.unwrap();
        assert_eq!(one["id"], id.as_str());
        let r = reqwest::get(format!("{url}{prefix}/models/no-such-model"))
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 404);
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["code"], "model_not_found", "{e}");
    }
    let (status, v) = post(
        &url,
        "/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["message"]["content"], "ok", "{v}");
}

/// A model unloaded or switched in the app while a request waited is a 503 the client may
/// retry, not a 500 of the server's own (found in review).
#[test]
fn a_model_unloaded_under_a_request_is_a_503() {
    let e = super::llm_error(crate::llm::LlmError::ModelUnloaded, super::Api::Chat);
    assert_eq!(e.status.as_u16(), 503);
    assert_eq!(e.code, Some("model_not_loaded"));
}
