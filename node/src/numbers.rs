//! JavaScript numbers and BigInts as the `u64`s of IDs and fields, and back: a number
//! must be a whole number from 0 to `Number.MAX_SAFE_INTEGER`, a BigInt from 0 to
//! 2^64 - 1, a string decimal digits; anything else is a `TypeError` or `RangeError`
//! naming the argument, never a wrong value.

use napi::Either;
use napi::bindgen_prelude::BigInt;

use crate::errors::{BAD_ID, error, range_error, type_error};

/// The largest integer a JavaScript number holds exactly.
pub(crate) const MAX_SAFE: u64 = (1 << 53) - 1;

/// A number or a BigInt, as JavaScript passes a whole number.
pub(crate) type Whole = Either<f64, BigInt>;

/// `v` as a `u64` of at most `max`, or why not (naming `what`).
pub(crate) fn whole(what: &str, v: &Whole, max: u64) -> napi::Result<u64> {
    let n = match v {
        Either::A(f) => number(what, *f, max)?,
        Either::B(b) => bigint(what, b, max)?,
    };
    if n > max {
        return Err(range_error(format!(
            "{what} {n} is out of range: give an integer from 0 to {max}"
        )));
    }
    Ok(n)
}

/// A number as a `u64`: whole, from 0 to 2^53 - 1 (`max` is what the message offers).
fn number(what: &str, f: f64, max: u64) -> napi::Result<u64> {
    if !f.is_finite() || f.fract() != 0.0 {
        return Err(range_error(format!(
            "{what} {f} is not a whole number: give an integer from 0 to {max}"
        )));
    }
    if f < 0.0 {
        return Err(range_error(format!(
            "{what} {f} is negative: give an integer from 0 to {max}"
        )));
    }
    if f > MAX_SAFE as f64 {
        return Err(range_error(format!(
            "{what} {f} is past 2^53 - 1, where numbers lose digits: give an integer from 0 to {max}, past 2^53 - 1 as a BigInt"
        )));
    }
    Ok(f as u64)
}

/// A BigInt as a `u64`: from 0 to 2^64 - 1 (`max` is what the message offers).
fn bigint(what: &str, b: &BigInt, max: u64) -> napi::Result<u64> {
    let (negative, n, lossless) = b.get_u64();
    if negative || !lossless {
        return Err(range_error(format!(
            "{what} {}{} is out of range: give a BigInt from 0 to {max}",
            if negative { "-" } else { "" },
            if lossless {
                n.to_string()
            } else {
                "(more than 64 bits)".into()
            }
        )));
    }
    Ok(n)
}

/// An ID given as a BigInt, a safe whole number or decimal text.
pub(crate) type IdValue = Either<BigInt, Either<f64, String>>;

/// `v` as the 64 bits of an ID.
pub(crate) fn id_of(v: &IdValue) -> napi::Result<u64> {
    match v {
        Either::A(b) => bigint("id", b, u64::MAX),
        Either::B(Either::A(f)) => number("id", *f, MAX_SAFE),
        Either::B(Either::B(s)) => decimal(s, None),
    }
}

/// Decimal text as an ID; `at` names its place in a column.
pub(crate) fn decimal(s: &str, at: Option<usize>) -> napi::Result<u64> {
    flakeid::Encoding::Decimal.parse(s).map_err(|e| {
        let place = at.map(|i| format!(" at index {i}")).unwrap_or_default();
        let shown: String = s.chars().take(40).collect();
        error(
            BAD_ID,
            "",
            format!(
                "{shown:?}{place} is not an ID ({e}): give decimal digits of a number below 2^64"
            ),
        )
    })
}

/// A count given as a number: a whole number from 0 to `max`.
pub(crate) fn count(what: &str, n: f64, max: u64) -> napi::Result<usize> {
    whole(what, &Either::A(n), max).map(|n| n as usize)
}

/// `v` as a JavaScript number where it is exact, else a BigInt.
pub(crate) fn number_or_bigint(v: u64) -> Either<f64, BigInt> {
    if v <= MAX_SAFE {
        Either::A(v as f64)
    } else {
        Either::B(BigInt::from(v))
    }
}

/// A whole number of milliseconds as nanoseconds (an instant or a span), or why not.
pub(crate) fn ms_to_ns(what: &str, ms: f64) -> napi::Result<i128> {
    if !ms.is_finite() {
        return Err(type_error(format!(
            "{what} {ms} is not a time: give Unix milliseconds (a number or a Date)"
        )));
    }
    // Whole milliseconds exactly (a product in f64 would round past 2^53 ns, in 1970).
    let whole = ms.trunc();
    Ok(whole as i128 * 1_000_000 + ((ms - whole) * 1e6).round() as i128)
}
