//! `calculate`: exact arithmetic for the agent. Other agents send sums to a code interpreter;
//! Burrow runs no code. This is an expression evaluator and nothing more: numbers, operators,
//! parentheses and a few named functions, no variables, no file system, no network, and limits
//! on the size of the input and of every intermediate number, so no expression can exhaust the
//! machine.
//!
//! Arithmetic is on exact rationals (arbitrary size): `0.1 + 0.2` is `0.3`, and `1/3 * 3` is
//! `1`. Only square roots that are not exact, fractional powers and `pi` leave the exact
//! numbers, and the result then says it is approximate.

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Tool, ToolError, ToolOutput};

/// Evaluate an arithmetic expression exactly. Use it for every calculation (sums, ratios,
/// percentages, differences between dates in days) instead of computing in your head.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CalculateInput {
    /// The expression. Numbers like 42, 2.5, 1e6 or 1_000; operators + - * / (exact division),
    /// // (division rounded down), % (remainder), ^ or ** (power); parentheses; functions abs,
    /// min, max, round (round(x) or round(x, decimals)), floor, ceil, sqrt; the constant pi.
    /// Example: (1250 - 980) / 980 * 100
    pub expression: String,
}

pub struct Calculate;

/// The result as data, for the UI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calculation {
    pub expression: String,
    /// The value: an integer, a terminating decimal, or a fraction.
    pub result: String,
    /// A decimal approximation when `result` is a fraction or the value is not exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximately: Option<String>,
    pub exact: bool,
}

impl Tool for Calculate {
    const NAME: &'static str = "calculate";
    type Input = CalculateInput;

    fn run(&self, input: CalculateInput) -> Result<ToolOutput, ToolError> {
        let c =
            calculate(&input.expression).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let text = match (&c.approximately, c.exact) {
            (Some(approx), true) => format!("{} = {} ≈ {approx}", c.expression, c.result),
            (_, false) => format!("{} ≈ {}", c.expression, c.result),
            (None, true) => format!("{} = {}", c.expression, c.result),
        };
        Ok(ToolOutput::new(text, c))
    }
}

/// What is wrong with an expression, and where (a 1-based column).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalcError {
    #[error("the expression is empty")]
    Empty,
    #[error("the expression is {len} characters long; at most {MAX_LEN} are accepted")]
    TooLong { len: usize },
    #[error("{what} at column {column}")]
    Syntax { what: String, column: usize },
    #[error("division by zero at column {column}")]
    DivisionByZero { column: usize },
    #[error("{what} at column {column}")]
    Domain { what: String, column: usize },
    #[error("the number at column {column} would have more than {MAX_DIGITS} digits")]
    TooLarge { column: usize },
}

/// Characters accepted in an expression.
const MAX_LEN: usize = 2_000;
/// Nesting depth of parentheses and unary signs (the parser recurses once per level).
const MAX_DEPTH: usize = 64;
/// Digits of any numerator or denominator along the way; about 40,000 bits.
const MAX_DIGITS: usize = 12_000;
const MAX_BITS: u64 = 40_000;

/// Evaluates `expression`.
pub fn calculate(expression: &str) -> Result<Calculation, CalcError> {
    let expression = expression.trim();
    let len = expression.chars().count();
    if len > MAX_LEN {
        return Err(CalcError::TooLong { len });
    }
    let tokens = tokenize(expression)?;
    if tokens.is_empty() {
        return Err(CalcError::Empty);
    }
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        depth: 0,
        end: len + 1,
    };
    let value = p.expr()?;
    if let Some(t) = tokens.get(p.pos) {
        return Err(syntax(format!("unexpected {}", t.kind), t.column));
    }
    Ok(match value {
        Value::Exact(r) => {
            let (result, approximately) = show_exact(&r);
            Calculation {
                expression: expression.to_string(),
                result,
                approximately,
                exact: true,
            }
        }
        Value::Approx(f) => Calculation {
            expression: expression.to_string(),
            result: show_float(f),
            approximately: None,
            exact: false,
        },
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Exact(BigRational),
    Approx(f64),
}

impl Value {
    fn to_f64(&self) -> f64 {
        match self {
            Value::Exact(r) => ratio_to_f64(r),
            Value::Approx(f) => *f,
        }
    }
}

fn ratio_to_f64(r: &BigRational) -> f64 {
    // Both parts may be beyond f64 while their quotient is not: scale them down together.
    let (n, d) = (r.numer(), r.denom());
    let shift = n.bits().max(d.bits()).saturating_sub(1000);
    let (n, d) = (n >> shift, d >> shift);
    match (n.to_f64(), d.to_f64()) {
        (Some(n), Some(d)) if d != 0.0 => n / d,
        _ => f64::NAN,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Number(BigRational),
    Name(String),
    Op(&'static str),
    Open,
    Close,
    Comma,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Number(_) => write!(f, "number"),
            Kind::Name(n) => write!(f, "name {n:?}"),
            Kind::Op(o) => write!(f, "{o:?}"),
            Kind::Open => write!(f, "\"(\""),
            Kind::Close => write!(f, "\")\""),
            Kind::Comma => write!(f, "\",\""),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    column: usize,
}

fn syntax(what: impl Into<String>, column: usize) -> CalcError {
    CalcError::Syntax {
        what: what.into(),
        column,
    }
}

fn tokenize(s: &str) -> Result<Vec<Token>, CalcError> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        let simple = |kind| Token { kind, column };
        match c {
            _ if c.is_whitespace() => i += 1,
            '0'..='9' | '.' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_digit() || matches!(chars[i], '.' | '_'))
                {
                    i += 1;
                }
                // An exponent: e or E, an optional sign, digits.
                if i < chars.len() && matches!(chars[i], 'e' | 'E') {
                    let mut j = i + 1;
                    if j < chars.len() && matches!(chars[j], '+' | '-') {
                        j += 1;
                    }
                    if j < chars.len() && chars[j].is_ascii_digit() {
                        i = j;
                        while i < chars.len() && chars[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                let text: String = chars[start..i].iter().collect();
                out.push(simple(Kind::Number(number(&text, column)?)));
            }
            'a'..='z' | 'A'..='Z' => {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                out.push(simple(Kind::Name(name.to_ascii_lowercase())));
            }
            '(' => {
                out.push(simple(Kind::Open));
                i += 1;
            }
            ')' => {
                out.push(simple(Kind::Close));
                i += 1;
            }
            ',' => {
                out.push(simple(Kind::Comma));
                i += 1;
            }
            _ => {
                let next = chars.get(i + 1).copied();
                let (op, width) = match (c, next) {
                    ('*', Some('*')) => ("^", 2),
                    ('/', Some('/')) => ("//", 2),
                    ('+', _) => ("+", 1),
                    // The minus sign and the dash models and pasted text use for minus.
                    ('-' | '−' | '–', _) => ("-", 1),
                    ('*' | '×' | '·', _) => ("*", 1),
                    ('/' | '÷', _) => ("/", 1),
                    ('%', _) => ("%", 1),
                    ('^', _) => ("^", 1),
                    _ => return Err(syntax(format!("unexpected character {c:?}"), column)),
                };
                out.push(simple(Kind::Op(op)));
                i += width;
            }
        }
    }
    Ok(out)
}

/// A decimal literal as an exact rational: `2.5` is 5/2, `1e-3` is 1/1000.
fn number(text: &str, column: usize) -> Result<BigRational, CalcError> {
    let bad = || syntax(format!("{text:?} is not a number"), column);
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, ""),
    };
    if mantissa.starts_with('_') || mantissa.ends_with('_') || mantissa.contains("__") {
        return Err(bad());
    }
    let mantissa: String = mantissa.chars().filter(|&c| c != '_').collect();
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((w, f)) => (w, f),
        None => (mantissa.as_str(), ""),
    };
    if (whole.is_empty() && fraction.is_empty())
        || fraction.contains('.')
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let exponent: i64 = if exponent.is_empty() {
        0
    } else {
        exponent.parse().map_err(|_| bad())?
    };
    let scale = exponent - fraction.len() as i64;
    let digits = whole.len() as i64 + exponent;
    if whole.len() + fraction.len() > MAX_DIGITS
        || digits.abs() > MAX_DIGITS as i64
        || scale.abs() > MAX_DIGITS as i64
    {
        return Err(CalcError::TooLarge { column });
    }
    let n: BigInt = format!("0{whole}{fraction}").parse().map_err(|_| bad())?;
    let ten = BigInt::from(10);
    Ok(if scale >= 0 {
        BigRational::from_integer(n * num_traits::pow(ten, scale as usize))
    } else {
        BigRational::new(n, num_traits::pow(ten, (-scale) as usize))
    })
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    depth: usize,
    /// The column just past the end, for errors there.
    end: usize,
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
    fn expr(&mut self) -> Result<Value, CalcError> {
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

fn checked(r: BigRational, column: usize) -> Result<Value, CalcError> {
    if r.numer().bits() > MAX_BITS || r.denom().bits() > MAX_BITS {
        return Err(CalcError::TooLarge { column });
    }
    Ok(Value::Exact(r))
}

fn approx(f: f64, what: &str, column: usize) -> Result<Value, CalcError> {
    if f.is_finite() {
        Ok(Value::Approx(f))
    } else {
        Err(CalcError::Domain {
            what: format!("{what} is not a finite real number"),
            column,
        })
    }
}

fn negate(v: Value) -> Value {
    match v {
        Value::Exact(r) => Value::Exact(-r),
        Value::Approx(f) => Value::Approx(-f),
    }
}

fn arith(op: &str, a: Value, b: Value, column: usize) -> Result<Value, CalcError> {
    let is_zero = match &b {
        Value::Exact(r) => r.is_zero(),
        Value::Approx(f) => *f == 0.0,
    };
    if matches!(op, "/" | "//" | "%") && is_zero {
        return Err(CalcError::DivisionByZero { column });
    }
    match (a, b) {
        (Value::Exact(a), Value::Exact(b)) => checked(
            match op {
                "+" => a + b,
                "-" => a - b,
                "*" => a * b,
                "/" => a / b,
                "//" => (a / b).floor(),
                // The sign of the divisor, as Python has it: -7 % 3 is 2.
                _ => {
                    let q = (&a / &b).floor();
                    a - b * q
                }
            },
            column,
        ),
        (a, b) => {
            let (a, b) = (a.to_f64(), b.to_f64());
            let f = match op {
                "+" => a + b,
                "-" => a - b,
                "*" => a * b,
                "/" => a / b,
                "//" => (a / b).floor(),
                _ => a - b * (a / b).floor(),
            };
            approx(f, "the result", column)
        }
    }
}

fn pow(base: Value, exponent: Value, column: usize) -> Result<Value, CalcError> {
    if let (Value::Exact(b), Value::Exact(e)) = (&base, &exponent) {
        if e.is_integer() {
            if b.is_zero() && e.is_negative() {
                return Err(CalcError::DivisionByZero { column });
            }
            // 0, 1 and -1 stay small whatever the exponent.
            if b.is_zero() || b.abs().is_one() {
                let odd = e.to_integer().is_odd();
                return Ok(Value::Exact(if b.is_negative() && !odd {
                    -b.clone()
                } else {
                    b.clone()
                }));
            }
            let bits = b.numer().bits().max(b.denom().bits());
            let e_small = e.to_integer().to_i32().filter(|e| {
                u64::from(e.unsigned_abs()).saturating_mul(bits.saturating_sub(1).max(1))
                    <= MAX_BITS
            });
            let Some(e) = e_small else {
                return Err(CalcError::TooLarge { column });
            };
            return checked(b.pow(e), column);
        }
    }
    let (b, e) = (base.to_f64(), exponent.to_f64());
    approx(b.powf(e), "the power", column)
}

fn function(name: &str, mut args: Vec<Value>, column: usize) -> Result<Value, CalcError> {
    let arity = |n: std::ops::RangeInclusive<usize>, args: &[Value]| {
        if n.contains(&args.len()) {
            Ok(())
        } else {
            let want = if n.start() == n.end() {
                format!("{}", n.start())
            } else {
                format!("{} to {}", n.start(), n.end())
            };
            Err(syntax(
                format!("{name}() takes {want} arguments, got {}", args.len()),
                column,
            ))
        }
    };
    match name {
        "abs" | "floor" | "ceil" | "sqrt" => {
            arity(1..=1, &args)?;
            let x = args.remove(0);
            match (name, x) {
                ("abs", Value::Exact(r)) => Ok(Value::Exact(r.abs())),
                ("abs", Value::Approx(f)) => Ok(Value::Approx(f.abs())),
                ("floor", Value::Exact(r)) => Ok(Value::Exact(r.floor())),
                ("floor", Value::Approx(f)) => Ok(Value::Approx(f.floor())),
                ("ceil", Value::Exact(r)) => Ok(Value::Exact(r.ceil())),
                ("ceil", Value::Approx(f)) => Ok(Value::Approx(f.ceil())),
                (_, x) => sqrt(x, column),
            }
        }
        "min" | "max" => {
            // The parser gives every call at least one argument.
            if args.is_empty() {
                return Err(syntax(format!("{name}() needs at least one argument"), column));
            }
            let mut best = args.remove(0);
            for x in args {
                let less = match (&x, &best) {
                    (Value::Exact(a), Value::Exact(b)) => a < b,
                    (a, b) => a.to_f64() < b.to_f64(),
                };
                if less == (name == "min") {
                    best = x;
                }
            }
            Ok(best)
        }
        "round" => {
            arity(1..=2, &args)?;
            let digits = match args.get(1) {
                None => 0,
                Some(Value::Exact(d)) if d.is_integer() => d
                    .to_integer()
                    .to_i64()
                    .filter(|d| d.abs() <= MAX_DIGITS as i64)
                    .ok_or_else(|| syntax("round(): too many decimals", column))?,
                Some(_) => return Err(syntax("round(): the decimals must be a whole number", column)),
            };
            match args.remove(0) {
                Value::Exact(r) => {
                    let scale = BigRational::from_integer(num_traits::pow(
                        BigInt::from(10),
                        digits.unsigned_abs() as usize,
                    ));
                    // Halves away from zero, as people round by hand.
                    let scaled = if digits >= 0 { r * &scale } else { r / &scale };
                    let rounded = scaled.round();
                    checked(
                        if digits >= 0 { rounded / scale } else { rounded * scale },
                        column,
                    )
                }
                Value::Approx(f) => {
                    let s = 10f64.powi(digits as i32);
                    approx((f * s).round() / s, "the rounded value", column)
                }
            }
        }
        _ => Err(syntax(
            format!(
                "unknown function {name:?}; the functions are abs, min, max, round, floor, ceil, sqrt"
            ),
            column,
        )),
    }
}

fn sqrt(x: Value, column: usize) -> Result<Value, CalcError> {
    if let Value::Exact(r) = &x {
        if r.is_negative() {
            return Err(CalcError::Domain {
                what: "the square root of a negative number".into(),
                column,
            });
        }
        let (n, d) = (r.numer().sqrt(), r.denom().sqrt());
        if &(&n * &n) == r.numer() && &(&d * &d) == r.denom() {
            return Ok(Value::Exact(BigRational::new(n, d)));
        }
    }
    let f = x.to_f64();
    if f < 0.0 {
        return Err(CalcError::Domain {
            what: "the square root of a negative number".into(),
            column,
        });
    }
    approx(f.sqrt(), "the square root", column)
}

/// An exact value as an integer, a terminating decimal, or a fraction with a decimal beside it.
fn show_exact(r: &BigRational) -> (String, Option<String>) {
    if r.is_integer() {
        return (r.numer().to_string(), None);
    }
    // A fraction terminates in decimal when its denominator has no prime factor but 2 and 5.
    let mut d = r.denom().clone();
    let (two, five) = (BigInt::from(2), BigInt::from(5));
    let mut places = 0usize;
    let mut twos = 0usize;
    let mut fives = 0usize;
    while d.is_even() {
        d /= &two;
        twos += 1;
    }
    while (&d % &five).is_zero() {
        d /= &five;
        fives += 1;
    }
    if d.is_one() {
        places = places.max(twos).max(fives);
        let scaled = r * BigRational::from_integer(num_traits::pow(BigInt::from(10), places));
        let digits = scaled.to_integer().abs().to_string();
        let digits = format!("{digits:0>width$}", width = places + 1);
        let (int, frac) = digits.split_at(digits.len() - places);
        let sign = if r.is_negative() { "-" } else { "" };
        return (format!("{sign}{int}.{frac}"), None);
    }
    (
        format!("{}/{}", r.numer(), r.denom()),
        Some(show_float(ratio_to_f64(r))),
    )
}

/// A float with 15 significant digits and no trailing zeros.
fn show_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let magnitude = f.abs().log10().floor() as i32;
    if !(-6..=15).contains(&magnitude) {
        return format!("{f:.14e}")
            .replace("0e", "e")
            .trim_end_matches('0')
            .to_string();
    }
    let decimals = (14 - magnitude).max(0) as usize;
    let s = format!("{f:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(s: &str) -> String {
        let c = calculate(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        match c.approximately {
            Some(a) => format!("{} ≈ {a}", c.result),
            None if c.exact => c.result,
            None => format!("≈ {}", c.result),
        }
    }

    fn error(s: &str) -> String {
        calculate(s)
            .map(|c| panic!("{s} gave {c:?}"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn arithmetic_is_exact() {
        assert_eq!(eval("0.1 + 0.2"), "0.3");
        assert_eq!(eval("1/3 * 3"), "1");
        assert_eq!(eval("1/3"), "1/3 ≈ 0.333333333333333");
        assert_eq!(
            eval("(1250 - 980) / 980 * 100"),
            "1350/49 ≈ 27.5510204081633"
        );
        assert_eq!(eval("2^64"), "18446744073709551616");
        assert_eq!(eval("2 ** -2"), "0.25");
        assert_eq!(eval("-2^2"), "-4");
        assert_eq!(eval("2^3^2"), "512");
        assert_eq!(eval("(-1)^1001"), "-1");
        assert_eq!(eval("(-1)^1000000000000"), "1");
        assert_eq!(eval("7 // 2"), "3");
        assert_eq!(eval("-7 // 2"), "-4");
        assert_eq!(eval("-7 % 3"), "2");
        assert_eq!(eval("7.5 % 2"), "1.5");
        assert_eq!(eval("1e6 + 1_000"), "1001000");
        assert_eq!(eval("2.5e-3"), "0.0025");
        assert_eq!(eval(".5 - 1"), "-0.5");
        assert_eq!(eval("12 × 3 − 6 ÷ 4"), "34.5");
        assert_eq!(
            eval("123456789012345678901234567890 * 10"),
            "1234567890123456789012345678900"
        );
    }

    #[test]
    fn functions() {
        assert_eq!(eval("sqrt(144/25)"), "2.4");
        assert_eq!(eval("sqrt(2)"), "≈ 1.4142135623731");
        assert_eq!(eval("round(2.5)"), "3");
        assert_eq!(eval("round(-2.5)"), "-3");
        assert_eq!(eval("round(1/3, 4)"), "0.3333");
        assert_eq!(eval("round(1234, -2)"), "1200");
        assert_eq!(eval("max(1, 7/2, 3)"), "3.5");
        assert_eq!(eval("min(4, -1, 2)"), "-1");
        assert_eq!(eval("abs(-3) + floor(2.7) + ceil(2.1)"), "8");
        assert_eq!(eval("round(pi, 2)"), "≈ 3.14");
        assert_eq!(eval("2^0.5"), "≈ 1.4142135623731");
    }

    #[test]
    fn mistakes_say_what_and_where() {
        assert_eq!(error("1 / (2 - 2)"), "division by zero at column 3");
        assert_eq!(error("0^-1"), "division by zero at column 2");
        assert_eq!(error("2 +"), "the expression ends too early at column 4");
        assert_eq!(
            error("(1 + 2"),
            "the \"(\" at column 1 is never closed at column 7"
        );
        assert_eq!(error("1 + 2)"), "unexpected \")\" at column 6");
        assert_eq!(error("3 $ 4"), "unexpected character '$' at column 3");
        assert_eq!(
            error("x + 1"),
            "unknown name \"x\" (there are no variables) at column 1"
        );
        assert!(error("log(3)").contains("unknown function \"log\""));
        assert_eq!(
            error("round(1, 2, 3)"),
            "round() takes 1 to 2 arguments, got 3 at column 1"
        );
        assert_eq!(error("1.2.3"), "\"1.2.3\" is not a number at column 1");
        assert_eq!(
            error("sqrt(-4)"),
            "the square root of a negative number at column 1"
        );
        assert!(error("(-8)^(1/3)").contains("not a finite real number"));
        assert_eq!(error("   "), "the expression is empty");
    }

    #[test]
    fn nothing_can_exhaust_the_machine() {
        assert!(error("2^1000000").contains("more than 12000 digits"));
        assert!(error("10^9999 * 10^9999").contains("more than 12000 digits"));
        assert!(error("1e100000").contains("more than 12000 digits"));
        assert!(error(&"(".repeat(100)).contains("nesting deeper than 64"));
        assert!(error(&"-".repeat(100)).contains("nesting deeper than 64"));
        assert!(error(&"1+".repeat(1500)).contains("at most 2000"));
        // Large but allowed.
        assert_eq!(eval("2^1000").len(), 302);
    }

    #[test]
    fn the_tool_reads_as_text_and_data() {
        let out = Calculate
            .run(CalculateInput {
                expression: "1/4 + 1/4".into(),
            })
            .unwrap();
        assert_eq!(out.text, "1/4 + 1/4 = 0.5");
        assert_eq!(out.data["exact"], true);
        let out = Calculate
            .run(CalculateInput {
                expression: "10/3".into(),
            })
            .unwrap();
        assert_eq!(out.text, "10/3 = 10/3 ≈ 3.33333333333333");
        let e = Calculate
            .run(CalculateInput {
                expression: "1/0".into(),
            })
            .unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)) && !e.is_retryable());
    }
}
