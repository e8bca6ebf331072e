//! The model's errors as the API's: which status, and which field of the request is at fault.

use axum::http::StatusCode;

use super::request::Api;
use super::wire::ApiError;
use crate::llm::LlmError;

/// No model to answer with (none loaded, or it went while the request waited): a 503 the
/// client may retry.
pub(super) fn model_not_loaded(message: &str) -> ApiError {
    ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        message: message.into(),
        kind: "server_error",
        param: None,
        code: Some("model_not_loaded"),
    }
}

pub(super) fn llm_error(e: LlmError, api: Api) -> ApiError {
    let prompt = || {
        Some(match api {
            Api::Chat => "messages".to_string(),
            Api::Text => "prompt".to_string(),
        })
    };
    match e {
        LlmError::ContextFull { needed, available } => ApiError::invalid(
            prompt(),
            format!(
                "the prompt needs {needed} tokens but the model's context holds {available} (burrow serve --ctx raises it)"
            ),
        )
        .with_code("context_length_exceeded"),
        LlmError::InvalidSampling { field, .. } => {
            ApiError::invalid(Some(field.to_string()), e.to_string())
        }
        LlmError::EmptyPrompt => ApiError::invalid(None, "the prompt is empty"),
        LlmError::Grammar(_) => ApiError::invalid(None, e.to_string()),
        LlmError::Template(_) | LlmError::ModelTemplate { .. } => ApiError::invalid(
            prompt(),
            format!("the messages cannot be rendered with the model's chat template: {e}"),
        ),
        // The model was switched or unloaded in the app while the request waited: a 503
        // the client may retry, not a 500 of the server's own.
        LlmError::ModelUnloaded => model_not_loaded(
            "the model was unloaded or switched in Burrow while this request waited: try again",
        ),
        other => ApiError::server(other.to_string()),
    }
}
