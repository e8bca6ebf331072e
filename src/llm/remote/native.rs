//! llama-server's own endpoints for prompts sent as token ids: the prompt rendered by
//! `/apply-template`, tokenized by `/tokenize`, and the last request's ids kept for reuse.

use serde_json::{json, Value};

use super::server::{quote, remote_err};
use super::Inner;
use crate::llm::engine::LlmError;

/// A prompt sent as token ids, and the reply's ids in groups that each spell a piece of its
/// text, so that a later prompt continuing it reuses the ids the server's cache holds.
#[derive(Debug, Default, Clone)]
pub(super) struct LastIds {
    pub(super) text: String,
    pub(super) ids: Vec<i64>,
    pub(super) generated: Vec<(Vec<i64>, String)>,
}

impl LastIds {
    /// The ids of `text` as far as it continues this prompt and its reply, and where in
    /// `text` the rest begins. Only whole groups count: a group cut by the new text would be
    /// spelled differently.
    fn prefix_of(&self, text: &str) -> Option<(Vec<i64>, usize)> {
        if self.ids.is_empty() || !text.starts_with(&self.text) {
            return None;
        }
        let mut ids = self.ids.clone();
        let mut at = self.text.len();
        for (group, piece) in &self.generated {
            if !text[at..].starts_with(piece.as_str()) {
                break;
            }
            ids.extend(group);
            at += piece.len();
        }
        Some((ids, at))
    }
}

/// A prompt that goes to llama-server's `/completion` as token ids, once rendered.
pub(super) enum NativePrompt {
    /// Messages in OpenAI's shape, rendered by the server's `/apply-template`.
    Chat(Value),
    Text(String),
}

impl Inner {
    /// llama-server's `/tokenize` of `content`.
    pub(super) async fn tokenize(
        &self,
        content: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<i64>, LlmError> {
        let body =
            json!({"content": content, "add_special": add_special, "parse_special": parse_special});
        let v = self.server.post("/tokenize", &body).await?;
        let tokens = v.get("tokens").and_then(Value::as_array).ok_or_else(|| {
            let got = quote(&v.to_string());
            remote_err(&self.info.url, format!("/tokenize gave {got}"), false)
        })?;
        Ok(tokens.iter().filter_map(Value::as_i64).collect())
    }

    /// llama-server's `/apply-template` of a chat completion's `body`: the prompt it renders.
    pub(super) async fn apply_template(&self, body: &Value) -> Result<String, LlmError> {
        let v = self.server.post("/apply-template", body).await?;
        v.get("prompt")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                let got = quote(&v.to_string());
                remote_err(&self.info.url, format!("/apply-template gave {got}"), false)
            })
    }

    /// The ids of a prompt for `/completion`: rendered by the server where it is a chat, the
    /// part that continues the last request as that request's ids, and the rest tokenized
    /// by the server as its chat endpoint would (special tokens parsed: workspace text in it
    /// is defanged).
    pub(super) async fn prompt_ids(&self, prompt: &NativePrompt) -> Result<LastIds, LlmError> {
        let text = match prompt {
            NativePrompt::Text(t) => t.clone(),
            NativePrompt::Chat(messages) => {
                self.apply_template(&json!({"messages": messages})).await?
            }
        };
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (mut ids, at) = last
            .and_then(|l| l.prefix_of(&text))
            .unwrap_or((Vec::new(), 0));
        let rest = &text[at..];
        if !rest.is_empty() || ids.is_empty() {
            let first = ids.is_empty();
            ids.extend(self.tokenize(rest, first, true).await?);
        }
        Ok(LastIds {
            text,
            ids,
            generated: Vec::new(),
        })
    }
}
