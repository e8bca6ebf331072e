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
    #[error("chat template goes past Burrow's limits: {what}")]
    Limit { what: String },
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
        env.set_fuel(Some(TEMPLATE_FUEL));
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
        if let Some(name) = doubling_set(source) {
            return Err(TemplateError::Limit {
                what: format!(
                    "`set {name}` builds {name} from itself twice, doubling it each time it runs \
                     (memory, not steps: fuel cannot stop it)"
                ),
            });
        }
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
        let mut out = Capped {
            buf: Vec::new(),
            over: false,
        };
        match tmpl.render_captured_to(ctx, &mut out) {
            Ok(captured) => {
                drop(captured);
                String::from_utf8(out.buf).map_err(|_| TemplateError::Render {
                    message: "the rendering is not UTF-8".into(),
                    line: None,
                })
            }
            Err(_) if out.over => Err(TemplateError::Limit {
                what: format!("its output passed {} bytes", MAX_RENDER_BYTES),
            }),
            Err(e) if e.kind() == ErrorKind::OutOfFuel => Err(TemplateError::Limit {
                what: format!("it ran {TEMPLATE_FUEL} steps without finishing"),
            }),
            Err(e) => Err(classify(e)),
        }
    }

    pub fn render(&self, ctx: &ChatContext) -> Result<String, TemplateError> {
        self.render_json(&ctx.to_json())
    }
}

/// The most instructions one rendering may run. The real templates (tests/chat_templates.rs
/// renders 47) take at most a few thousand for a conversation; a template that loops for ever,
/// or ten billion times, stops here in a fraction of a second (issue 17).
pub const TEMPLATE_FUEL: u64 = 5_000_000;

/// The most a rendering may write: a prompt past this is past any model's context anyway.
pub const MAX_RENDER_BYTES: usize = 16 << 20;

/// The rendering's output, refused past `MAX_RENDER_BYTES`.
struct Capped {
    buf: Vec<u8>,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > MAX_RENDER_BYTES {
            self.over = true;
            return Err(std::io::Error::other("the rendering is too large"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The variable of a `{% set name = … %}` whose value joins `name` with itself (`s ~ s`,
/// `ns.s + ns.s`): run in a loop it doubles each time, and forty times asks for a terabyte in
/// a few hundred steps, which fuel cannot stop. No real template does this
/// (tests/chat_templates.rs); `ns.s + ("\n" if ns.s else "")` is not doubling: only terms of
/// the top-level join that are the variable itself count.
fn doubling_set(source: &str) -> Option<String> {
    let mut rest = source;
    while let Some(at) = rest.find("{%") {
        rest = &rest[at + 2..];
        let end = rest.find("%}").unwrap_or(rest.len());
        let tag = rest[..end]
            .trim_start_matches(['-', '+'])
            .trim_end_matches(['-', '+'])
            .trim();
        rest = &rest[end..];
        let Some((name, value)) = tag.strip_prefix("set ").and_then(|a| a.split_once('=')) else {
            continue;
        };
        let name = name.trim();
        if !name.is_empty() && join_terms(value).iter().filter(|t| **t == name).count() >= 2 {
            return Some(name.to_string());
        }
    }
    None
}

/// The terms of an expression's top-level `~` and `+` joins (outside brackets and strings).
fn join_terms(expr: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0usize);
    for (i, c) in expr.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, '~' | '+') if depth == 0 => {
                terms.push(expr[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(expr[start..].trim());
    terms
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

    /// Issue 17, defect 4: a template that loops ten billion times rendered for ever, and one
    /// that doubles a string forty times asked for a terabyte.
    #[test]
    fn runaway_templates_stop_with_a_clear_error() {
        let started = std::time::Instant::now();
        let endless = ChatTemplate::new(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        )
        .unwrap();
        let err = endless.render_json(&serde_json::json!({})).unwrap_err();
        assert!(
            matches!(&err, TemplateError::Limit { what } if what.contains("steps")),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        for doubling in [
            "{% set s = 'x' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}",
            "{% set ns = namespace(s='x') %}{% for i in range(40) %}{%- set ns.s = ns.s + ns.s -%}{% endfor %}",
        ] {
            let err = ChatTemplate::new(doubling).unwrap_err();
            assert!(matches!(err, TemplateError::Limit { .. }), "{doubling}: {err}");
        }
        // Growing by a constant is fine, and so is naming a variable twice without joining.
        for fine in [
            "{% set s = '' %}{% for i in range(3) %}{% set s = s ~ 'x' %}{% endfor %}{{ s }}",
            "{% set s = 'a' %}{% set s = s if s else s %}{{ s }}",
            "{% set s = 'a' %}{% set st = s ~ 't' %}{{ st }}",
        ] {
            assert!(ChatTemplate::new(fine)
                .unwrap()
                .render_json(&serde_json::json!({}))
                .is_ok());
        }
        let huge =
            ChatTemplate::new("{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}").unwrap();
        let err = huge.render_json(&serde_json::json!({})).unwrap_err();
        assert!(
            matches!(&err, TemplateError::Limit { what } if what.contains("output")),
            "{err}"
        );
    }

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
