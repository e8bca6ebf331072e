//! The llguidance side: JSON Schema and Lark grammars compiled into matchers, for a model's
//! tokenizer or, to check a grammar with no model loaded, a byte-level one; and the strict form
//! of a JSON Schema that Burrow enforces.

use serde_json::Value;

use super::{Grammar, GrammarError};

impl Grammar {
    /// Whether the grammar accepts `text` whole, checked byte by byte without a model (for
    /// tests of generated grammars).
    #[cfg(any(test, feature = "testing"))]
    pub fn accepts(&self, text: &str) -> Result<bool, GrammarError> {
        let factory = offline_factory()?;
        let mut matcher = self.compile(factory)?;
        let tokens = factory.tok_env().tokenize_bytes(text.as_bytes());
        // llguidance's errors, without naming its error type (anyhow, which only the CLI and
        // the tests depend on).
        fn fail(e: impl std::fmt::Display) -> GrammarError {
            GrammarError::Constraint {
                reason: e.to_string(),
            }
        }
        let consumed = matcher.try_consume_tokens(&tokens).map_err(fail)?;
        Ok(consumed == tokens.len() && matcher.is_accepting().map_err(fail)?)
    }

    /// The grammar as llama.cpp's llama-server takes it when built with llguidance (its
    /// `grammar` field, `%llguidance` first): the Lark grammar, or the strict JSON Schema
    /// under `%json`, compiled there by the same llguidance as here. None for GBNF.
    pub fn to_llguidance_text(&self) -> Option<String> {
        match self {
            Grammar::JsonSchema(schema) => Some(format!(
                "%llguidance {{}}\nstart: %json {}\n",
                strict_json_schema(schema)
            )),
            Grammar::Lark(text) => Some(format!("%llguidance {{}}\n{text}")),
            Grammar::Gbnf(_) => None,
        }
    }

    /// llguidance's form of a JSON Schema or Lark grammar.
    fn top_level(&self) -> Result<llguidance::api::TopLevelGrammar, GrammarError> {
        match self {
            Grammar::JsonSchema(schema) => Ok(llguidance::api::TopLevelGrammar::from_json_schema(
                strict_json_schema(schema),
            )),
            Grammar::Lark(text) => Ok(llguidance::api::TopLevelGrammar::from_lark(text.clone())),
            Grammar::Gbnf(_) => Err(GrammarError::Invalid {
                kind: "GBNF grammar",
                reason: "GBNF runs on llama.cpp's sampler, not llguidance".into(),
            }),
        }
    }

    /// Compiles a JSON Schema or Lark grammar into a matcher for `factory`'s tokenizer.
    pub(crate) fn compile(
        &self,
        factory: &llguidance::ParserFactory,
    ) -> Result<llguidance::Matcher, GrammarError> {
        let kind = self.kind();
        let parser =
            factory
                .create_parser(self.top_level()?)
                .map_err(|e| GrammarError::Invalid {
                    kind,
                    reason: e.to_string(),
                })?;
        let matcher = llguidance::Matcher::new(Ok(parser));
        match matcher.get_error() {
            Some(reason) => Err(GrammarError::Invalid { kind, reason }),
            None => Ok(matcher),
        }
    }
}

/// A JSON Schema as Burrow enforces it (see `Grammar::JsonSchema`): objects closed, compact
/// separators. Lark grammars embed schemas (`%json`) in this form too.
pub(crate) fn strict_json_schema(schema: &Value) -> Value {
    let mut schema = schema.clone();
    close_objects(&mut schema);
    if let Value::Object(o) = &mut schema {
        o.entry("x-guidance").or_insert_with(|| {
            serde_json::json!({
                "whitespace_flexible": false,
                "item_separator": ", ",
                "key_separator": ": "
            })
        });
    }
    schema
}

/// Sets `additionalProperties: false` on every object schema that lists properties and says
/// nothing about others, walking only the places where JSON Schema nests schemas.
fn close_objects(schema: &mut Value) {
    close_objects_but(schema, false)
}

/// As `close_objects`, leaving `schema` itself open where `open` (a branch of `allOf`, whose
/// object is the union of the branches' properties: closed, each branch forbade the others',
/// and a valid schema was refused as unsatisfiable). What it nests is closed.
fn close_objects_but(schema: &mut Value, open: bool) {
    let Value::Object(o) = schema else {
        return;
    };
    if !open && o.contains_key("properties") && !o.contains_key("additionalProperties") {
        o.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (key, sub) in o.iter_mut() {
        match key.as_str() {
            // Maps of schemas.
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                if let Value::Object(m) = sub {
                    m.values_mut().for_each(close_objects);
                }
            }
            // Lists of schemas.
            "anyOf" | "oneOf" | "prefixItems" => {
                if let Value::Array(a) = sub {
                    a.iter_mut().for_each(close_objects);
                }
            }
            "allOf" => {
                if let Value::Array(a) = sub {
                    a.iter_mut().for_each(|b| close_objects_but(b, true));
                }
            }
            // A schema, or (for old-style tuples) a list of them.
            "items" => match sub {
                Value::Array(a) => a.iter_mut().for_each(close_objects),
                other => close_objects(other),
            },
            "additionalProperties" | "not" | "if" | "then" | "else" | "contains" => {
                close_objects(sub)
            }
            _ => {}
        }
    }
}

/// An llguidance parser factory for a tokenizer. Quiet: llguidance would otherwise write its
/// warnings to stderr; they are reported through `Matcher::grammar_warnings` instead.
pub(crate) fn guidance_factory(
    env: &llguidance::toktrie::TokEnv,
) -> Result<llguidance::ParserFactory, String> {
    let mut factory = llguidance::ParserFactory::new_simple(env).map_err(|e| e.to_string())?;
    factory.quiet();
    Ok(factory)
}

/// A parser factory over a byte-level tokenizer: enough to compile, and so check, a grammar
/// when no model is loaded.
pub(super) fn offline_factory() -> Result<&'static llguidance::ParserFactory, GrammarError> {
    static FACTORY: std::sync::OnceLock<Result<llguidance::ParserFactory, String>> =
        std::sync::OnceLock::new();
    FACTORY
        .get_or_init(
            || guidance_factory(&llguidance::toktrie::ApproximateTokEnv::single_byte_env()),
        )
        .as_ref()
        .map_err(|e| GrammarError::Invalid {
            kind: "grammar",
            reason: format!("cannot start the grammar compiler: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_closed_unless_the_schema_opens_them() {
        let mut s = serde_json::json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"b": {"type": "string"}}},
                "open": {"type": "object", "properties": {}, "additionalProperties": true},
                "e": {"enum": [{"properties": 1}]},
                "enum": {"type": "object", "properties": {"x": {"type": "integer"}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {}}}
            }
        });
        close_objects(&mut s);
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["a"]["additionalProperties"], false);
        assert_eq!(s["properties"]["open"]["additionalProperties"], true);
        assert_eq!(
            s["properties"]["e"]["enum"][0],
            serde_json::json!({"properties": 1})
        );
        assert_eq!(s["properties"]["enum"]["additionalProperties"], false);
        assert_eq!(
            s["properties"]["list"]["items"]["additionalProperties"],
            false
        );
    }

    /// What llama-server is sent holds a reply to what the engine holds it to: the same
    /// compact form and the same pattern (read back as the Lark grammar it is).
    #[test]
    fn a_schema_sent_to_llama_server_allows_what_the_engine_allows() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}$"}, "n": {"type": "integer"}},
            "required": ["code", "n"]
        });
        let here = Grammar::JsonSchema(schema);
        let sent = here.to_llguidance_text().unwrap();
        let lark = sent.strip_prefix("%llguidance {}\n").unwrap();
        let there = Grammar::Lark(lark.to_string());
        for (text, ok) in [
            (r#"{"code": "AB", "n": 3}"#, true),
            (r#"{"code":"AB","n":3}"#, false),
            (r#"{"code": "ab", "n": 3}"#, false),
            (r#"{"code": "AB", "n": 3, "x": 1}"#, false),
        ] {
            assert_eq!(here.accepts(text).unwrap(), ok, "{text}");
            assert_eq!(there.accepts(text).unwrap(), ok, "{text}");
        }
        let lark = "start: \"a\"+\n";
        assert_eq!(
            Grammar::Lark(lark.into()).to_llguidance_text().unwrap(),
            format!("%llguidance {{}}\n{lark}")
        );
        assert_eq!(
            Grammar::Gbnf("root ::= \"a\"".into()).to_llguidance_text(),
            None
        );
    }
}
