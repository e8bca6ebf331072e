//! Chat templates: a model's own `tokenizer.chat_template` (Jinja), rendered the way Hugging Face
//! transformers renders it, so the prompt a model sees here is byte for byte the prompt it was
//! trained on.
//!
//! transformers renders with Python's jinja2 in an `ImmutableSandboxedEnvironment` with
//! `trim_blocks` and `lstrip_blocks`, adds `raise_exception`, `strftime_now`, a `tojson` that is
//! Python's `json.dumps`, and a `{% generation %}` tag. minijinja differs from jinja2 in a few
//! places real templates reach (how `None`/`True` print, `tojson` spacing and escaping, `indent`,
//! filters that return generators); each difference is patched here to jinja2's behaviour.

use std::sync::Arc;

use chrono::NaiveDateTime;
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Object, ObjectRepr, Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, UndefinedBehavior};
use serde::{Deserialize, Serialize};

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

/// `{% generation %}…{% endgeneration %}` marks assistant text for transformers' masking and
/// renders its body. minijinja has no custom tags, so it becomes an always-true `if` block: the
/// tags stay tags, so whitespace control (`-`, trim_blocks, lstrip_blocks) acts on them exactly
/// as jinja2 acts on the originals.
fn rewrite_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        let Some(end) = tag.find("%}") else {
            out.push_str(tag);
            return out;
        };
        let inner = &tag[2..end];
        let (lead, body) = match inner.strip_prefix(['-', '+']) {
            Some(b) => (&inner[..1], b),
            None => ("", inner),
        };
        let (body, trail) = match body.strip_suffix(['-', '+']) {
            Some(b) => (b, &body[b.len()..]),
            None => (body, ""),
        };
        match body.trim() {
            "generation" => out.push_str(&format!("{{%{lead} if true {trail}%}}")),
            "endgeneration" => out.push_str(&format!("{{%{lead} endif {trail}%}}")),
            _ => out.push_str(&tag[..end + 2]),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Python's `None`, for JSON `null` in the data. minijinja's own `none` iterates as an empty
/// sequence, where jinja2 raises ("'NoneType' object is not iterable") and treats it as not
/// iterable; templates branch on exactly that (`content is iterable`), so data nulls become this
/// object, which behaves as Python's `None` does.
#[derive(Debug)]
struct PyNone;

impl Object for PyNone {
    /// Iterable, with an iterator whose first item is an error: that makes both `for x in None`
    /// and `'a' in None` fail as they do in Python (minijinja checks items in both).
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Iterable
    }

    fn enumerate(self: &Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Iter(Box::new(std::iter::once(Value::from(Error::new(
            ErrorKind::InvalidOperation,
            "argument of type 'NoneType' is not iterable",
        )))))
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        None
    }

    fn is_true(self: &Arc<Self>) -> bool {
        false
    }

    fn get_value(self: &Arc<Self>, _key: &Value) -> Option<Value> {
        None
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("None")
    }
}

fn is_py_none(v: &Value) -> bool {
    v.downcast_object_ref::<PyNone>().is_some()
}

/// JSON to template values, keeping key order and turning `null` into `PyNone`.
pub(crate) fn json_to_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::from_object(PyNone),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => a.iter().map(json_to_value).collect(),
        serde_json::Value::Object(o) => {
            Value::from_pairs(o.iter().map(|(k, v)| (k.as_str(), json_to_value(v))))
        }
    }
}

/// jinja2's `length`: `Undefined` has length 0 (templates write `tools|length` with no tools);
/// a generator has none.
fn py_len(v: Value) -> Result<usize, Error> {
    if v.is_undefined() {
        return Ok(0);
    }
    v.len().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("object of type '{}' has no len()", py_type_name(&v)),
        )
    })
}

fn py_type_name(v: &Value) -> &'static str {
    if is_generator(v) {
        return "generator";
    }
    if is_py_none(v) {
        return "NoneType";
    }
    match v.kind() {
        ValueKind::Undefined => "Undefined",
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if v.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

const MARKUP_ADD: &str = "__burrow_markup_add";

/// `a + b` where one side is a `Markup` (a `|safe` string): jinja2 HTML-escapes the other side
/// and the result stays `Markup`. Templates depend on it (functionary v3.1 renders tool schemas
/// as `"…"|safe + tool|tojson`, so its JSON appears with `&#34;`). Otherwise Python's `+`.
fn markup_add(a: Value, b: Value) -> Result<Value, Error> {
    let unsupported = || {
        Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "unsupported operand type(s) for +: '{}' and '{}'",
                py_type_name(&a),
                py_type_name(&b)
            ),
        )
    };
    let (ka, kb) = (a.kind(), b.kind());
    if a.is_safe() || b.is_safe() {
        if ka != ValueKind::String || kb != ValueKind::String {
            return Err(unsupported());
        }
        let side = |v: &Value| {
            let s = v.as_str().unwrap_or_default();
            if v.is_safe() {
                s.to_string()
            } else {
                html_escape(s)
            }
        };
        return Ok(Value::from_safe_string(side(&a) + &side(&b)));
    }
    match (ka, kb) {
        (ValueKind::String, ValueKind::String) => Ok(Value::from(format!(
            "{}{}",
            a.as_str().unwrap_or_default(),
            b.as_str().unwrap_or_default()
        ))),
        (ValueKind::Number, ValueKind::Number) => {
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                if let Some(sum) = x.checked_add(y) {
                    return Ok(Value::from(sum));
                }
            }
            let x = f64::try_from(a.clone())?;
            let y = f64::try_from(b.clone())?;
            Ok(Value::from(x + y))
        }
        (ValueKind::Seq, ValueKind::Seq) => {
            let items: Vec<Value> = a.try_iter()?.chain(b.try_iter()?).collect();
            Ok(Value::from(items))
        }
        _ => Err(unsupported()),
    }
}

/// markupsafe's escape.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            c => out.push(c),
        }
    }
    out
}

/// Rewrites `{{ t1 + t2 + … }}` into nested `__burrow_markup_add` calls when a term is
/// `…|safe`, so the concatenation follows jinja2's Markup rules (see `markup_add`). Only
/// expressions that are a plain chain of `+` at the top level are rewritten; anything with a
/// lower-precedence operator is left alone.
fn rewrite_markup_concat(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let (open_trim, body_start) = match after.chars().next() {
            Some(c @ ('-' | '+')) => (Some(c), 1),
            _ => (None, 0),
        };
        let Some(end) = find_expr_end(&after[body_start..]) else {
            out.push_str(&rest[start..]);
            return out;
        };
        let mut body = &after[body_start..body_start + end];
        let close_trim = match body.chars().last() {
            Some(c @ ('-' | '+')) if body.len() > 1 => {
                body = &body[..body.len() - 1];
                Some(c)
            }
            _ => None,
        };
        out.push_str("{{");
        if let Some(c) = open_trim {
            out.push(c);
        }
        match markup_chain(body) {
            Some(terms) => {
                let mut acc = terms[0].trim().to_string();
                for t in &terms[1..] {
                    acc = format!("{MARKUP_ADD}({acc}, {})", t.trim());
                }
                out.push(' ');
                out.push_str(&acc);
                out.push(' ');
            }
            None => out.push_str(body),
        }
        if let Some(c) = close_trim {
            out.push(c);
        }
        out.push_str("}}");
        rest = &after[body_start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// Index of the `}}` that closes an expression, skipping string literals.
fn find_expr_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match (quote, b[i]) {
            (Some(_), b'\\') => i += 1,
            (Some(q), c) if c == q => quote = None,
            (None, c @ (b'"' | b'\'')) => quote = Some(c),
            (None, b'}') if b.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Splits an expression at its top-level `+` signs; `Some` only when it is a chain of two or
/// more terms, one of which ends in `|safe`, with no lower-precedence operator at the top level.
fn markup_chain(expr: &str) -> Option<Vec<&str>> {
    let b = expr.as_bytes();
    let mut terms = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' | b'\'' => quote = Some(c),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'+' if depth == 0 => {
                terms.push(&expr[start..i]);
                start = i + 1;
            }
            b'-' | b'~' | b'<' | b'>' | b'=' | b'!' if depth == 0 => return None,
            c if depth == 0 && c.is_ascii_alphabetic() => {
                let word_end = expr[i..]
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .map_or(expr.len(), |n| i + n);
                let prev = if i == 0 { b' ' } else { b[i - 1] };
                let word = &expr[i..word_end];
                if !(prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'.')
                    && matches!(word, "and" | "or" | "not" | "in" | "is" | "if" | "else")
                {
                    return None;
                }
                i = word_end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    terms.push(&expr[start..]);
    let is_safe_term = |t: &str| {
        t.trim_end()
            .rsplit_once('|')
            .is_some_and(|(_, f)| f.trim() == "safe")
    };
    if terms.len() >= 2 && terms.iter().any(|t| is_safe_term(t)) {
        Some(terms)
    } else {
        None
    }
}

/// A generator: what jinja2's `map`, `select`, `reject`, `selectattr` and `rejectattr` return.
/// It iterates, but has no length and is not JSON serializable, and templates rely on both
/// (a reference rendering fails with "Object of type generator is not JSON serializable").
#[derive(Debug)]
struct Generator(Vec<Value>);

impl Object for Generator {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Iterable
    }

    fn enumerate(self: &Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Values(self.0.clone())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        None
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<generator object>")
    }
}

fn wrap_as_generator(env: &mut Environment<'static>, name: &'static str, builtin: Value) {
    env.add_filter(
        name,
        move |state: &mut State, args: Rest<Value>, kwargs: Kwargs| -> Result<Value, Error> {
            // jinja2's filters start with `if value:`, so None and empty values give nothing.
            if args.first().is_none_or(|v| !v.is_true()) {
                return Ok(Value::from_object(Generator(Vec::new())));
            }
            let mut args = args.0;
            if kwargs.args().next().is_some() {
                args.push(Value::from(kwargs));
            }
            let rv = builtin.call(state, &args)?;
            let items: Vec<Value> = rv.try_iter()?.collect();
            Ok(Value::from_object(Generator(items)))
        },
    );
}

fn is_generator(v: &Value) -> bool {
    v.downcast_object_ref::<Generator>().is_some()
}

/// Methods jinja2 templates call on Python objects. minijinja-contrib's pycompat covers the
/// string and dict methods; list mutation (`append`, `pop`) stays an error, as it is in
/// transformers' immutable sandbox.
fn unknown_method(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if is_py_none(value) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("'None' has no attribute '{method}'"),
        ));
    }
    if value.kind() == ValueKind::Seq && matches!(method, "append" | "pop" | "extend" | "insert") {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("access to attribute '{method}' of 'list' object is unsafe"),
        ));
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// Python's `str()` of a value: what jinja2 prints for `{{ value }}`.
pub fn py_str(v: &Value) -> String {
    match v.kind() {
        ValueKind::String => v.as_str().unwrap_or_default().to_string(),
        ValueKind::Undefined => String::new(),
        _ => py_repr(v),
    }
}

/// Python's `repr()`: how values print inside containers.
fn py_repr(v: &Value) -> String {
    match v.kind() {
        ValueKind::Undefined => String::new(),
        ValueKind::None => "None".into(),
        ValueKind::Bool => if v.is_true() { "True" } else { "False" }.into(),
        ValueKind::Number => {
            if v.is_integer() {
                v.to_string()
            } else {
                match f64::try_from(v.clone()) {
                    Ok(f) => py_float(f, FloatStyle::Repr),
                    Err(_) => v.to_string(),
                }
            }
        }
        ValueKind::String => py_quote(v.as_str().unwrap_or_default()),
        ValueKind::Seq => {
            let items: Vec<String> = v
                .try_iter()
                .map(|it| it.map(|x| py_repr(&x)).collect())
                .unwrap_or_default();
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let mut parts = Vec::new();
            if let Ok(keys) = v.try_iter() {
                for k in keys {
                    let val = v.get_item(&k).unwrap_or_default();
                    parts.push(format!("{}: {}", py_repr(&k), py_repr(&val)));
                }
            }
            format!("{{{}}}", parts.join(", "))
        }
        _ => v.to_string(),
    }
}

/// Python's string repr: single quotes unless the text has a single quote and no double quote.
fn py_quote(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[derive(Clone, Copy)]
enum FloatStyle {
    Repr,
    Json,
}

/// Python's float repr: the shortest round-trip digits, in positional notation for exponents in
/// [-4, 16) and scientific (`1e+16`, `1.5e-05`) otherwise.
fn py_float(f: f64, style: FloatStyle) -> String {
    if f.is_nan() {
        return match style {
            FloatStyle::Repr => "nan",
            FloatStyle::Json => "NaN",
        }
        .into();
    }
    if f.is_infinite() {
        return match (style, f > 0.0) {
            (FloatStyle::Repr, true) => "inf",
            (FloatStyle::Repr, false) => "-inf",
            (FloatStyle::Json, true) => "Infinity",
            (FloatStyle::Json, false) => "-Infinity",
        }
        .into();
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let n = digits.len() as i32;
    if (-4..16).contains(&exp) {
        let body = if exp >= n - 1 {
            format!("{digits}{}.0", "0".repeat((exp - (n - 1)) as usize))
        } else if exp >= 0 {
            let (a, b) = digits.split_at((exp + 1) as usize);
            format!("{a}.{b}")
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{frac}e{esign}{:02}", exp.abs())
    }
}

/// `tojson` as transformers defines it: Python's `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`, byte for byte.
fn tojson(value: Value, args: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    // json.dumps(obj, skipkeys, ensure_ascii, ...) — but transformers' wrapper takes
    // (x, ensure_ascii, indent, separators, sort_keys) positionally.
    let positional = &args.0;
    let get = |idx: usize, name: &str| -> Result<Option<Value>, Error> {
        if let Some(v) = kwargs.get::<Option<Value>>(name)? {
            return Ok(Some(v));
        }
        Ok(positional.get(idx).cloned())
    };
    let ensure_ascii = get(0, "ensure_ascii")?.is_some_and(|v| v.is_true());
    let indent = match get(1, "indent")? {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) if v.kind() == ValueKind::String => {
            Some(v.as_str().unwrap_or_default().to_string())
        }
        Some(v) => match v.as_i64() {
            Some(n) => Some(" ".repeat(n.max(0) as usize)),
            None => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "tojson: indent must be an integer or string, got {}",
                        v.kind()
                    ),
                ))
            }
        },
    };
    let separators = match get(2, "separators")? {
        Some(v) if !v.is_none() => {
            let items: Vec<Value> = v.try_iter()?.collect();
            match items.as_slice() {
                [a, b] => Some((py_str(a), py_str(b))),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be a pair (item_separator, key_separator)",
                    ))
                }
            }
        }
        _ => None,
    };
    let sort_keys = get(3, "sort_keys")?.is_some_and(|v| v.is_true());
    kwargs.assert_all_used()?;
    let (item_sep, key_sep) = separators.unwrap_or_else(|| {
        if indent.is_some() {
            (",".into(), ": ".into())
        } else {
            (", ".into(), ": ".into())
        }
    });
    let opts = JsonOpts {
        ensure_ascii,
        indent,
        item_sep,
        key_sep,
        sort_keys,
    };
    let mut out = String::new();
    write_json(&mut out, &value, &opts, 0)?;
    Ok(Value::from(out))
}

struct JsonOpts {
    ensure_ascii: bool,
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
    sort_keys: bool,
}

fn not_serializable(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("Object of type {what} is not JSON serializable"),
    )
}

fn write_json(out: &mut String, v: &Value, o: &JsonOpts, depth: usize) -> Result<(), Error> {
    if is_py_none(v) {
        out.push_str("null");
        return Ok(());
    }
    match v.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if v.is_integer() {
                out.push_str(&v.to_string())
            } else {
                let f = f64::try_from(v.clone())?;
                out.push_str(&py_float(f, FloatStyle::Json))
            }
        }
        ValueKind::String => json_string(out, v.as_str().unwrap_or_default(), o.ensure_ascii),
        ValueKind::Undefined => return Err(not_serializable("Undefined")),
        ValueKind::Seq | ValueKind::Iterable if !is_generator(v) => {
            let items: Vec<Value> = v.try_iter()?.collect();
            json_container(out, o, depth, '[', ']', items.len(), |out, i| {
                write_json(out, &items[i], o, depth + 1)
            })?;
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = v.try_iter()?.collect();
            if o.sort_keys {
                keys.sort_by_key(py_str);
            }
            json_container(out, o, depth, '{', '}', keys.len(), |out, i| {
                let k = &keys[i];
                let key = match k.kind() {
                    ValueKind::String => k.as_str().unwrap_or_default().to_string(),
                    ValueKind::None => "null".into(),
                    ValueKind::Bool => if k.is_true() { "true" } else { "false" }.into(),
                    ValueKind::Number => py_str(k),
                    other => return Err(not_serializable(&format!("{other} (as a key)"))),
                };
                json_string(out, &key, o.ensure_ascii);
                out.push_str(&o.key_sep);
                write_json(out, &v.get_item(k)?, o, depth + 1)
            })?;
        }
        _ if is_generator(v) => return Err(not_serializable("generator")),
        other => return Err(not_serializable(&other.to_string())),
    }
    Ok(())
}

fn json_container(
    out: &mut String,
    o: &JsonOpts,
    depth: usize,
    open: char,
    close: char,
    len: usize,
    mut item: impl FnMut(&mut String, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    if len == 0 {
        out.push(close);
        return Ok(());
    }
    for i in 0..len {
        if i > 0 {
            out.push_str(&o.item_sep);
        }
        if let Some(ind) = &o.indent {
            out.push('\n');
            out.push_str(&ind.repeat(depth + 1));
        }
        item(out, i)?;
    }
    if let Some(ind) = &o.indent {
        out.push('\n');
        out.push_str(&ind.repeat(depth));
    }
    out.push(close);
    Ok(())
}

fn json_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// jinja2's `indent(width=4, first=False, blank=False)`, including its quirks: the text gets a
/// trailing newline before Python's `splitlines`, so a trailing newline is dropped, and every
/// Unicode line boundary counts.
fn indent(s: String, args: Rest<Value>, kwargs: Kwargs) -> Result<String, Error> {
    let positional = &args.0;
    let get = |idx: usize, name: &str| -> Result<Option<Value>, Error> {
        if let Some(v) = kwargs.get::<Option<Value>>(name)? {
            return Ok(Some(v));
        }
        Ok(positional.get(idx).cloned())
    };
    let indention = match get(0, "width")? {
        None => "    ".to_string(),
        Some(v) if v.kind() == ValueKind::String => v.as_str().unwrap_or_default().to_string(),
        Some(v) => " ".repeat(v.as_i64().unwrap_or(4).max(0) as usize),
    };
    let first = get(1, "first")?.is_some_and(|v| v.is_true());
    let blank = get(2, "blank")?.is_some_and(|v| v.is_true());
    kwargs.assert_all_used()?;
    let text = format!("{s}\n");
    let lines = py_splitlines(&text);
    let mut rv = if blank {
        lines.join(&format!("\n{indention}"))
    } else {
        let mut it = lines.into_iter();
        let mut rv = it.next().unwrap_or_default().to_string();
        let rest: Vec<String> = it
            .map(|line| {
                if line.is_empty() {
                    String::new()
                } else {
                    format!("{indention}{line}")
                }
            })
            .collect();
        if !rest.is_empty() {
            rv.push('\n');
            rv.push_str(&rest.join("\n"));
        }
        rv
    };
    if first {
        rv = format!("{indention}{rv}");
    }
    Ok(rv)
}

/// Python's `str.splitlines()`.
fn py_splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if is_break {
            lines.push(&s[start..i]);
            let mut next = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(j, '\n')) = chars.peek() {
                    chars.next();
                    next = j + 1;
                }
            }
            start = next;
        }
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// Python's `datetime.strftime` for the directives chat templates use.
fn strftime(at: &NaiveDateTime, fmt: &str) -> Result<String, Error> {
    use std::fmt::Write;
    // chrono's directives match C's for the common ones; validate first, since chrono panics
    // while formatting an invalid directive.
    let items: Vec<chrono::format::Item> = chrono::format::StrftimeItems::new(fmt).collect();
    if items
        .iter()
        .any(|i| matches!(i, chrono::format::Item::Error))
    {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("strftime_now: invalid format {fmt:?}"),
        ));
    }
    let mut out = String::new();
    write!(out, "{}", at.format_with_items(items.into_iter())).map_err(|_| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("strftime_now: cannot format {fmt:?}"),
        )
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(src: &str, ctx: serde_json::Value) -> Result<String, TemplateError> {
        ChatTemplate::new(src)?.render_json(&ctx)
    }

    #[test]
    fn python_float_repr() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (123456789.0, "123456789.0"),
            (0.0001, "0.0001"),
            (1e-7, "1e-07"),
            (1234567890123456.0, "1234567890123456.0"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(py_float(f, FloatStyle::Repr), want, "{f}");
        }
    }

    #[test]
    fn tojson_matches_python_json_dumps() {
        let ctx = serde_json::json!({"x": {"b": [1, 2.0, "é\n\"", null, true], "a": {}}});
        assert_eq!(
            render("{{ x | tojson }}", ctx.clone()).unwrap(),
            r#"{"b": [1, 2.0, "é\n\"", null, true], "a": {}}"#
        );
        assert_eq!(
            render("{{ x | tojson(indent=2, sort_keys=true) }}", ctx.clone()).unwrap(),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    2.0,\n    \"é\\n\\\"\",\n    null,\n    true\n  ]\n}"
        );
        assert_eq!(
            render(
                "{{ x.b | tojson(ensure_ascii=true, separators=(',', ':')) }}",
                ctx
            )
            .unwrap(),
            r#"[1,2.0,"\u00e9\n\"",null,true]"#
        );
        let emoji = serde_json::json!({"s": "😀<&>'"});
        assert_eq!(
            render("{{ s | tojson(ensure_ascii=true) }}", emoji.clone()).unwrap(),
            r#""\ud83d\ude00<&>'""#
        );
        assert_eq!(render("{{ s | tojson }}", emoji).unwrap(), r#""😀<&>'""#);
    }

    #[test]
    fn tojson_refuses_generators_and_undefined() {
        let ctx = serde_json::json!({"tools": [{"function": {"name": "f"}}]});
        let err = render(
            "{{ tools | map(attribute='function') | tojson }}",
            ctx.clone(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("generator is not JSON serializable"), "{err}");
        // A generator still iterates and turns into a list.
        assert_eq!(
            render(
                "{{ tools | map(attribute='function') | list | tojson }}",
                ctx
            )
            .unwrap(),
            r#"[{"name": "f"}]"#
        );
        assert!(render("{{ nothing | tojson }}", serde_json::json!({})).is_err());
    }

    #[test]
    fn values_print_as_python_prints_them() {
        let ctx =
            serde_json::json!({"n": null, "t": true, "d": {"a": "it's", "b": [1, "x"]}, "f": 3.0});
        assert_eq!(
            render("{{ n }}|{{ t }}|{{ d }}|{{ f }}|{{ n | string }}", ctx).unwrap(),
            r#"None|True|{'a': "it's", 'b': [1, 'x']}|3.0|None"#
        );
    }

    #[test]
    fn indent_is_jinja2s() {
        let ctx = serde_json::json!({"s": "a\n\nb\n"});
        // Expected values are what jinja2 3.1.6 renders.
        assert_eq!(
            render("{{ s | indent(2) }}", ctx.clone()).unwrap(),
            "a\n\n  b\n"
        );
        assert_eq!(
            render("{{ s | indent(2, true, true) }}", ctx.clone()).unwrap(),
            "  a\n  \n  b\n  "
        );
        assert_eq!(
            render("{{ s | indent('> ', first=true) }}", ctx).unwrap(),
            "> a\n\n> b\n"
        );
    }

    #[test]
    fn generation_tag_renders_its_body_with_whitespace_control() {
        let src = "{% for m in messages %}\n  {%- generation -%}\n {{ m }}\n{%- endgeneration %}\n{% endfor %}";
        let out = render(src, serde_json::json!({"messages": ["a", "b"]})).unwrap();
        assert_eq!(out, "ab");
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
    fn markup_concatenation_escapes_the_plain_side() {
        let ctx = serde_json::json!({"t": {"a": "<b>"}, "n": "x"});
        // Expected value is what jinja2 3.1.6 renders.
        assert_eq!(
            render("{{ 'pre: '|safe + n + ' ' + t | tojson }}", ctx.clone()).unwrap(),
            "pre: x {&#34;a&#34;: &#34;&lt;b&gt;&#34;}"
        );
        // Without |safe it is plain concatenation.
        assert_eq!(
            render("{{ 'pre: ' + t | tojson }}", ctx.clone()).unwrap(),
            "pre: {\"a\": \"<b>\"}"
        );
        assert_eq!(render("{{ undefined_thing | length }}", ctx).unwrap(), "0");
    }

    #[test]
    fn null_data_behaves_like_python_none() {
        let ctx = serde_json::json!({"c": null, "m": {"content": null}});
        assert_eq!(
            render(
                "{{ c }}|{{ c is none }}|{{ c is iterable }}|{{ c | tojson }}|{{ c ~ '' }}",
                ctx.clone()
            )
            .unwrap(),
            "None|True|False|null|None"
        );
        assert_eq!(
            render(
                "{{ c | selectattr('x') | list | length }}|{{ not c }}",
                ctx.clone()
            )
            .unwrap(),
            "0|True"
        );
        for src in [
            "{% for x in c %}{{ x }}{% endfor %}",
            "{{ 'a' in m.content }}",
            "{{ c | length }}",
            "{{ c.split() }}",
        ] {
            assert!(
                render(src, ctx.clone()).is_err(),
                "{src} must fail as in Python"
            );
        }
    }

    #[test]
    fn list_mutation_is_refused_like_the_sandbox() {
        let err = render(
            "{% set xs = [] %}{% set _ = xs.append(1) %}",
            serde_json::json!({}),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unsafe"), "{err}");
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
