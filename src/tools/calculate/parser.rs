//! The parser: recursive descent by precedence, evaluating as it reads, its depth bounded.

use super::eval::{arith, function, negate, pow, Value};
use super::lexer::{Kind, Token};
use super::{syntax, CalcError, MAX_DEPTH};

pub(super) struct Parser<'a> {
    pub(super) tokens: &'a [Token],
    pub(super) pos: usize,
    pub(super) depth: usize,
    /// The column just past the end, for errors there.
    pub(super) end: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn column(&self) -> usize {
        self.peek().map_or(self.end, |t| t.column)
    }

    fn peek_op(&self, ops: &[&'static str]) -> Option<(&'static str, usize)> {
        match self.peek() {
            Some(Token {
                kind: Kind::Op(o),
                column,
            }) if ops.contains(o) => Some((o, *column)),
            _ => None,
        }
    }

    fn enter(&mut self) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax(
                format!("nesting deeper than {MAX_DEPTH} levels"),
                self.column(),
            ));
        }
        Ok(())
    }

    /// expr := term (('+' | '-') term)*
    pub(super) fn expr(&mut self) -> Result<Value, CalcError> {
        self.enter()?;
        let mut v = self.term()?;
        while let Some((op, column)) = self.peek_op(&["+", "-"]) {
            self.pos += 1;
            let rhs = self.term()?;
            v = arith(op, v, rhs, column)?;
        }
        self.depth -= 1;
        Ok(v)
    }

    /// term := unary (('*' | '/' | '//' | '%') unary)*
    fn term(&mut self) -> Result<Value, CalcError> {
        let mut v = self.unary()?;
        while let Some((op, column)) = self.peek_op(&["*", "/", "//", "%"]) {
            self.pos += 1;
            let rhs = self.unary()?;
            v = arith(op, v, rhs, column)?;
        }
        Ok(v)
    }

    /// unary := ('-' | '+') unary | power. A sign binds looser than a power: -2^2 is -4.
    fn unary(&mut self) -> Result<Value, CalcError> {
        if let Some((op, _)) = self.peek_op(&["-", "+"]) {
            self.pos += 1;
            self.enter()?;
            let v = self.unary()?;
            self.depth -= 1;
            return Ok(if op == "-" { negate(v) } else { v });
        }
        self.power()
    }

    /// power := atom (('^' | '**') unary)?, right-associative: 2^3^2 is 2^9.
    fn power(&mut self) -> Result<Value, CalcError> {
        let base = self.atom()?;
        if let Some((_, column)) = self.peek_op(&["^"]) {
            self.pos += 1;
            self.enter()?;
            let exponent = self.unary()?;
            self.depth -= 1;
            return pow(base, exponent, column);
        }
        Ok(base)
    }

    /// atom := number | '(' expr ')' | name | name '(' expr (',' expr)* ')'
    fn atom(&mut self) -> Result<Value, CalcError> {
        let column = self.column();
        let Some(token) = self.peek().cloned() else {
            return Err(syntax("the expression ends too early", column));
        };
        self.pos += 1;
        match token.kind {
            Kind::Number(r) => Ok(Value::Exact(r)),
            Kind::Open => {
                let v = self.expr()?;
                self.expect_close(column)?;
                Ok(v)
            }
            Kind::Name(name) => {
                if !matches!(self.peek().map(|t| &t.kind), Some(Kind::Open)) {
                    return match name.as_str() {
                        "pi" => Ok(Value::Approx(std::f64::consts::PI)),
                        _ => Err(syntax(
                            format!("unknown name {name:?} (there are no variables)"),
                            column,
                        )),
                    };
                }
                let open = self.column();
                self.pos += 1;
                let mut args = vec![self.expr()?];
                while matches!(self.peek().map(|t| &t.kind), Some(Kind::Comma)) {
                    self.pos += 1;
                    args.push(self.expr()?);
                }
                self.expect_close(open)?;
                function(&name, args, column)
            }
            other => Err(syntax(format!("unexpected {other}"), column)),
        }
    }

    fn expect_close(&mut self, open: usize) -> Result<(), CalcError> {
        match self.peek() {
            Some(Token {
                kind: Kind::Close, ..
            }) => {
                self.pos += 1;
                Ok(())
            }
            Some(t) => Err(syntax(
                format!(
                    "expected \")\" to close the \"(\" at column {open}, found {}",
                    t.kind
                ),
                t.column,
            )),
            None => Err(syntax(
                format!("the \"(\" at column {open} is never closed"),
                self.end,
            )),
        }
    }
}
