//! Template markup that jinja2 reads differently from minijinja, rewritten before compiling: the
//! `{% generation %}` tag, and `+` with a `Markup` (`|safe`) side, which becomes a call to
//! `markup_add` so it follows jinja2's escaping rules.

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind};

use super::pycompat::py_type_name;

/// `{% generation %}…{% endgeneration %}` marks assistant text for transformers' masking and
/// renders its body. minijinja has no custom tags, so it becomes an always-true `if` block: the
/// tags stay tags, so whitespace control (`-`, trim_blocks, lstrip_blocks) acts on them exactly
/// as jinja2 acts on the originals.
pub(super) fn rewrite_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        // The closing `%}` comes after the opening `{%`, not inside it: in `{%}` they share
        // the `%`, and slicing between them panicked (found by fuzzing, issue 17).
        let Some(end) = tag[2..].find("%}").map(|e| e + 2) else {
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

pub(super) const MARKUP_ADD: &str = "__burrow_markup_add";

/// `a + b` where one side is a `Markup` (a `|safe` string): jinja2 HTML-escapes the other side
/// and the result stays `Markup`. Templates depend on it (functionary v3.1 renders tool schemas
/// as `"…"|safe + tool|tojson`, so its JSON appears with `&#34;`). Otherwise Python's `+`.
pub(super) fn markup_add(a: Value, b: Value) -> Result<Value, Error> {
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
    let size = |v: &Value| v.as_str().map_or(0, str::len);
    minijinja::budget::charge(size(&a).saturating_add(size(&b)))?;
    if let (Some(x), Some(y)) = (a.len().filter(|_| ka == ValueKind::Seq), b.len()) {
        minijinja::budget::charge_items(x.saturating_add(y))?;
    }
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
pub(super) fn rewrite_markup_concat(source: &str) -> String {
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

#[cfg(test)]
mod tests {
    use crate::llm::template::tests::render;

    #[test]
    fn generation_tag_renders_its_body_with_whitespace_control() {
        let src = "{% for m in messages %}\n  {%- generation -%}\n {{ m }}\n{%- endgeneration %}\n{% endfor %}";
        let out = render(src, serde_json::json!({"messages": ["a", "b"]})).unwrap();
        assert_eq!(out, "ab");
    }

    /// Found by fuzzing (issue 17; fuzz/regressions/template/): a tag whose `%}` shares the
    /// `%` of its `{%` (`{%}`) panicked while rewriting, so a GGUF carrying such a template
    /// crashed Burrow. Now it is refused as a syntax error like any broken template.
    #[test]
    fn a_tag_that_closes_inside_its_opening_is_a_syntax_error_not_a_panic() {
        for src in ["{%}", "x {%} y", "{%-}", "{%}%}", "{%"] {
            assert!(
                crate::llm::template::ChatTemplate::new(src).is_err(),
                "{src:?} compiles"
            );
        }
        assert_eq!(super::rewrite_generation_tags("a {%} b"), "a {%} b");
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
}
