//! Values that behave as Python's do where minijinja's differ and real templates reach the
//! difference: `None` from JSON `null`, what `str()` and `repr()` print, `len()`, the generators
//! `map` and `select` return, the sandbox's refusals, jinja2's `indent`, and `strftime`.

use std::sync::Arc;

use chrono::NaiveDateTime;
use minijinja::value::{Kwargs, Object, ObjectRepr, Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State};

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

pub(super) fn is_py_none(v: &Value) -> bool {
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
pub(super) fn py_len(v: Value) -> Result<usize, Error> {
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

pub(super) fn py_type_name(v: &Value) -> &'static str {
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

pub(super) fn wrap_as_generator(
    env: &mut Environment<'static>,
    name: &'static str,
    builtin: Value,
) {
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

pub(super) fn is_generator(v: &Value) -> bool {
    v.downcast_object_ref::<Generator>().is_some()
}

/// Methods jinja2 templates call on Python objects. minijinja-contrib's pycompat covers the
/// string and dict methods; list mutation (`append`, `pop`) stays an error, as it is in
/// transformers' immutable sandbox.
pub(super) fn unknown_method(
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
    charge_method(value, method, args)?;
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// Charges the rendering's memory budget, before they run, for the string methods whose result
/// can be far larger than their inputs: `"x".replace("", long)`, `sep.join(many)`,
/// `"{}{}".format(s, s)` in a loop, `split` into one value per piece.
fn charge_method(value: &Value, method: &str, args: &[Value]) -> Result<(), Error> {
    let Some(s) = value.as_str() else {
        return Ok(());
    };
    let text = |i: usize| args.get(i).and_then(Value::as_str).unwrap_or_default();
    let bytes = match method {
        "replace" => return minijinja::budget::charge_replace(s, text(0), text(1)),
        "join" => {
            let items = args.first().and_then(Value::len).unwrap_or(0);
            let each = args.first().map_or(0, |seq| {
                seq.try_iter()
                    .into_iter()
                    .flatten()
                    .map(|x| x.as_str().map_or(8, str::len))
                    .fold(0usize, usize::saturating_add)
            });
            each.saturating_add(items.saturating_mul(s.len()))
        }
        "format" => {
            let fields = s.matches('{').count();
            let widest = args.iter().map(|a| a.as_str().map_or(8, str::len)).max();
            s.len()
                .saturating_add(fields.saturating_mul(widest.unwrap_or(0)))
        }
        "split" | "splitlines" => {
            let pieces = match args.first().and_then(Value::as_str) {
                _ if method == "splitlines" => s.lines().count(),
                Some(sep) if !sep.is_empty() => s.matches(sep).count() + 1,
                _ => s.split_whitespace().count(),
            };
            s.len()
                .saturating_add(pieces.saturating_mul(minijinja::budget::ITEM_BYTES))
        }
        _ => 0,
    };
    minijinja::budget::charge(bytes)
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
        // A list can print far larger than it is (one string repeated by reference): printing
        // stops at the rendering's memory budget, and the rendering fails at its next step.
        ValueKind::Seq => {
            let mut items = Vec::new();
            for x in v.try_iter().into_iter().flatten() {
                let item = py_repr(&x);
                if minijinja::budget::charge(item.len() + 2).is_err() {
                    break;
                }
                items.push(item);
            }
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let mut parts = Vec::new();
            for k in v.try_iter().into_iter().flatten() {
                let val = v.get_item(&k).unwrap_or_default();
                let part = format!("{}: {}", py_repr(&k), py_repr(&val));
                if minijinja::budget::charge(part.len() + 2).is_err() {
                    break;
                }
                parts.push(part);
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
pub(super) enum FloatStyle {
    Repr,
    Json,
}

/// Python's float repr: the shortest round-trip digits, in positional notation for exponents in
/// [-4, 16) and scientific (`1e+16`, `1.5e-05`) otherwise.
pub(super) fn py_float(f: f64, style: FloatStyle) -> String {
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

/// jinja2's `indent(width=4, first=False, blank=False)`, including its quirks: the text gets a
/// trailing newline before Python's `splitlines`, so a trailing newline is dropped, and every
/// Unicode line boundary counts.
pub(super) fn indent(s: String, args: Rest<Value>, kwargs: Kwargs) -> Result<String, Error> {
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
        Some(v) => {
            // Charged before it is built: `indent(10**12)` aborted the process on its
            // allocation before the budget saw it.
            let width = v.as_i64().unwrap_or(4).max(0) as usize;
            minijinja::budget::charge(width)?;
            " ".repeat(width)
        }
    };
    let first = get(1, "first")?.is_some_and(|v| v.is_true());
    let blank = get(2, "blank")?.is_some_and(|v| v.is_true());
    kwargs.assert_all_used()?;
    let text = format!("{s}\n");
    let lines = py_splitlines(&text);
    // A wide indent multiplies: charged before it is built.
    minijinja::budget::charge(
        text.len()
            .saturating_add(lines.len().saturating_mul(indention.len())),
    )?;
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
pub(super) fn strftime(at: &NaiveDateTime, fmt: &str) -> Result<String, Error> {
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
    use crate::llm::template::tests::render;

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
}
