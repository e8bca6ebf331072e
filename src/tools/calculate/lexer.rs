//! The lexer: numbers (exact, from their decimal text), names, operators and the punctuation of
//! calls, each with its column for errors.

use num_bigint::BigInt;
use num_rational::BigRational;

use super::{syntax, CalcError, MAX_DIGITS};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
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
pub(super) struct Token {
    pub(super) kind: Kind,
    pub(super) column: usize,
}

pub(super) fn tokenize(s: &str) -> Result<Vec<Token>, CalcError> {
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
