//! The `tojson` filter as transformers defines it: Python's `json.dumps`, byte for byte.

use minijinja::value::{Kwargs, Rest, Value, ValueKind};
use minijinja::{Error, ErrorKind};

use super::pycompat::{is_generator, is_py_none, py_float, py_str, FloatStyle};

/// `tojson` as transformers defines it: Python's `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`, byte for byte.
pub(super) fn tojson(value: Value, args: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
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
            // Charged before it is built, as `indent`'s width is.
            Some(n) => {
                minijinja::budget::charge(n.max(0) as usize)?;
                Some(" ".repeat(n.max(0) as usize))
            }
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
        ValueKind::String => {
            let before = out.len();
            json_string(out, v.as_str().unwrap_or_default(), o.ensure_ascii);
            // JSON of a list can be far larger than the list (one string repeated by
            // reference): it stops at the rendering's memory budget.
            minijinja::budget::charge(out.len() - before)?;
        }
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
                minijinja::budget::charge(o.key_sep.len())?;
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
    // What each item's separator and indent add is charged before it is written: with a wide
    // indent or separator over many items they grew past the memory the budget guards.
    let indent_len = |d: usize| o.indent.as_ref().map_or(0, |i| i.len().saturating_mul(d));
    for i in 0..len {
        let sep = if i > 0 { o.item_sep.len() } else { 0 };
        minijinja::budget::charge(sep.saturating_add(indent_len(depth + 1)))?;
        if i > 0 {
            out.push_str(&o.item_sep);
        }
        if let Some(ind) = &o.indent {
            out.push('\n');
            out.push_str(&ind.repeat(depth + 1));
        }
        item(out, i)?;
    }
    minijinja::budget::charge(indent_len(depth))?;
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

#[cfg(test)]
mod tests {
    use crate::llm::template::tests::render;

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
}
