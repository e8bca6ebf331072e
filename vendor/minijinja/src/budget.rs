//! A memory budget for one rendering (Burrow's patch; not in upstream minijinja).
//!
//! Fuel bounds the instructions a template runs, not what they build: `{% set s = s ~ s %}` in
//! a loop of forty asks for a terabyte in a few hundred instructions, and a chat template comes
//! from whatever GGUF the user downloaded. Inside [`with_limit`], every new string and sequence
//! the engine builds is charged against a byte budget (cumulative, so it bounds live memory
//! too). Operations whose result can be far larger than their inputs (`~`, `+`, `*`, `join`,
//! `replace`, printf widths, captured output, formatting a value) charge before or while they
//! build; the rest charge what they built, and the engine stops at the next instruction once
//! the budget is spent. Outside [`with_limit`] nothing is counted.
use std::cell::Cell;
use std::fmt;

use crate::error::{Error, ErrorKind};

thread_local! {
    static LEFT: Cell<Option<usize>> = const { Cell::new(None) };
    static OVER: Cell<bool> = const { Cell::new(false) };
}

/// What one item of a sequence costs, for sequences charged by their length.
pub const ITEM_BYTES: usize = std::mem::size_of::<crate::value::Value>();

/// Runs `f` with at most `bytes` of new strings and sequences, and says whether it ran out.
/// Once it runs out, the rendering fails with an `InvalidOperation` error at the next step.
/// Inside another limit, the tighter one applies and what `f` spends counts against both.
pub fn with_limit<R>(bytes: usize, f: impl FnOnce() -> R) -> (R, bool) {
    struct Restore {
        outer: Option<usize>,
        outer_over: bool,
        start: usize,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            let spent = self.start - LEFT.with(Cell::get).unwrap_or(0).min(self.start);
            let over = OVER.with(Cell::get);
            LEFT.with(|c| c.set(self.outer.map(|left| left.saturating_sub(spent))));
            // Running out of the outer budget inside spends the outer one too.
            let outer_spent = self.outer.is_some_and(|left| over && left == self.start);
            OVER.with(|c| c.set(self.outer_over || outer_spent));
        }
    }
    let outer = LEFT.with(Cell::get);
    let start = outer.map_or(bytes, |left| left.min(bytes));
    let _restore = Restore {
        outer,
        outer_over: OVER.with(Cell::get),
        start,
    };
    LEFT.with(|c| c.set(Some(start)));
    OVER.with(|c| c.set(false));
    let rv = f();
    (rv, OVER.with(Cell::get))
}

/// Charges `bytes` against the budget of the rendering running on this thread, if any.
/// Past the budget it fails, and every later charge and step fails too.
pub fn charge(bytes: usize) -> Result<(), Error> {
    let Some(left) = LEFT.with(Cell::get) else {
        return Ok(());
    };
    if OVER.with(Cell::get) || bytes > left {
        OVER.with(|c| c.set(true));
        return Err(spent());
    }
    LEFT.with(|c| c.set(Some(left - bytes)));
    Ok(())
}

/// Charges a sequence of `items` values.
pub fn charge_items(items: usize) -> Result<(), Error> {
    charge(items.saturating_mul(ITEM_BYTES))
}

/// Charges what `text.replace(from, to)` builds, before it is built: its size is known, and
/// `replace("", long)` multiplies (`to` goes between every character).
pub fn charge_replace(text: &str, from: &str, to: &str) -> Result<(), Error> {
    let hits = if from.is_empty() {
        text.chars().count().saturating_add(1)
    } else {
        text.matches(from).count()
    };
    charge(text.len().saturating_add(hits.saturating_mul(to.len())))
}

/// Whether the budget of the rendering running on this thread is spent.
pub fn exceeded() -> bool {
    OVER.with(Cell::get)
}

/// Fails once the budget is spent: the engine checks it before each instruction.
#[inline]
pub(crate) fn check() -> Result<(), Error> {
    if OVER.with(Cell::get) {
        Err(spent())
    } else {
        Ok(())
    }
}

fn spent() -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        "the template built more than its memory budget allows",
    )
}

/// A string that charges as it grows, so formatting a value that prints far larger than it is
/// (a list repeated by reference, say) stops at the budget instead of after it.
#[derive(Default)]
pub(crate) struct Charged(pub String);

impl fmt::Write for Charged {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        charge(s.len()).map_err(|_| fmt::Error)?;
        self.0.push_str(s);
        Ok(())
    }
}

/// `format!` that charges as it writes; what was written so far when the budget ran out.
pub(crate) fn format(args: fmt::Arguments<'_>) -> String {
    let mut out = Charged::default();
    let _ = fmt::write(&mut out, args);
    out.0
}
