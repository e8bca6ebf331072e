//! Calls already made, kept out of the next step's grammar: a small model that repeats a call
//! word for word (it copies the step before it) cannot write it again, so loops become
//! impossible instead of refused.
//!
//! JSON Schema has no "not this object", so the arguments are split into branches that each
//! differ from the calls made: the tool's first required argument (its key: a query, a path, a
//! number) takes another value, or it takes a value already used and the rest of the call
//! differs from that call's rest (an argument left out, added, or given another value). Where
//! one key value was used with two different rests, that value is left out altogether: the
//! model must change its key, which is stricter than needed but never lets a repeat through.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// The schema of a tool's arguments that no call in `made` satisfies. `None` when every call
/// of the tool is one already made (a tool without arguments, once called).
pub(super) fn excluding(parameters: &Value, made: &[&Map<String, Value>]) -> Option<Value> {
    if made.is_empty() {
        return Some(parameters.clone());
    }
    let props = parameters.get("properties").and_then(Value::as_object);
    let required = required(parameters);
    let Some(key) = required
        .first()
        .cloned()
        .or_else(|| props.and_then(|p| p.keys().next().cloned()))
    else {
        // An open map of arguments (no properties, any other key): calls differ by their
        // keys, which a schema cannot say; the loop guard refuses a repeat instead (it was
        // taken for a tool of no arguments, never offered again after one call).
        if parameters
            .get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false))
        {
            return Some(parameters.clone());
        }
        // No argument at all: every call is the same call.
        return None;
    };
    let key_schema = props
        .and_then(|p| p.get(&key))
        .cloned()
        .unwrap_or(json!({}));
    // The rests of the calls made, by the key's value, and of those made without the key.
    let mut by_value: BTreeMap<String, (Value, Vec<Map<String, Value>>)> = BTreeMap::new();
    let mut without_key: Vec<Map<String, Value>> = Vec::new();
    for args in made {
        let mut rest = (*args).clone();
        match rest.remove(&key) {
            Some(v) => by_value
                .entry(v.to_string())
                .or_insert_with(|| (v.clone(), Vec::new()))
                .1
                .push(rest),
            None => without_key.push(rest),
        }
    }
    let used: Vec<Value> = by_value.values().map(|(v, _)| v.clone()).collect();
    let Some(others) = other_values(&key_schema, &used) else {
        // A key whose other values a schema cannot say (a list, an object): the loop guard
        // refuses a repeat instead.
        return Some(parameters.clone());
    };
    let mut branches: Vec<Value> = Vec::new();
    for other in others {
        let mut b = with_property(parameters, &key, other);
        add_required(&mut b, &key);
        branches.push(b);
    }
    let allowed: Option<&Vec<Value>> = key_schema.get("enum").and_then(Value::as_array);
    for (value, rests) in by_value.values() {
        // A value the key may no longer take (an item opened once, out of the tool's enum)
        // comes back with no other rest either.
        if allowed.is_some_and(|a| !a.contains(value)) {
            continue;
        }
        let mut rests = rests.clone();
        rests.dedup();
        let [rest] = rests.as_slice() else { continue };
        let mut base = with_property(parameters, &key, json!({"const": value}));
        add_required(&mut base, &key);
        branches.extend(differing(&base, &key, rest));
    }
    // Without the key (where it may be left out): anything, unless a call was made so; after
    // one such call, a rest that differs from that call's.
    if !required.contains(&key) {
        let mut absent = parameters.clone();
        if let Some(p) = absent["properties"].as_object_mut() {
            p.remove(&key);
        }
        without_key.dedup();
        match without_key.as_slice() {
            [] => branches.push(absent),
            [rest] => branches.extend(differing(&absent, &key, rest)),
            _ => {}
        }
    }
    match branches.len() {
        0 => None,
        1 => branches.pop(),
        _ => Some(json!({"anyOf": branches})),
    }
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn with_property(schema: &Value, name: &str, property: Value) -> Value {
    let mut s = schema.clone();
    s["properties"][name] = property;
    s
}

/// Schemas of the values of `schema` other than `used` (as alternatives); `None` where a
/// schema cannot say it.
fn other_values(schema: &Value, used: &[Value]) -> Option<Vec<Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let left: Vec<Value> = values
            .iter()
            .filter(|v| !used.contains(v))
            .cloned()
            .collect();
        return Some(if left.is_empty() {
            Vec::new()
        } else {
            let mut s = schema.clone();
            s["enum"] = Value::Array(left);
            vec![s]
        });
    }
    let is = |t: &str| match schema.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|x| x == t),
        _ => false,
    };
    // A string held to a pattern or format of its own: the exclusion's pattern would take its
    // place (a date `^\d{4}-…$` then took "yesterday"); the loop guard refuses a repeat.
    if is("string") && (schema.get("pattern").is_some() || schema.get("format").is_some()) {
        return None;
    }
    if is("string") {
        let strings: Vec<&str> = used.iter().filter_map(Value::as_str).collect();
        let mut s = schema.clone();
        s["pattern"] = Value::String(format!("^{}$", not_any_of(&strings)));
        s["x-not"] = json!(strings);
        return Some(vec![s]);
    }
    if is("integer") {
        // The ranges between the values used, within the schema's own bounds (which they
        // replaced: a minimum of 10 became 4 after a call with 3), without overflow at the
        // ends of i64 (a call with i64::MAX panicked the next step).
        let own_min = schema.get("minimum").and_then(Value::as_i64);
        let own_max = schema.get("maximum").and_then(Value::as_i64);
        let mut ints: Vec<i64> = used.iter().filter_map(Value::as_i64).collect();
        ints.sort_unstable();
        ints.dedup();
        let mut ranges: Vec<(Option<i64>, Option<i64>)> = Vec::new();
        let mut low: Option<i64> = own_min;
        let mut open_above = true;
        for n in ints {
            if let Some(below) = n.checked_sub(1) {
                ranges.push((low, Some(below)));
            }
            match n.checked_add(1) {
                Some(above) => low = Some(above),
                None => {
                    open_above = false;
                    break;
                }
            }
        }
        if open_above {
            ranges.push((low, None));
        }
        let out = ranges
            .into_iter()
            .filter_map(|(lo, hi)| {
                let lo = lo.max(own_min);
                let hi = match (hi, own_max) {
                    (Some(h), Some(m)) => Some(h.min(m)),
                    (h, m) => h.or(m),
                };
                if let (Some(l), Some(h)) = (lo, hi) {
                    if l > h {
                        return None;
                    }
                }
                let mut s = schema.clone();
                if let Some(l) = lo {
                    s["minimum"] = json!(l);
                }
                if let Some(h) = hi {
                    s["maximum"] = json!(h);
                }
                Some(s)
            })
            .collect();
        return Some(out);
    }
    if is("boolean") {
        return Some(
            [true, false]
                .into_iter()
                .filter(|b| !used.contains(&json!(b)))
                .map(|b| json!({"const": b}))
                .collect(),
        );
    }
    // A list of another length than those used (one of the same length with other items
    // cannot be said in the schema, so that is left out too).
    if is("array") {
        let mut lengths: Vec<u64> = used
            .iter()
            .filter_map(|v| v.as_array().map(|a| a.len() as u64))
            .collect();
        lengths.sort_unstable();
        lengths.dedup();
        let max = schema.get("maxItems").and_then(Value::as_u64);
        // Not below the schema's own least length (`files` of git_add takes one at least; an
        // empty list was offered after one call).
        let own_min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let mut out = Vec::new();
        let mut low = own_min;
        for n in lengths.iter().copied().chain(max.map(|m| m + 1)) {
            if n > low {
                let mut s = schema.clone();
                s["minItems"] = json!(low);
                s["maxItems"] = json!(n - 1);
                out.push(s);
            }
            low = low.max(n + 1);
        }
        if max.is_none() {
            let mut s = schema.clone();
            s["minItems"] = json!(low);
            out.push(s);
        }
        return Some(out);
    }
    None
}

/// Branches of `base` (the key fixed) whose other arguments differ from `rest`.
fn differing(base: &Value, key: &str, rest: &Map<String, Value>) -> Vec<Value> {
    let mut out = Vec::new();
    let props: Map<String, Value> = base
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required = required(base);
    for (name, schema) in &props {
        if name == key {
            continue;
        }
        match rest.get(name) {
            // Left out this time (where it may be).
            Some(value) => {
                if !required.contains(name) {
                    let mut b = base.clone();
                    if let Some(p) = b["properties"].as_object_mut() {
                        p.remove(name);
                    }
                    out.push(b);
                }
                // Another value.
                let others = other_values(schema, std::slice::from_ref(value));
                for other in others.unwrap_or_default() {
                    let mut b = with_property(base, name, other);
                    add_required(&mut b, name);
                    out.push(b);
                }
            }
            // Given this time.
            None => {
                let mut b = base.clone();
                add_required(&mut b, name);
                out.push(b);
            }
        }
    }
    out
}

fn add_required(schema: &mut Value, name: &str) {
    let mut r = required(schema);
    if !r.iter().any(|n| n == name) {
        r.push(name.to_string());
    }
    schema["required"] = json!(r);
}

/// Characters of a string that tell it from the strings already used: a longer string that
/// starts as a used one did is left out too. It bounds the expression (its nesting grows with
/// this length, and regex parsers limit nesting) at the cost of refusing a long query that
/// changes only after its first sixty characters (the parser counts each character three
/// levels deep: a group, an alternation, a concatenation).
const TELLING_CHARS: usize = 60;

/// A regular expression (without anchors) of every string but these (and, for a string longer
/// than `TELLING_CHARS`, every string that starts as it does).
pub(crate) fn not_any_of(strings: &[&str]) -> String {
    let words: Vec<Word<char>> = strings
        .iter()
        .map(|s| Word::new(s.chars().collect()))
        .collect();
    let class = |cs: &[char]| {
        let class: String = cs
            .iter()
            .map(|c| format!("\\x{{{:x}}}", *c as u32))
            .collect();
        if class.is_empty() {
            "(?s:.)".to_string()
        } else {
            format!("[^{class}]")
        }
    };
    let all: Vec<&Word<char>> = words.iter().collect();
    trie(
        &all,
        0,
        &|c| regex::escape(&c.to_string()),
        &class,
        "(?s:.)",
    )
}

/// A used string cut to `TELLING_CHARS` units; `prefix` when it was longer.
struct Word<U> {
    units: Vec<U>,
    prefix: bool,
}

impl<U> Word<U> {
    fn new(mut units: Vec<U>) -> Self {
        let prefix = units.len() > TELLING_CHARS;
        units.truncate(TELLING_CHARS);
        Word { units, prefix }
    }
}

/// The complement of `words` among all sequences of `unit`s, from position `at` of the
/// words: end here (unless a word ends here), take a unit no word takes here and then
/// anything, or follow a word. Past the end of a cut word, nothing is left.
fn trie<U: Ord + Copy>(
    words: &[&Word<U>],
    at: usize,
    literal: &dyn Fn(U) -> String,
    other: &dyn Fn(&[U]) -> String,
    unit: &str,
) -> String {
    if words.iter().any(|w| w.prefix && w.units.len() == at) {
        // Matches nothing.
        return "[^\\s\\S]".to_string();
    }
    let mut alternatives = Vec::new();
    if !words.iter().any(|w| w.units.len() == at) {
        alternatives.push(String::new());
    }
    let mut next: Vec<U> = words
        .iter()
        .filter_map(|w| w.units.get(at).copied())
        .collect();
    next.sort();
    next.dedup();
    alternatives.push(format!("{}{unit}*", other(&next)));
    for u in next {
        let following: Vec<&Word<U>> = words
            .iter()
            .filter(|w| w.units.get(at) == Some(&u))
            .copied()
            .collect();
        alternatives.push(format!(
            "{}{}",
            literal(u),
            trie(&following, at + 1, literal, other, unit)
        ));
    }
    format!("(?:{})", alternatives.join("|"))
}

/// `not_any_of` over the text of JSON strings (as the `json-finish` arguments string holds
/// them): the strings are compared as JSON writes them, a character or an escape at a time.
pub(crate) fn not_any_of_json(strings: &[&str]) -> String {
    const PLAIN: &str = r#"[^"\\\x00-\x1F"#;
    const ESCAPES: &str = "\"\\/bfnrt";
    let units: Vec<Vec<String>> = strings.iter().map(|s| json_units(s)).collect();
    let words: Vec<Word<&str>> = units
        .iter()
        .map(|u| Word::new(u.iter().map(String::as_str).collect()))
        .collect();
    let all: Vec<&Word<&str>> = words.iter().collect();
    let other = |taken: &[&str]| {
        let plain: String = taken
            .iter()
            .filter(|u| u.chars().count() == 1)
            .filter_map(|u| u.chars().next())
            .map(|c| format!("\\x{{{:x}}}", c as u32))
            .collect();
        let escapes: String = ESCAPES
            .chars()
            .filter(|e| !taken.contains(&format!("\\{e}").as_str()))
            .map(|c| regex::escape(&c.to_string()))
            .collect();
        let mut alts = vec![format!("{PLAIN}{plain}]")];
        if !escapes.is_empty() {
            alts.push(format!("\\\\[{escapes}]"));
        }
        alts.push(r"\\u[0-9a-fA-F]{4}".to_string());
        format!("(?:{})", alts.join("|"))
    };
    trie(&all, 0, &|u| regex::escape(u), &other, STRING_UNIT)
}

/// One character of a JSON string's text: a plain character or an escape.
pub(crate) const STRING_UNIT: &str = r#"(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})"#;

/// A string as JSON writes it, a character or an escape at a time.
fn json_units(s: &str) -> Vec<String> {
    let quoted = Value::String(s.to_string()).to_string();
    let inner = &quoted[1..quoted.len() - 1];
    let mut out = Vec::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(format!("\\u{hex}"));
                }
                Some(e) => out.push(format!("\\{e}")),
                None => out.push("\\".into()),
            }
        } else {
            out.push(c.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::grammar::Grammar;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_complement_of_a_few_strings_is_every_other_string() {
        let re = regex::Regex::new(&format!("^{}$", not_any_of(&["ab", "a", "x]\\"]))).unwrap();
        for no in ["ab", "a", "x]\\"] {
            assert!(!re.is_match(no), "{no}");
        }
        for yes in ["", "b", "abc", "aa", "ba", "x]", "x]\\\\", "é"] {
            assert!(re.is_match(yes), "{yes}");
        }
        // A string longer than the regex parser's nesting limit, as the grammar takes it.
        let long = "word ".repeat(60);
        let schema = json!({"type": "string", "maxLength": 400, "pattern": format!("^{}$", not_any_of(&[&long, "x"]))});
        let g = Grammar::JsonSchema(schema);
        let quoted = |s: &str| Value::String(s.to_string()).to_string();
        assert!(!g.accepts(&quoted(&long)).unwrap());
        assert!(g.accepts(&quoted(&long[1..])).unwrap());
        // Past its first sixty characters, a long string is told from a used one no more.
        assert!(!g.accepts(&quoted(&format!("{long}!"))).unwrap());
        assert!(g.accepts(&quoted(&format!("!{long}"))).unwrap());
        let re = regex::Regex::new(&format!("^{}$", not_any_of_json(&["a \"q\"", "b"]))).unwrap();
        assert!(!re.is_match(r#"a \"q\""#) && !re.is_match("b"));
        assert!(re.is_match(r#"a \"q\" "#) && re.is_match("bb") && re.is_match(r"a \n"));
    }

    /// Issue 22: a call identical to one already made is not in the next step's grammar,
    /// while the same query with other filters, and other queries, still are.
    #[test]
    fn a_call_already_made_is_out_of_the_grammar_and_its_neighbours_are_in() {
        let params = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": 300},
                "kinds": {"type": ["array", "null"], "items": {"enum": ["issue", "pr", "commit"]}, "maxItems": 3},
                "limit": {"type": ["integer", "null"], "minimum": 0}
            },
            "required": ["query"]
        });
        let made = [
            map(json!({"query": "wallet crash", "kinds": ["issue"]})),
            map(json!({"query": "fee"})),
        ];
        let refs: Vec<&Map<String, Value>> = made.iter().collect();
        let schema = excluding(&params, &refs).unwrap();
        let g = Grammar::JsonSchema(crate::llm::grammar::strict_json_schema(&schema));
        g.validate().unwrap();
        for no in [
            r#"{"query": "wallet crash", "kinds": ["issue"]}"#,
            r#"{"query": "fee"}"#,
        ] {
            assert!(!g.accepts(no).unwrap(), "{no}");
        }
        for yes in [
            r#"{"query": "wallet crash"}"#,
            r#"{"query": "wallet crash", "kinds": ["issue", "pr"]}"#,
            r#"{"query": "wallet crash", "kinds": ["issue"], "limit": 5}"#,
            r#"{"query": "fee", "limit": 5}"#,
            r#"{"query": "fees"}"#,
            r#"{"query": "wallet"}"#,
        ] {
            assert!(g.accepts(yes).unwrap(), "{yes}");
        }
        // A number as the key: every other number.
        let params = json!({"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]});
        let made = [map(json!({"number": 7})), map(json!({"number": 9}))];
        let refs: Vec<&Map<String, Value>> = made.iter().collect();
        let g = Grammar::JsonSchema(crate::llm::grammar::strict_json_schema(
            &excluding(&params, &refs).unwrap(),
        ));
        for (n, ok) in [
            (7, false),
            (9, false),
            (8, true),
            (6, true),
            (10, true),
            (-3, true),
        ] {
            assert_eq!(
                g.accepts(&format!("{{\"number\": {n}}}")).unwrap(),
                ok,
                "{n}"
            );
        }
        // A list as the key: lists of other lengths only.
        let params = json!({"type": "object", "properties": {"todos": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}, "required": ["todos"]});
        let made = [
            map(json!({"todos": ["a"]})),
            map(json!({"todos": ["a", "b", "c"]})),
        ];
        let refs: Vec<&Map<String, Value>> = made.iter().collect();
        let g = Grammar::JsonSchema(crate::llm::grammar::strict_json_schema(
            &excluding(&params, &refs).unwrap(),
        ));
        assert!(!g.accepts(r#"{"todos": ["a"]}"#).unwrap());
        assert!(!g.accepts(r#"{"todos": ["a", "b", "c"]}"#).unwrap());
        assert!(g.accepts(r#"{"todos": ["a", "b"]}"#).unwrap());
        assert!(g.accepts(r#"{"todos": []}"#).unwrap());
        // Only optional arguments, called without any: any call with one, not that one again.
        let params = json!({"type": "object", "properties": {"path": {"type": "string"}, "repo": {"type": "string"}}});
        let g = Grammar::JsonSchema(crate::llm::grammar::strict_json_schema(
            &excluding(&params, &[&Map::new()]).unwrap(),
        ));
        assert!(!g.accepts("{}").unwrap());
        assert!(g.accepts(r#"{"path": "src"}"#).unwrap());
        assert!(g.accepts(r#"{"repo": "r"}"#).unwrap());
        // No arguments: once called, never again.
        let empty = json!({"type": "object", "properties": {}});
        assert!(excluding(&empty, &[&Map::new()]).is_none());
    }
}
