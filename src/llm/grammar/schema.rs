//! JSON Schema converted to GBNF, for llama.cpp's sampler. Only what it can enforce exactly is
//! converted; anything else is an error naming where in the schema it is.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::GrammarError;

/// Whitespace between JSON tokens: bounded, so a small model cannot stall in an endless run of
/// spaces (the same rule llama.cpp's converter emits).
const SPACE_RULE: &str = r#"| " " | "\n"{1,2} [ \t]{0,20}"#;

const PRIMITIVES: &[(&str, &str, &[&str])] = &[
    ("boolean", r#"("true" | "false") space"#, &[]),
    ("decimal-part", "[0-9]{1,16}", &[]),
    ("integral-part", "[0] | [1-9] [0-9]{0,15}", &[]),
    (
        "number",
        r#"("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)? space"#,
        &["integral-part", "decimal-part"],
    ),
    (
        "integer",
        r#"("-"? integral-part) space"#,
        &["integral-part"],
    ),
    (
        "value",
        "object | array | string | number | boolean | null",
        &["object", "array", "string", "number", "boolean", "null"],
    ),
    (
        "object",
        r#""{" space ( string ":" space value ("," space string ":" space value)* )? "}" space"#,
        &["string", "value"],
    ),
    (
        "array",
        r#""[" space ( value ("," space value)* )? "]" space"#,
        &["value"],
    ),
    (
        "char",
        r#"[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#,
        &[],
    ),
    ("string", r#""\"" char* "\"" space"#, &["char"]),
    ("null", r#""null" space"#, &[]),
];

/// Converts a JSON Schema to GBNF. Supported: `type` (one or a list), `properties`, `required`,
/// `additionalProperties`, `items`, `minItems`/`maxItems`, `minLength`/`maxLength`, `enum`,
/// `const`, `anyOf`/`oneOf`, `allOf` of objects, local `$ref`s (`#/$defs/…`,
/// `#/definitions/…`), `description`/`title` (ignored). Anything else is an error naming where it
/// is, so an unsupported schema is never silently loosened.
pub fn json_schema_to_gbnf(schema: &Value) -> Result<String, GrammarError> {
    convert(schema, SPACE_RULE)
}

/// As `json_schema_to_gbnf`, but the JSON is written as `Grammar::JsonSchema` writes it
/// in-process (llguidance): `", "` and `": "` between items and keys, no other whitespace.
/// What a remote llama-server gets, so that it can write what the engine here would.
pub fn json_schema_to_compact_gbnf(schema: &Value) -> Result<String, GrammarError> {
    let loose = convert(schema, r#""""#)?;
    Ok(loose
        .replace(r#""," space"#, r#"", ""#)
        .replace(r#"":" space"#, r#"": ""#))
}

fn convert(schema: &Value, space_rule: &str) -> Result<String, GrammarError> {
    let mut conv = Converter {
        root: schema,
        rules: BTreeMap::new(),
        refs_in_progress: BTreeSet::new(),
    };
    conv.rules.insert("space".into(), space_rule.into());
    let body = conv.visit(schema, "root", "#")?;
    conv.rules.insert("root".into(), body);
    let mut out = String::new();
    for (name, body) in &conv.rules {
        out.push_str(name);
        out.push_str(" ::= ");
        out.push_str(body);
        out.push('\n');
    }
    Ok(out)
}

struct Converter<'a> {
    root: &'a Value,
    rules: BTreeMap<String, String>,
    refs_in_progress: BTreeSet<String>,
}

fn gbnf_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn rule_name(hint: &str) -> String {
    let mut s: String = hint
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "r".into()
    } else {
        s
    }
}

/// Keywords that only annotate and never constrain.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "$schema",
    "$id",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

impl<'a> Converter<'a> {
    fn err(path: &str, reason: impl Into<String>) -> GrammarError {
        GrammarError::Schema {
            path: path.to_string(),
            reason: reason.into(),
        }
    }

    fn add_primitive(&mut self, name: &str) -> String {
        if !self.rules.contains_key(name) {
            if let Some((_, body, deps)) = PRIMITIVES.iter().find(|(n, _, _)| *n == name) {
                self.rules.insert(name.to_string(), (*body).to_string());
                for d in *deps {
                    self.add_primitive(d);
                }
            }
        }
        name.to_string()
    }

    /// Adds a named rule, choosing a fresh name if the hint is taken by a different body.
    fn add_rule(&mut self, hint: &str, body: String) -> String {
        let base = rule_name(hint);
        let mut name = base.clone();
        let mut i = 1;
        while let Some(existing) = self.rules.get(&name) {
            if *existing == body {
                return name;
            }
            i += 1;
            name = format!("{base}-{i}");
        }
        self.rules.insert(name.clone(), body);
        name
    }

    fn resolve_ref(&self, reference: &str, path: &str) -> Result<Value, GrammarError> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(Self::err(
                path,
                format!("only local $refs are supported, not {reference:?}"),
            ));
        };
        self.root
            .pointer(pointer)
            .cloned()
            .ok_or_else(|| Self::err(path, format!("$ref {reference:?} points at nothing")))
    }

    fn visit(&mut self, schema: &Value, hint: &str, path: &str) -> Result<String, GrammarError> {
        let obj = match schema {
            Value::Bool(true) => return Ok(self.add_primitive("value")),
            Value::Bool(false) => return Err(Self::err(path, "schema `false` matches nothing")),
            Value::Object(o) => o,
            _ => return Err(Self::err(path, "a schema must be an object or a boolean")),
        };
        for key in obj.keys() {
            let known = matches!(
                key.as_str(),
                "type"
                    | "properties"
                    | "required"
                    | "additionalProperties"
                    | "items"
                    | "minItems"
                    | "maxItems"
                    | "minLength"
                    | "maxLength"
                    | "enum"
                    | "const"
                    | "anyOf"
                    | "oneOf"
                    | "allOf"
                    | "$ref"
                    | "$defs"
                    | "definitions"
            ) || ANNOTATIONS.contains(&key.as_str());
            if !known {
                return Err(Self::err(path, format!("keyword {key:?} is not supported")));
            }
        }
        if let Some(r) = obj.get("$ref") {
            let reference = r
                .as_str()
                .ok_or_else(|| Self::err(path, "$ref must be a string"))?;
            let name = rule_name(&format!("ref-{}", reference.trim_start_matches("#/")));
            if self.rules.contains_key(&name) || self.refs_in_progress.contains(&name) {
                return Ok(name);
            }
            // Reserve the name first, so recursive schemas (trees) become recursive rules.
            self.refs_in_progress.insert(name.clone());
            let target = self.resolve_ref(reference, path)?;
            let body = self.visit(&target, &name, &format!("{path}/$ref"))?;
            self.refs_in_progress.remove(&name);
            self.rules.insert(name.clone(), body);
            return Ok(name);
        }
        if let Some(c) = obj.get("const") {
            return Ok(format!("{} space", gbnf_literal(&compact_json(c))));
        }
        if let Some(e) = obj.get("enum") {
            let values = e
                .as_array()
                .filter(|a| !a.is_empty())
                .ok_or_else(|| Self::err(path, "enum must be a non-empty array"))?;
            let alts: Vec<String> = values
                .iter()
                .map(|v| gbnf_literal(&compact_json(v)))
                .collect();
            return Ok(format!("({}) space", alts.join(" | ")));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(list) = obj.get(key) {
                let list = list
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .ok_or_else(|| Self::err(path, format!("{key} must be a non-empty array")))?;
                let mut alts = Vec::new();
                for (i, sub) in list.iter().enumerate() {
                    let body =
                        self.visit(sub, &format!("{hint}-{i}"), &format!("{path}/{key}/{i}"))?;
                    alts.push(self.add_rule(&format!("{hint}-{i}"), body));
                }
                return Ok(alts.join(" | "));
            }
        }
        if let Some(all) = obj.get("allOf") {
            let list = all
                .as_array()
                .ok_or_else(|| Self::err(path, "allOf must be an array"))?;
            let merged = self.merge_all_of(obj, list, path)?;
            return self.visit(&merged, hint, path);
        }
        let types: Vec<&str> = match obj.get("type") {
            None => {
                if obj.contains_key("properties") {
                    vec!["object"]
                } else if obj.contains_key("items") {
                    vec!["array"]
                } else {
                    return Ok(self.add_primitive("value"));
                }
            }
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts
                .iter()
                .map(|t| {
                    t.as_str()
                        .ok_or_else(|| Self::err(path, "type list must hold strings"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(Self::err(
                    path,
                    "type must be a string or a list of strings",
                ))
            }
        };
        if types.len() > 1 {
            let mut alts = Vec::new();
            for t in types {
                let mut single = obj.clone();
                single.insert("type".into(), Value::String(t.to_string()));
                let body = self.visit(&Value::Object(single), &format!("{hint}-{t}"), path)?;
                alts.push(self.add_rule(&format!("{hint}-{t}"), body));
            }
            return Ok(alts.join(" | "));
        }
        match types[0] {
            "object" => self.object(obj, hint, path),
            "array" => self.array(obj, hint, path),
            "string" => {
                let min = get_u64(obj, "minLength", path)?.unwrap_or(0);
                let max = get_u64(obj, "maxLength", path)?;
                let ch = self.add_primitive("char");
                if min == 0 && max.is_none() {
                    return Ok(self.add_primitive("string"));
                }
                let reps = match max {
                    Some(max) if max < min => {
                        return Err(Self::err(path, "maxLength is below minLength"))
                    }
                    Some(max) => format!("{{{min},{max}}}"),
                    None => format!("{{{min},}}"),
                };
                Ok(format!(r#""\"" {ch}{reps} "\"" space"#))
            }
            "number" => Ok(self.add_primitive("number")),
            "integer" => Ok(self.add_primitive("integer")),
            "boolean" => Ok(self.add_primitive("boolean")),
            "null" => Ok(self.add_primitive("null")),
            other => Err(Self::err(path, format!("unknown type {other:?}"))),
        }
    }

    fn object(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        hint: &str,
        path: &str,
    ) -> Result<String, GrammarError> {
        let props = match obj.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => return Err(Self::err(path, "properties must be an object")),
        };
        let required: BTreeSet<&str> = match obj.get("required") {
            None => BTreeSet::new(),
            Some(Value::Array(r)) => r
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| Self::err(path, "required must list strings"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(Self::err(path, "required must be an array")),
        };
        let additional = obj.get("additionalProperties");
        let Some(props) = props else {
            return match additional {
                Some(Value::Object(_)) => {
                    let value_rule = self.visit(
                        additional.unwrap_or(&Value::Bool(true)),
                        &format!("{hint}-value"),
                        &format!("{path}/additionalProperties"),
                    )?;
                    let value_rule = self.add_rule(&format!("{hint}-value"), value_rule);
                    let s = self.add_primitive("string");
                    Ok(format!(
                        r#""{{" space ( {s} ":" space {value_rule} ("," space {s} ":" space {value_rule})* )? "}}" space"#
                    ))
                }
                _ => Ok(self.add_primitive("object")),
            };
        };
        for r in &required {
            if !props.contains_key(*r) {
                return Err(Self::err(
                    path,
                    format!("required property {r:?} is not in properties"),
                ));
            }
        }
        if !matches!(additional, None | Some(Value::Bool(false))) {
            // Extra keys would need a "any key except these" rule; refusing is clearer than
            // silently dropping them.
            return Err(Self::err(
                path,
                "additionalProperties alongside properties is not supported (omit it or set it to false)",
            ));
        }
        // Properties appear in declaration order: required ones always, optional ones each
        // optionally, as llama.cpp's converter lays them out.
        let mut kv_rules: Vec<(String, bool)> = Vec::new();
        for (key, sub) in props {
            let sub_hint = format!("{hint}-{key}");
            let body = self.visit(sub, &sub_hint, &format!("{path}/properties/{key}"))?;
            let value_rule = self.add_rule(&sub_hint, body);
            let kv = format!(
                "{} space \":\" space {value_rule}",
                gbnf_literal(&compact_json(&Value::String(key.clone())))
            );
            let kv_rule = self.add_rule(&format!("{sub_hint}-kv"), kv);
            kv_rules.push((kv_rule, required.contains(key.as_str())));
        }
        let req: Vec<&String> = kv_rules
            .iter()
            .filter(|(_, r)| *r)
            .map(|(n, _)| n)
            .collect();
        let opt: Vec<&String> = kv_rules
            .iter()
            .filter(|(_, r)| !*r)
            .map(|(n, _)| n)
            .collect();
        let mut body = String::from(r#""{" space "#);
        body.push_str(
            &req.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(r#" "," space "#),
        );
        if !opt.is_empty() {
            // Optional keys in order, any subset: chain rules opt_i ::= kv_i ("," opt_{i+1})? | opt_{i+1}.
            let mut rest_names: Vec<String> = Vec::new();
            for i in (0..opt.len()).rev() {
                let body_i = match rest_names.last() {
                    None => opt[i].to_string(),
                    Some(next) => format!(r#"{} ("," space {next})? | {next}"#, opt[i]),
                };
                let name = self.add_rule(&format!("{hint}-rest-{i}"), body_i);
                rest_names.push(name);
            }
            let first = rest_names.last().cloned().unwrap_or_default();
            if req.is_empty() {
                body.push_str(&format!("({first})?"));
            } else {
                body.push_str(&format!(r#" ("," space {first})?"#));
            }
        }
        body.push_str(r#" "}" space"#);
        Ok(body)
    }

    fn array(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        hint: &str,
        path: &str,
    ) -> Result<String, GrammarError> {
        let item = match obj.get("items") {
            None => self.add_primitive("value"),
            Some(Value::Array(_)) => {
                return Err(Self::err(path, "tuple-form items are not supported"))
            }
            Some(items) => {
                let body = self.visit(items, &format!("{hint}-item"), &format!("{path}/items"))?;
                self.add_rule(&format!("{hint}-item"), body)
            }
        };
        let min = get_u64(obj, "minItems", path)?.unwrap_or(0);
        let max = get_u64(obj, "maxItems", path)?;
        if let Some(max) = max {
            if max < min {
                return Err(Self::err(path, "maxItems is below minItems"));
            }
            if max == 0 {
                return Ok(r#""[" space "]" space"#.into());
            }
        }
        let tail = |n: u64| format!(r#"("," space {item})"#) + &format!("{{{n},}}");
        let list = match (min, max) {
            (0, None) => format!(r#"({item} ("," space {item})*)?"#),
            (0, Some(max)) => format!(r#"({item} ("," space {item}){{0,{}}})?"#, max - 1),
            (min, None) => format!("{item} {}", tail(min - 1)),
            (min, Some(max)) => format!(r#"{item} ("," space {item}){{{},{}}}"#, min - 1, max - 1),
        };
        Ok(format!(r#""[" space {list} "]" space"#))
    }

    fn merge_all_of(
        &self,
        outer: &serde_json::Map<String, Value>,
        list: &[Value],
        path: &str,
    ) -> Result<Value, GrammarError> {
        let mut props = serde_json::Map::new();
        let mut required: Vec<Value> = Vec::new();
        let mut base = outer.clone();
        base.remove("allOf");
        for (i, sub) in list.iter().enumerate() {
            let sub = match sub.get("$ref").and_then(Value::as_str) {
                Some(r) => self.resolve_ref(r, &format!("{path}/allOf/{i}"))?,
                None => sub.clone(),
            };
            let o = sub.as_object().ok_or_else(|| {
                Self::err(
                    &format!("{path}/allOf/{i}"),
                    "allOf entries must be objects",
                )
            })?;
            if let Some(Value::Object(p)) = o.get("properties") {
                for (k, v) in p {
                    props.insert(k.clone(), v.clone());
                }
            } else if o.get("type").and_then(Value::as_str) != Some("object") {
                return Err(Self::err(
                    &format!("{path}/allOf/{i}"),
                    "allOf is supported for object schemas only",
                ));
            }
            if let Some(Value::Array(r)) = o.get("required") {
                required.extend(r.iter().cloned());
            }
        }
        if let Some(Value::Object(p)) = base.get("properties") {
            for (k, v) in p {
                props.insert(k.clone(), v.clone());
            }
        }
        if let Some(Value::Array(r)) = base.get("required") {
            required.extend(r.iter().cloned());
        }
        base.insert("type".into(), Value::String("object".into()));
        base.insert("properties".into(), Value::Object(props));
        base.insert("required".into(), Value::Array(required));
        Ok(Value::Object(base))
    }
}

fn get_u64(
    obj: &serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, GrammarError> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| Converter::err(path, format!("{key} must be a non-negative integer"))),
    }
}

/// JSON as the model must write it for a `const`/`enum` value: compact, like the grammar's
/// own separators expect.
fn compact_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::grammar::validate_gbnf;

    #[test]
    fn schema_becomes_a_valid_grammar() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "who"},
                "count": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "mode": {"enum": ["fast", "slow"]},
                "extra": {"type": ["number", "null"]}
            },
            "required": ["name", "mode"]
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        validate_gbnf(&g, "root").unwrap();
        assert!(g.contains(r#""\"fast\"""#), "{g}");
        assert!(g.contains(r#""\"name\"" space ":" space"#), "{g}");
    }

    #[test]
    fn recursive_refs_become_recursive_rules() {
        let schema = serde_json::json!({
            "$defs": {"node": {"type": "object", "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
            }, "required": ["value"]}},
            "$ref": "#/$defs/node"
        });
        let g = json_schema_to_gbnf(&schema).unwrap();
        validate_gbnf(&g, "root").unwrap();
    }

    #[test]
    fn unsupported_schemas_name_the_place() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"q": {"type": "string", "pattern": "^a+$"}}
        });
        let e = json_schema_to_gbnf(&schema).unwrap_err();
        assert_eq!(
            e,
            GrammarError::Schema {
                path: "#/properties/q".into(),
                reason: "keyword \"pattern\" is not supported".into()
            }
        );
        let e = json_schema_to_gbnf(&serde_json::json!({"$ref": "#/nowhere"})).unwrap_err();
        assert!(e.to_string().contains("points at nothing"), "{e}");
        let e = json_schema_to_gbnf(&serde_json::json!({"type": "tuple"})).unwrap_err();
        assert!(e.to_string().contains("unknown type"), "{e}");
    }
}
