//! How a result is written: exact values as integers, terminating decimals or fractions;
//! approximate ones to 15 significant digits.

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, Zero};

use super::eval::ratio_to_f64;

/// An exact value as an integer, a terminating decimal, or a fraction with a decimal beside it.
pub(super) fn show_exact(r: &BigRational) -> (String, Option<String>) {
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
pub(super) fn show_float(f: f64) -> String {
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
