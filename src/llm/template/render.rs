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
            // A string is written as it is: copying it first would double what a large one
            // takes at its peak.
            if let Some(text) = value.as_str() {
                return out
                    .write_str(text)
                    .map_err(|e| Error::new(ErrorKind::WriteFailure, e.to_string()));
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
        let mut out = Capped {
            buf: Vec::new(),
            over: false,
        };
        let (rendered, over_budget) = minijinja::budget::with_limit(TEMPLATE_MEMORY, || {
            tmpl.render_captured_to(ctx, &mut out).map(drop)
        });
        match rendered {
            Ok(()) => String::from_utf8(out.buf).map_err(|_| TemplateError::Render {
                message: "the rendering is not UTF-8".into(),
                line: None,
            }),
            Err(_) if over_budget => Err(TemplateError::Limit {
                what: format!(
                    "it built more than {} MiB of strings and lists (a template that doubles a \
                     string in a loop does)",
                    TEMPLATE_MEMORY >> 20
                ),
            }),
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

/// The most strings and lists one rendering may build, counted as they are built (minijinja
/// patched in vendor/minijinja, see BURROW.md): `{% set ns.s = ns.s ~ ns.s %}` forty times in a
/// loop asks for a terabyte in a few hundred steps, which fuel cannot stop. The real templates build at
/// most 8.5 times their output (an 800 KB conversation in the 47 of tests/chat_templates.rs
/// needed 6.9 MB at most): this is that ratio twice over for the largest output allowed.
pub const TEMPLATE_MEMORY: usize = 256 << 20;

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
    let msg = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    crate::llm::with_causes(msg, e)
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

    /// Templates that build far more than they write, each a way past the first fix (issue 17,
    /// defect 4). That fix refused `set s = s ~ s` by reading the source; `(s ~ s)|upper`, a
    /// captured block, a macro, `join`, `replace` or a list repeated by reference each still
    /// asked for gigabytes in a few hundred steps. Now what a rendering builds is charged as it
    /// is built (vendor/minijinja/src/budget.rs), and each stops at the budget.
    pub(crate) const MEMORY_HOGS: &[&str] = &[
        // A `set` inside a loop is scoped to one iteration (jinja2's rule): growth across
        // iterations goes through a namespace.
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{%- set ns.s = ns.s + ns.s -%}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = (ns.s ~ ns.s)|upper %}{% endfor %}",
        "{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s|replace('a', 'aa') %}{% endfor %}",
        "{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s.replace('a', 'aa') %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ''.join([ns.s, ns.s]) %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = '{}{}'.format(ns.s, ns.s) %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = '%s%s'|format(ns.s, ns.s) %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set t %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = t %}{% endfor %}",
        "{% macro d(x) %}{{ x }}{{ x }}{% endmacro %}{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = d(ns.s) %}{% endfor %}",
        "{% set ns = namespace(l=['x']) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s|tojson %}{% endfor %}",
        "{% set s = 'x' * 10000000 %}{{ ([s] * 1000)|tojson }}",
        "{% set s = 'x' * 10000000 %}{{ ([s] * 1000)|join }}",
        "{% set s = 'x' * 10000000 %}{{ ([s] * 1000)|string }}",
        "{% set s = 'x' * 10000000 %}{{ ([s] * 1000)|pprint }}",
        "{% set s = 'x' * 10000000 %}{% set t = ([s] * 1000) ~ '' %}",
        "{% set s = 'x' * 10000000 %}{{ s.replace('', 'y' * 40) }}",
        "{{ '%999999999s'|format('x') }}",
        "{% set s = 'x' * 1000000 %}{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [s ~ i] %}{% endfor %}",
    ];

    /// A list grown one item at a time is charged for the items added, not for the whole list
    /// again at each step: 20,000 appends were charged 3.2 GB and refused.
    #[test]
    fn a_list_grown_item_by_item_stays_within_the_memory_budget() {
        let grown = ChatTemplate::new(
            "{% set ns = namespace(l=[]) %}{% for i in range(20000) %}\
             {% set ns.l = ns.l + [i] %}{% endfor %}{{ ns.l|length }}",
        )
        .unwrap();
        assert_eq!(grown.render_json(&serde_json::json!({})).unwrap(), "20000");
    }

    #[test]
    fn templates_that_build_too_much_stop_at_the_memory_budget() {
        for hog in MEMORY_HOGS {
            let started = std::time::Instant::now();
            let err = ChatTemplate::new(hog)
                .unwrap()
                .render_json(&serde_json::json!({}))
                .unwrap_err();
            assert!(
                matches!(&err, TemplateError::Limit { what } if what.contains("MiB of strings")),
                "{hog}: {err}"
            );
            // A guard against a hang, not a timing: each stops in well under a second here.
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "{hog}"
            );
        }
    }

    /// A GGUF whose chat template holds a long run of unary operators (`- - - … 1`, `not not …
    /// x`) overflowed the stack of the thread compiling it (the model-loading thread has the
    /// default 2 MiB) and aborted the process: minijinja's parser guarded `(` and `[` with its
    /// recursion limit, not unary operators (found in review). Now a syntax error.
    #[test]
    fn a_long_run_of_unary_operators_is_a_syntax_error_not_a_stack_overflow() {
        for src in [
            format!("{{{{ {}1 }}}}", "-".repeat(200_000)),
            format!("{{{{ {}x }}}}", "not ".repeat(200_000)),
        ] {
            let result = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || ChatTemplate::new(&src).map(drop))
                .unwrap()
                .join()
                .unwrap();
            assert!(
                matches!(result, Err(TemplateError::Syntax { .. })),
                "{result:?}"
            );
        }
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
