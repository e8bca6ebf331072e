//! The OpenAI API's shapes as `burrow serve` reads and writes them: requests (read leniently:
//! fields Burrow does not use are ignored, as OpenAI-compatible servers do) and errors (always
//! `{"error": {"message", "type", "param", "code"}}`, which every OpenAI client parses).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};

/// An error as the OpenAI API returns one.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn invalid(param: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: param.into(),
            code: None,
        }
    }

    pub fn unsupported(param: &str, what: &str) -> Self {
        ApiError {
            code: Some("unsupported_parameter"),
            ..Self::invalid(
                Some(param.to_string()),
                format!("{what} is not supported by burrow serve"),
            )
        }
    }

    pub fn server(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
        }
    }

    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("1"));
        }
        response
    }
}

/// Reads a request body as JSON.
pub fn json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(None, format!("the body is not valid JSON: {e}")))
}

/// Reads a request (or the part of one that is `T`), naming the field that is wrong
/// (`messages[2].role: ...`). The fields both completion endpoints share are read on their
/// own with this too ([`Common`]): serde's `flatten` would lose the path of a field within.
pub fn read<'a, T: Deserialize<'a>>(body: &'a Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ApiError::invalid(None, format!("the body is not a valid request: {inner}"))
        } else {
            ApiError::invalid(Some(path.clone()), format!("{path}: {inner}"))
        }
    })
}

/// A completion request: its own fields, then those shared by both endpoints.
pub fn parse<T: for<'de> Deserialize<'de> + HasCommon>(body: &[u8]) -> Result<T, ApiError> {
    let value = json(body)?;
    let mut request: T = read(&value)?;
    *request.common_mut() = read(&value)?;
    Ok(request)
}

/// A request type that carries the shared [`Common`] fields.
pub trait HasCommon {
    fn common_mut(&mut self) -> &mut Common;
}

impl HasCommon for ChatRequest {
    fn common_mut(&mut self) -> &mut Common {
        &mut self.common
    }
}

impl HasCommon for CompletionRequest {
    fn common_mut(&mut self) -> &mut Common {
        &mut self.common
    }
}

/// `stop`: one string or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

impl Stop {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Stop::One(s) => vec![s],
            Stop::Many(v) => v,
        }
    }
}

/// `null`, which OpenAI's schema allows for its optional fields, read as the field's default
/// (`"stream": null` was refused with a 400).
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// What both completion endpoints share: sampling, limits and streaming.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Common {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    /// llama-server's and vLLM's extensions, which OpenAI clients send in `extra_body`.
    #[serde(default)]
    pub top_k: Option<i32>,
    #[serde(default)]
    pub min_p: Option<f32>,
    #[serde(default)]
    pub repeat_penalty: Option<f32>,
    #[serde(default)]
    pub seed: Option<i64>,
    #[serde(default)]
    pub stop: Option<Stop>,
    #[serde(default)]
    pub n: Option<u32>,
    #[serde(default)]
    pub frequency_penalty: Option<f32>,
    #[serde(default)]
    pub presence_penalty: Option<f32>,
    #[serde(default)]
    pub logit_bias: Option<serde_json::Map<String, Value>>,
    /// vLLM's extension: never end the turn before `max_tokens` (benchmarks).
    #[serde(default, deserialize_with = "null_as_default")]
    pub ignore_eos: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_usage: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<WireMessage>,
    /// Read on its own: see [`read`].
    #[serde(skip)]
    pub common: Common,
    #[serde(default)]
    pub max_completion_tokens: Option<u64>,
    #[serde(default)]
    pub tools: Option<Vec<WireTool>>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub response_format: Option<Value>,
    #[serde(default)]
    pub logprobs: Option<bool>,
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// The deprecated form of `tools` and `tool_choice`, read only to refuse it.
    #[serde(default)]
    pub functions: Option<Value>,
    #[serde(default)]
    pub function_call: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CompletionRequest {
    pub prompt: Value,
    /// Read on its own: see [`read`].
    #[serde(skip)]
    pub common: Common,
    #[serde(default)]
    pub echo: Option<bool>,
    #[serde(default)]
    pub logprobs: Option<Value>,
    #[serde(default)]
    pub best_of: Option<u32>,
    #[serde(default)]
    pub suffix: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EmbeddingRequest {
    pub input: Value,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub encoding_format: Option<String>,
    #[serde(default)]
    pub dimensions: Option<u64>,
}

/// A message's content: text, or parts of which only text ones are read.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Clone, Deserialize)]
pub struct Part {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WireMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<Content>,
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WireToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub function: WireFunctionCall,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WireFunctionCall {
    pub name: String,
    /// JSON text, as OpenAI sends it (an object is accepted too).
    pub arguments: Value,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WireTool {
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: WireFunction,
}

fn function_kind() -> String {
    "function".into()
}

#[derive(Debug, Clone, Deserialize)]
pub struct WireFunction {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub parameters: Option<Value>,
}
