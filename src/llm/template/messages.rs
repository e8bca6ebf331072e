//! The chat data a template is rendered with: messages, tool calls and the context around them,
//! in the shape chat templates expect (OpenAI/transformers style).

use serde::{Deserialize, Serialize};

/// One chat message, in the shape chat templates expect (OpenAI/transformers style).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ChatMessage {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.to_string(),
            content: content.into(),
            ..Default::default()
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content)
    }
    pub fn tool(call_id: &str, name: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: "tool".into(),
            content: content.into(),
            tool_call_id: Some(call_id.into()),
            name: Some(name.into()),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// Arguments as a JSON object: transformers passes them to templates as a dict, not a string.
    pub arguments: serde_json::Value,
}

/// What a chat template is rendered with.
#[derive(Debug, Clone, Default)]
pub struct ChatContext {
    pub messages: Vec<ChatMessage>,
    /// Tool definitions (`{"type": "function", "function": {...}}`); `None` renders as `none`,
    /// as transformers passes it.
    pub tools: Option<Vec<serde_json::Value>>,
    pub add_generation_prompt: bool,
    pub bos_token: String,
    pub eos_token: String,
}

impl ChatContext {
    /// The context for asking the model for the next assistant turn.
    pub fn for_reply(
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
        bos_token: &str,
        eos_token: &str,
    ) -> Self {
        ChatContext {
            messages: messages.to_vec(),
            tools: tools.map(<[serde_json::Value]>::to_vec),
            add_generation_prompt: true,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "messages": self.messages,
            "tools": self.tools,
            "add_generation_prompt": self.add_generation_prompt,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
        })
    }
}
