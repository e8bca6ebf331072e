//! Compiling and rendering a chat template: a minijinja environment set up the way transformers
//! sets up jinja2, the clock `strftime_now` reads, and the typed errors a template can give.

use std::sync::Arc;

use chrono::NaiveDateTime;
use minijinja::syntax::SyntaxConfig;
use minijinja::value::Value;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};

use super::markup::{markup_add, rewrite_generation_tags, rewrite_markup_concat, MARKUP_ADD};
use super::messages::ChatContext;
use super::pycompat::{
    indent, is_py_none, json_to_value, py_len, py_str, strftime, unknown_method, wrap_as_generator,
};
use super::tojson::tojson;

/// ChatML, the fallback for GGUFs that carry no template (and the format SmolLM2 uses).
pub const CHATML_TEMPLATE: &str = "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\n' + (message['content'] if message['content'] is string else '') + '<|im_end|>' + '\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}";

const TEMPLATE_NAME: &str = "chat_template";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("chat template does not compile{}: {message}", at_line(*.line))]
    Syntax {
        message: String,
        line: Option<usize>,
    },
    #[error("chat template raised an error: {message}")]
    Raised { message: String },
    #[error("chat template failed while rendering{}: {message}", at_line(*.line))]
    Render {
        message: String,
        line: Option<usize>,
    },
    #[error("chat template context is invalid: {0}")]
    Context(String),
}

fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(" (line {l})")).unwrap_or_default()
}

/// The clock `strftime_now` reads. Tests pin it so renderings are comparable.
pub type Clock = Arc<dyn Fn() -> NaiveDateTime + Send + Sync>;

pub fn system_clock() -> Clock {
    Arc::new(|| chrono::Local::now().naive_local())
}

pub fn fixed_clock(at: NaiveDateTime) -> Clock {
    Arc::new(move || at)
}

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    source: String,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source_len", &self.source.len())
            .finish()
    }
}

impl ChatTemplate {
    pub fn new(source: &str) -> Result<Self, TemplateError> {
        Self::with_clock(source, system_clock())
    }

    /// ChatML, for models without a template of their own.
    pub fn chatml() -> Result<Self, TemplateError> {
        Self::new(CHATML_TEMPLATE)
    }

    pub fn with_clock(source: &str, clock: Clock) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(false)
            .build()
            .map_err(|e| TemplateError::Syntax {
                message: error_message(&e),
                line: None,
            })?;
        env.set_syntax(syntax);
        env.set_undefined_behavior(UndefinedBehavior::Lenient);
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_unknown_method_callback(unknown_method);
        env.set_formatter(|out, _state, value| {
            if value.is_undefined() {
                return Ok(());
            }
            out.write_str(&py_str(value))
                .map_err(|e| Error::new(ErrorKind::WriteFailure, e.to_string()))
        });
        env.add_filter("tojson", tojson);
        env.add_filter("indent", indent);
        env.add_filter("string", |v: Value| py_str(&v));
        env.add_filter("length", py_len);
        env.add_test("none", |v: Value| v.is_none() || is_py_none(&v));
        // jinja2: None is not iterable (Undefined is: it iterates as empty).
        env.add_test("iterable", |v: Value| {
            !v.is_none() && !is_py_none(&v) && (v.is_undefined() || v.try_iter().is_ok())
        });
        env.add_filter("count", py_len);
        env.add_function(MARKUP_ADD, markup_add);
        wrap_as_generator(
            &mut env,
            "map",
            Value::from_function(minijinja::filters::map),
        );
        wrap_as_generator(
            &mut env,
            "select",
            Value::from_function(minijinja::filters::select),
        );
        wrap_as_generator(
            &mut env,
            "reject",
            Value::from_function(minijinja::filters::reject),
        );
        wrap_as_generator(
            &mut env,
            "selectattr",
            Value::from_function(minijinja::filters::selectattr),
        );
        wrap_as_generator(
            &mut env,
            "rejectattr",
            Value::from_function(minijinja::filters::rejectattr),
        );
        env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
            Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("{RAISED}{msg}"),
            ))
        });
        env.add_function(
            "strftime_now",
            move |fmt: String| -> Result<String, Error> { strftime(&clock(), &fmt) },
        );
        let prepared = rewrite_markup_concat(&rewrite_generation_tags(source));
        env.add_template_owned(TEMPLATE_NAME, prepared)
            .map_err(|e| TemplateError::Syntax {
                message: error_message(&e),
                line: e.line(),
            })?;
        Ok(ChatTemplate {
            env,
            source: source.to_string(),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders with a context exactly as given (keys absent stay undefined, as in a plain jinja2
    /// `render(**ctx)`).
    pub fn render_json(&self, ctx: &serde_json::Value) -> Result<String, TemplateError> {
        if !ctx.is_object() {
            return Err(TemplateError::Context(
                "the context must be a JSON object".into(),
            ));
        }
        let tmpl = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| TemplateError::Syntax {
                message: error_message(&e),
                line: e.line(),
            })?;
        let ctx = json_to_value(ctx);
        tmpl.render(ctx).map_err(classify)
    }

    pub fn render(&self, ctx: &ChatContext) -> Result<String, TemplateError> {
        self.render_json(&ctx.to_json())
    }
}

/// Marks errors raised by the template itself, so they are reported as the template's words.
const RAISED: &str = "\u{1}raised:";

fn classify(e: Error) -> TemplateError {
    let msg = error_message(&e);
    if let Some(pos) = msg.find(RAISED) {
        return TemplateError::Raised {
            message: msg[pos + RAISED.len()..].to_string(),
        };
    }
    TemplateError::Render {
        message: msg,
        line: e.line(),
    }
}

/// The error and its causes on one line (minijinja's `Display` omits the chain).
fn error_message(e: &Error) -> String {
    let mut msg = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::template::tests::render;
    use crate::llm::template::ChatMessage;

    #[test]
    fn raise_exception_is_a_template_error() {
        let err = render(
            "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}",
            serde_json::json!({"messages": [{"role": "system", "content": "x"}]}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            TemplateError::Raised {
                message: "System role not supported".into()
            }
        );
    }

    #[test]
    fn strftime_now_reads_the_injected_clock() {
        let at = NaiveDateTime::parse_from_str("2025-01-15 12:00:00", "%Y-%m-%d %H:%M:%S").unwrap();
        let t =
            ChatTemplate::with_clock("{{ strftime_now('%d %b %Y') }}", fixed_clock(at)).unwrap();
        assert_eq!(
            t.render_json(&serde_json::json!({})).unwrap(),
            "15 Jan 2025"
        );
        let bad = ChatTemplate::with_clock("{{ strftime_now('%Q') }}", fixed_clock(at)).unwrap();
        assert!(bad.render_json(&serde_json::json!({})).is_err());
    }

    #[test]
    fn syntax_errors_are_typed() {
        assert!(matches!(
            ChatTemplate::new("{% if %}"),
            Err(TemplateError::Syntax { .. })
        ));
        assert!(matches!(
            ChatTemplate::new("{% for x in y %}"),
            Err(TemplateError::Syntax { .. })
        ));
    }

    #[test]
    fn chatml_fallback_renders_smollm_style() {
        let ctx = ChatContext {
            messages: vec![ChatMessage::system("S"), ChatMessage::user("U")],
            tools: None,
            add_generation_prompt: true,
            ..Default::default()
        };
        assert_eq!(
            ChatTemplate::chatml().unwrap().render(&ctx).unwrap(),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}
