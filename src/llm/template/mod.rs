//! Chat templates: a model's own `tokenizer.chat_template` (Jinja), rendered the way Hugging Face
//! transformers renders it, so the prompt a model sees here is byte for byte the prompt it was
//! trained on.
//!
//! transformers renders with Python's jinja2 in an `ImmutableSandboxedEnvironment` with
//! `trim_blocks` and `lstrip_blocks`, adds `raise_exception`, `strftime_now`, a `tojson` that is
//! Python's `json.dumps`, and a `{% generation %}` tag. minijinja differs from jinja2 in a few
//! places real templates reach (how `None`/`True` print, `tojson` spacing and escaping, `indent`,
//! filters that return generators); each difference is patched here to jinja2's behaviour.
//!
//! The parts: `messages` holds the chat data a template is rendered with; `render` compiles and
//! renders, and types the errors; `pycompat` makes values behave as Python's do; `tojson` is
//! Python's `json.dumps`; `markup` rewrites template markup that minijinja lacks or reads
//! differently.

mod markup;
mod messages;
mod pycompat;
mod render;
mod tojson;

pub use messages::{ChatContext, ChatMessage, FunctionCall, ToolCall};
pub(crate) use pycompat::json_to_value;
pub use pycompat::py_str;
pub use render::{
    fixed_clock, system_clock, ChatTemplate, Clock, TemplateError, CHATML_TEMPLATE, TEMPLATE_MEMORY,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Shared by the tests of every part, since each checks its behaviour through a rendering.
    pub(super) fn render(src: &str, ctx: serde_json::Value) -> Result<String, TemplateError> {
        ChatTemplate::new(src)?.render_json(&ctx)
    }
}
