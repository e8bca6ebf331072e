//! The arithmetic: exact on rationals, approximate (f64) once a value has left them, every
//! exact result bounded in size.

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::{syntax, CalcError, MAX_BITS, MAX_DIGITS};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
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

pub(super) fn ratio_to_f64(r: &BigRational) -> f64 {
    // Both parts may be beyond f64 while their quotient is not: scale them down together.
    let (n, d) = (r.numer(), r.denom());
    let shift = n.bits().max(d.bits()).saturating_sub(1000);
    let (n, d) = (n >> shift, d >> shift);
    match (n.to_f64(), d.to_f64()) {
        (Some(n), Some(d)) if d != 0.0 => n / d,
        _ => f64::NAN,
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

pub(super) fn negate(v: Value) -> Value {
    match v {
        Value::Exact(r) => Value::Exact(-r),
        Value::Approx(f) => Value::Approx(-f),
    }
}

pub(super) fn arith(op: &str, a: Value, b: Value, column: usize) -> Result<Value, CalcError> {
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

pub(super) fn pow(base: Value, exponent: Value, column: usize) -> Result<Value, CalcError> {
    if let (Value::Exact(b), Value::Exact(e)) = (&base, &exponent) {
        if e.is_integer() {
            if b.is_zero() && e.is_negative() {
                return Err(CalcError::DivisionByZero { column });
            }
            // x^0 is 1 for every x, 0^0 included (the convention of every math library;
            // it said 0: issue 17).
            if e.is_zero() {
                return Ok(Value::Exact(One::one()));
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

pub(super) fn function(
    name: &str,
    mut args: Vec<Value>,
    column: usize,
) -> Result<Value, CalcError> {
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

#[cfg(test)]
mod tests {
    use crate::tools::calculate::tests::eval;

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
}
