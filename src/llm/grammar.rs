//! Grammars for constrained decoding: GBNF text (llama.cpp's format), JSON Schema and Lark.
//!
//! GBNF runs on llama.cpp's grammar sampler. Its parser reports problems only in its log and, for
//! some inputs, by throwing across the FFI boundary; parsing here first turns every bad grammar
//! into a typed error with a line and column. JSON Schema and Lark run on llguidance, whose
//! compiler checks them. Either way a grammar can be checked with no model loaded (the agent
//! checks a tool's schema when the tool is registered). JSON Schema can also be converted to GBNF
//! here, for llama.cpp's sampler.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

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

    /// Whether the grammar accepts `text` whole, checked byte by byte without a model (for
    /// tests of generated grammars).
    #[cfg(test)]
    pub(crate) fn accepts(&self, text: &str) -> Result<bool, GrammarError> {
        let factory = offline_factory()?;
        let mut matcher = self.compile(factory)?;
        let tokens = factory.tok_env().tokenize_bytes(text.as_bytes());
        let fail = |e: anyhow::Error| GrammarError::Constraint {
            reason: e.to_string(),
        };
        let consumed = matcher.try_consume_tokens(&tokens).map_err(fail)?;
        Ok(consumed == tokens.len() && matcher.is_accepting().map_err(fail)?)
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
    let Value::Object(o) = schema else {
        return;
    };
    if o.contains_key("properties") && !o.contains_key("additionalProperties") {
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
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(a) = sub {
                    a.iter_mut().for_each(close_objects);
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
fn offline_factory() -> Result<&'static llguidance::ParserFactory, GrammarError> {
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

// ---------------------------------------------------------------------------------------------
// GBNF parsing, following llama.cpp's llama-grammar.cpp parser rule for rule.

#[derive(Debug, Clone, PartialEq)]
enum Element {
    /// A terminal that matches at least one character.
    Terminal,
    /// A terminal that may be empty (an empty literal).
    Empty,
    RuleRef(String),
    Group(Vec<Vec<Element>>),
    /// An element repeated `min..=max` times (`max` None for unbounded).
    Repeat(Box<Element>, u32),
}

type Rules = BTreeMap<String, Vec<Vec<Element>>>;

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    rules: Rules,
    used: BTreeSet<String>,
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

impl<'a> Parser<'a> {
    fn err(&self, reason: impl Into<String>) -> GrammarError {
        let before = &self.src[..self.pos.min(self.src.len())];
        let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        GrammarError::Syntax {
            line,
            column,
            reason: reason.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn skip_space(&mut self, newline_ok: bool) {
        while let Some(c) = self.peek() {
            match c {
                b'#' => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                b' ' | b'\t' => self.pos += 1,
                b'\r' | b'\n' if newline_ok => self.pos += 1,
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Result<String, GrammarError> {
        let start = self.pos;
        while self.peek().is_some_and(is_word_char) {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.err("expected a rule name"));
        }
        Ok(String::from_utf8_lossy(&self.src[start..self.pos]).into_owned())
    }

    fn int(&mut self) -> Result<u32, GrammarError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.err("expected a number"));
        }
        std::str::from_utf8(&self.src[start..self.pos])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| self.err("number out of range"))
    }

    /// One (possibly escaped) character inside a literal or class; returns its code point.
    fn char_in(&mut self, what: &str) -> Result<u32, GrammarError> {
        let Some(c) = self.peek() else {
            return Err(self.err(format!("unexpected end of input in {what}")));
        };
        if c == b'\\' {
            self.pos += 1;
            let Some(e) = self.peek() else {
                return Err(self.err(format!("unexpected end of input in {what}")));
            };
            self.pos += 1;
            let hex = |p: &mut Self, n: usize| -> Result<u32, GrammarError> {
                let start = p.pos;
                let end = start + n;
                if end > p.src.len() {
                    return Err(p.err("expecting hex digits"));
                }
                let s = std::str::from_utf8(&p.src[start..end]).map_err(|_| p.err("bad hex"))?;
                let v = u32::from_str_radix(s, 16).map_err(|_| p.err("expecting hex digits"))?;
                p.pos = end;
                Ok(v)
            };
            return match e {
                b'x' => hex(self, 2),
                b'u' => hex(self, 4),
                b'U' => hex(self, 8),
                b't' => Ok(9),
                b'r' => Ok(13),
                b'n' => Ok(10),
                b'\\' | b'"' | b'[' | b']' => Ok(u32::from(e)),
                other => Err(self.err(format!("unknown escape \\{}", other as char))),
            };
        }
        // Decode one UTF-8 character.
        let rest = std::str::from_utf8(&self.src[self.pos..]).unwrap_or("");
        match rest.chars().next() {
            Some(ch) => {
                self.pos += ch.len_utf8();
                Ok(ch as u32)
            }
            None => Err(self.err("invalid UTF-8")),
        }
    }

    fn alternates(&mut self, nested: bool) -> Result<Vec<Vec<Element>>, GrammarError> {
        let mut alts = vec![self.sequence(nested)?];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            self.skip_space(true);
            alts.push(self.sequence(nested)?);
        }
        Ok(alts)
    }

    fn sequence(&mut self, nested: bool) -> Result<Vec<Element>, GrammarError> {
        let mut seq: Vec<Element> = Vec::new();
        while let Some(c) = self.peek() {
            let elem = match c {
                b'"' => {
                    self.pos += 1;
                    let mut n = 0;
                    loop {
                        match self.peek() {
                            None => {
                                return Err(self.err("unexpected end of input in string literal"))
                            }
                            Some(b'"') => break,
                            _ => {
                                self.char_in("string literal")?;
                                n += 1;
                            }
                        }
                    }
                    self.pos += 1;
                    if n == 0 {
                        Element::Empty
                    } else {
                        Element::Terminal
                    }
                }
                b'[' => {
                    self.pos += 1;
                    if self.peek() == Some(b'^') {
                        self.pos += 1;
                    }
                    loop {
                        match self.peek() {
                            None => {
                                return Err(self.err("unexpected end of input in character class"))
                            }
                            Some(b']') => break,
                            _ => {
                                let lo = self.char_in("character class")?;
                                if self.peek() == Some(b'-')
                                    && self.src.get(self.pos + 1) != Some(&b']')
                                {
                                    self.pos += 1;
                                    let hi = self.char_in("character range")?;
                                    if hi < lo {
                                        return Err(self.err("character range is reversed"));
                                    }
                                }
                            }
                        }
                    }
                    self.pos += 1;
                    Element::Terminal
                }
                b'.' => {
                    self.pos += 1;
                    Element::Terminal
                }
                b'<' => {
                    // A token reference: <[123]> or <|token|>.
                    let end = self.src[self.pos..]
                        .iter()
                        .position(|&c| c == b'>')
                        .ok_or_else(|| self.err("unterminated token reference"))?;
                    self.pos += end + 1;
                    Element::Terminal
                }
                b'!' if self.src.get(self.pos + 1) == Some(&b'<') => {
                    self.pos += 1;
                    continue;
                }
                b'(' => {
                    self.pos += 1;
                    self.skip_space(true);
                    let alts = self.alternates(true)?;
                    if self.peek() != Some(b')') {
                        return Err(self.err("expecting ')'"));
                    }
                    self.pos += 1;
                    Element::Group(alts)
                }
                c if is_word_char(c) => {
                    let name = self.name()?;
                    self.used.insert(name.clone());
                    Element::RuleRef(name)
                }
                b'*' | b'+' | b'?' | b'{' => {
                    let Some(last) = seq.pop() else {
                        return Err(
                            self.err(format!("expecting preceding item to '{}'", c as char))
                        );
                    };
                    self.pos += 1;
                    let min = match c {
                        b'*' | b'?' => 0,
                        b'+' => 1,
                        _ => {
                            self.skip_space(nested);
                            let min = self.int()?;
                            self.skip_space(nested);
                            let mut max = Some(min);
                            if self.peek() == Some(b',') {
                                self.pos += 1;
                                self.skip_space(nested);
                                max = if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                                    Some(self.int()?)
                                } else {
                                    None
                                };
                                self.skip_space(nested);
                            }
                            if self.peek() != Some(b'}') {
                                return Err(self.err("expecting '}'"));
                            }
                            self.pos += 1;
                            if let Some(max) = max {
                                if max < min {
                                    return Err(self.err(format!(
                                        "repetition {{{min},{max}}} has max below min"
                                    )));
                                }
                            }
                            min
                        }
                    };
                    self.skip_space(nested);
                    seq.push(Element::Repeat(Box::new(last), min));
                    continue;
                }
                _ => break,
            };
            self.skip_space(nested);
            seq.push(elem);
        }
        Ok(seq)
    }

    fn parse(mut self) -> Result<(Rules, BTreeSet<String>), GrammarError> {
        self.skip_space(true);
        while self.pos < self.src.len() {
            let name = self.name()?;
            self.skip_space(false);
            if !self.src[self.pos..].starts_with(b"::=") {
                return Err(self.err(format!("expecting ::= after rule name {name:?}")));
            }
            self.pos += 3;
            self.skip_space(true);
            let alts = self.alternates(false)?;
            match self.peek() {
                None => {}
                Some(b'\r') | Some(b'\n') => {}
                Some(c) => {
                    return Err(self.err(format!("unexpected '{}'", c as char)));
                }
            }
            self.skip_space(true);
            // llama.cpp keeps the last definition of a name; so do we.
            self.rules.insert(name, alts);
        }
        Ok((self.rules, self.used))
    }
}

/// Checks GBNF text the way llama.cpp's parser would, plus its post-parse checks: every rule
/// used is defined, the start rule exists, and no rule is left-recursive.
pub fn validate_gbnf(text: &str, root: &str) -> Result<(), GrammarError> {
    let parser = Parser {
        src: text.as_bytes(),
        pos: 0,
        rules: BTreeMap::new(),
        used: BTreeSet::new(),
    };
    let (rules, used) = parser.parse()?;
    if let Some(rule) = used.iter().find(|r| !rules.contains_key(*r)) {
        return Err(GrammarError::UndefinedRule { rule: rule.clone() });
    }
    if !rules.contains_key(root) {
        return Err(GrammarError::MissingRoot {
            root: root.to_string(),
        });
    }
    check_left_recursion(&rules)
}

fn check_left_recursion(rules: &Rules) -> Result<(), GrammarError> {
    // Nullable rules first (fixed point), then the "can start with" graph.
    let mut nullable: BTreeSet<&str> = BTreeSet::new();
    loop {
        let before = nullable.len();
        for (name, alts) in rules {
            if alts
                .iter()
                .any(|seq| seq.iter().all(|e| is_nullable(e, &nullable)))
            {
                nullable.insert(name);
            }
        }
        if nullable.len() == before {
            break;
        }
    }
    let mut starts: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for (name, alts) in rules {
        let set = starts.entry(name).or_default();
        for seq in alts {
            leading_refs(seq, &nullable, set);
        }
    }
    // A rule is left-recursive if it can reach itself through leading positions.
    for name in rules.keys() {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<&str> = starts
            .get(name.as_str())
            .into_iter()
            .flatten()
            .copied()
            .collect();
        while let Some(r) = stack.pop() {
            if r == name {
                return Err(GrammarError::LeftRecursion { rule: name.clone() });
            }
            if seen.insert(r) {
                stack.extend(starts.get(r).into_iter().flatten().copied());
            }
        }
    }
    Ok(())
}

fn is_nullable(e: &Element, nullable: &BTreeSet<&str>) -> bool {
    match e {
        Element::Terminal => false,
        Element::Empty => true,
        Element::RuleRef(r) => nullable.contains(r.as_str()),
        Element::Group(alts) => alts
            .iter()
            .any(|s| s.iter().all(|e| is_nullable(e, nullable))),
        Element::Repeat(inner, min) => *min == 0 || is_nullable(inner, nullable),
    }
}

fn leading_refs<'a>(seq: &'a [Element], nullable: &BTreeSet<&str>, out: &mut BTreeSet<&'a str>) {
    for e in seq {
        match e {
            Element::RuleRef(r) => {
                out.insert(r);
            }
            Element::Group(alts) => {
                for s in alts {
                    leading_refs(s, nullable, out);
                }
            }
            Element::Repeat(inner, _) => leading_refs(std::slice::from_ref(inner), nullable, out),
            Element::Terminal | Element::Empty => {}
        }
        if !is_nullable(e, nullable) {
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON Schema to GBNF.

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
    let mut conv = Converter {
        root: schema,
        rules: BTreeMap::new(),
        refs_in_progress: BTreeSet::new(),
    };
    conv.rules.insert("space".into(), SPACE_RULE.into());
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

    #[test]
    fn accepts_llama_cpp_example_grammars() {
        let json = r#"
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"#;
        validate_gbnf(json, "root").unwrap();
        validate_gbnf("root ::= [a-z]+ \".\"", "root").unwrap();
    }

    #[test]
    fn reports_errors_with_position() {
        assert!(matches!(
            validate_gbnf("root ::= \"abc", "root"),
            Err(GrammarError::Syntax { line: 1, .. })
        ));
        let e = validate_gbnf("root ::= a\nb ::= (\"x\"", "root").unwrap_err();
        assert!(matches!(e, GrammarError::Syntax { line: 2, .. }), "{e}");
        assert_eq!(
            validate_gbnf("root ::= missing", "root"),
            Err(GrammarError::UndefinedRule {
                rule: "missing".into()
            })
        );
        assert_eq!(
            validate_gbnf("start ::= \"x\"", "root"),
            Err(GrammarError::MissingRoot {
                root: "root".into()
            })
        );
        assert!(matches!(
            validate_gbnf("root ::= root \"x\" | \"y\"", "root"),
            Err(GrammarError::LeftRecursion { .. })
        ));
        // Left recursion through a nullable prefix is still left recursion.
        assert!(matches!(
            validate_gbnf("root ::= e\ne ::= \"\"? e \"x\" | \"y\"", "root"),
            Err(GrammarError::LeftRecursion { .. })
        ));
        assert!(validate_gbnf("root ::= * \"x\"", "root").is_err());
        assert!(validate_gbnf("root ::= [z-a]", "root").is_err());
        assert!(validate_gbnf("root ::= \"x\"{3,1}", "root").is_err());
        assert!(validate_gbnf("root ::= \"\\q\"", "root").is_err());
    }

    #[test]
    fn right_recursion_is_fine() {
        validate_gbnf("root ::= \"x\" root | \"y\"", "root").unwrap();
    }

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
