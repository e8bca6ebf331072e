//! `calculate`: exact arithmetic for the agent. Other agents send sums to a code interpreter;
//! Burrow runs no code. This is an expression evaluator and nothing more: numbers, operators,
//! parentheses and a few named functions, no variables, no file system, no network, and limits
//! on the size of the input and of every intermediate number, so no expression can exhaust the
//! machine.
//!
//! Arithmetic is on exact rationals (arbitrary size): `0.1 + 0.2` is `0.3`, and `1/3 * 3` is
//! `1`. Only square roots that are not exact, fractional powers and `pi` leave the exact
//! numbers, and the result then says it is approximate.
//!
//! The parts: `lexer` turns the text into tokens, `parser` reads them by precedence and
//! evaluates as it goes, `eval` does the arithmetic and the functions, `show` writes the result.

mod eval;
mod lexer;
mod parser;
mod show;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Tool, ToolError, ToolOutput};
use eval::Value;
use lexer::tokenize;
use parser::Parser;
use show::{show_exact, show_float};

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

fn syntax(what: impl Into<String>, column: usize) -> CalcError {
    CalcError::Syntax {
        what: what.into(),
        column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn eval(s: &str) -> String {
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

    /// Issue 17: `0^0` said 0; the convention (and every math library) says 1.
    #[test]
    fn anything_to_the_power_zero_is_one() {
        for x in ["0", "5", "(-3)", "(1/2)", "0.5", "(-1)"] {
            assert_eq!(eval(&format!("{x}^0")), "1", "{x}^0");
        }
        assert_eq!(eval("0^3"), "0");
        assert_eq!(eval("(-1)^3"), "-1");
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
