//! Grammars for constrained decoding: GBNF text (llama.cpp's format), JSON Schema and Lark.
//!
//! GBNF runs on llama.cpp's grammar sampler. Its parser reports problems only in its log and, for
//! some inputs, by throwing across the FFI boundary; parsing here first turns every bad grammar
//! into a typed error with a line and column. JSON Schema and Lark run on llguidance, whose
//! compiler checks them. Either way a grammar can be checked with no model loaded (the agent
//! checks a tool's schema when the tool is registered). JSON Schema can also be converted to GBNF
//! here, for llama.cpp's sampler.
//!
//! The parts: `guidance` compiles JSON Schema and Lark with llguidance; `gbnf` checks GBNF as
//! llama.cpp's parser would; `schema` converts JSON Schema to GBNF.

mod gbnf;
mod guidance;
mod schema;

use serde_json::Value;

pub use gbnf::validate_gbnf;
use guidance::offline_factory;
pub(crate) use guidance::{guidance_factory, strict_json_schema};
pub use schema::{json_schema_to_compact_gbnf, json_schema_to_gbnf};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrammarError {
    #[error("invalid grammar at line {line}, column {column}: {reason}")]
    Syntax {
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("invalid grammar: rule {rule:?} is used but never defined")]
    UndefinedRule { rule: String },
    #[error("invalid grammar: no {root:?} rule (the start symbol)")]
    MissingRoot { root: String },
    #[error("invalid grammar: rule {rule:?} is left-recursive, which llama.cpp does not support")]
    LeftRecursion { rule: String },
    #[error("JSON schema at {path} cannot become a grammar: {reason}")]
    Schema { path: String, reason: String },
    #[error("invalid {kind}: {reason}")]
    Invalid { kind: &'static str, reason: String },
    #[error("grammar rejected by llama.cpp: {reason}")]
    Rejected { reason: String },
    #[error("constrained decoding failed: {reason}")]
    Constraint { reason: String },
}

/// A grammar a request can be constrained by.
#[derive(Debug, Clone, PartialEq)]
pub enum Grammar {
    /// GBNF text whose start symbol is `root` (llama.cpp's grammar format).
    Gbnf(String),
    /// A JSON Schema; the output is one JSON value that conforms to it, written compactly
    /// (`", "` and `": "` separators, no other whitespace: small models otherwise wander into
    /// endless indentation). An object admits only the properties it lists unless its
    /// `additionalProperties` says otherwise (as llama.cpp's converter reads schemas), so a
    /// model cannot pad its answer with invented keys.
    JsonSchema(Value),
    /// A grammar in llguidance's Lark dialect (start symbol `start`); it can embed JSON
    /// schemas (`%json { ... }`) and regular expressions.
    Lark(String),
}

impl Grammar {
    /// Checks the grammar without a model.
    pub fn validate(&self) -> Result<(), GrammarError> {
        match self {
            Grammar::Gbnf(text) => validate_gbnf(text, "root"),
            Grammar::JsonSchema(_) | Grammar::Lark(_) => {
                let factory = offline_factory()?;
                self.compile(factory).map(|_| ())
            }
        }
    }

    /// The grammar as GBNF, for llama.cpp's sampler: GBNF as is (validated), JSON Schema
    /// converted. Lark has no GBNF form.
    pub fn to_gbnf(&self) -> Result<String, GrammarError> {
        let gbnf = match self {
            Grammar::Gbnf(text) => text.clone(),
            Grammar::JsonSchema(schema) => json_schema_to_gbnf(schema)?,
            Grammar::Lark(_) => {
                return Err(GrammarError::Invalid {
                    kind: "grammar",
                    reason: "a Lark grammar cannot be converted to GBNF".into(),
                })
            }
        };
        validate_gbnf(&gbnf, "root")?;
        Ok(gbnf)
    }

    fn kind(&self) -> &'static str {
        match self {
            Grammar::Gbnf(_) => "GBNF grammar",
            Grammar::JsonSchema(_) => "JSON schema",
            Grammar::Lark(_) => "Lark grammar",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_and_lark_are_checked_without_a_model() {
        Grammar::JsonSchema(serde_json::json!({
            "type": "object",
            "properties": {"email": {"type": "string", "format": "email"}, "n": {"type": "integer", "minimum": 1}},
            "required": ["email"]
        }))
        .validate()
        .unwrap();
        Grammar::Lark("start: \"yes\" | \"no\"".into())
            .validate()
            .unwrap();
        let e = Grammar::JsonSchema(serde_json::json!({"type": "strnig"}))
            .validate()
            .unwrap_err();
        assert!(
            matches!(
                e,
                GrammarError::Invalid {
                    kind: "JSON schema",
                    ..
                }
            ),
            "{e}"
        );
        let e = Grammar::Lark("start: undefined_rule".into())
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("undefined_rule"), "{e}");
        let e = Grammar::Gbnf("root ::= (".into()).validate().unwrap_err();
        assert!(matches!(e, GrammarError::Syntax { .. }), "{e}");
    }

    /// A schema composed with `allOf` (OpenAPI's way to extend an object) takes the union of
    /// its branches' properties. Each branch was closed to properties it does not list, so each
    /// forbade the others' and the schema was refused as unsatisfiable (found in review); what
    /// the branches nest is still closed.
    #[test]
    fn an_all_of_of_objects_accepts_their_union() {
        let g = Grammar::JsonSchema(serde_json::json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "object",
                "properties": {"c": {"type": "integer"}}, "required": ["c"]}}, "required": ["b"]}]}));
        let r = g.validate();
        assert!(r.is_ok(), "a satisfiable schema is refused: {r:?}");
        assert_eq!(g.accepts("{\"a\": \"x\", \"b\": {\"c\": 1}}"), Ok(true));
        assert_eq!(
            g.accepts("{\"a\": \"x\", \"b\": {\"c\": 1, \"d\": 2}}"),
            Ok(false)
        );
    }
}
