//! GBNF checked the way llama.cpp checks it: its parser (llama-grammar.cpp) followed rule for
//! rule, then its post-parse checks, so a bad grammar becomes a typed error with a line and
//! column rather than a line in llama.cpp's log or an exception thrown across the FFI boundary.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::GrammarError;

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
}
