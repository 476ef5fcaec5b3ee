//! RFC 3339 timestamps in UTC, without a date-time dependency.
//!
//! Days are converted with Howard Hinnant's `days_from_civil` / `civil_from_days`
//! algorithms, exact over the proleptic Gregorian calendar, in 128-bit arithmetic so that
//! every `i128` count of nanoseconds has a date.
//!
//! RFC 3339 years have four digits (0000 to 9999). Layouts can reach further (a 41-bit
//! layout with a 1 s unit ends in the year 71654), so years outside that range are written
//! and read in ISO 8601's expanded form: a sign and at least four digits, as in
//! `+71654-01-01T00:00:00Z` or `-0001-12-31T00:00:00Z`. [`parse`] reads both forms, and
//! what [`write()`] writes reads back to the same instant.

use core::fmt::{self, Write};

use crate::parse::ParseError;

const NS_PER_SEC: i128 = 1_000_000_000;

/// The most digits [`parse`] reads in a year: enough for every year an `i128` of
/// nanoseconds reaches, with room to spare.
const MAX_YEAR_DIGITS: usize = 22;

/// Days from 1970-01-01 to the given civil date.
fn days_from_civil(y: i128, m: u32, d: u32) -> i128 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i128::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i128::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month, day) of a day count from 1970-01-01.
fn civil_from_days(z: i128) -> (i128, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i128, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Seconds from 0000-01-01 to 1970-01-01: added to make every four-digit year's seconds
/// non-negative.
const SECONDS_FROM_YEAR_0: i64 = 62_167_219_200;

/// The first and last second (Unix) of years 0000 to 9999, the range [`date_time`] writes.
const FOUR_DIGIT_YEARS: core::ops::RangeInclusive<i64> = -SECONDS_FROM_YEAR_0..=253_402_300_799;

/// The decimal digits of 0 to 99, two bytes each.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The civil date (year, month, day) of a day count from 1970-01-01, for the days of years
/// 0000 to 9999: Neri and Schneider's algorithm ("Euclidean affine functions and their
/// application to calendar algorithms", 2022), in 32-bit arithmetic with multiplications
/// and shifts only. Checked against [`civil_from_days`] over every day of those years.
fn civil_from_days_32(days: i32) -> (u32, u32, u32) {
    // Whole 400-year eras added so that every day from year 0 is positive.
    const ERAS: u32 = 82;
    const SHIFT: u32 = 719_468 + 146_097 * ERAS;
    let n = days.wrapping_add(SHIFT as i32) as u32;
    // The century (of 36,524.25 days) and the day in it.
    let n1 = 4 * n + 3;
    let century = n1 / 146_097;
    let day_of_century = n1 % 146_097 / 4;
    // The year in the century and the day in the year (from March 1st).
    let p2 = 2_939_745u64 * u64::from(4 * day_of_century + 3);
    let year_of_century = (p2 >> 32) as u32;
    let day_of_year = (p2 as u32) / 2_939_745 / 4;
    // The month (from March) and day, by one multiplication.
    let n3 = 2_141 * day_of_year + 197_913;
    let (month, day) = (n3 >> 16, (n3 & 0xFFFF) / 2_141 + 1);
    // January and February belong to the next year.
    let january = u32::from(day_of_year >= 306);
    (
        100 * century + year_of_century + january - 400 * ERAS,
        if january == 1 { month - 12 } else { month },
        day,
    )
}

/// `secs` (Unix seconds, UTC) as `YYYY-MM-DDTHH:MM:SS`, when its year has four digits
/// (0000 to 9999), else `None`. In 32- and 64-bit arithmetic without a division that is
/// not by a constant, and without `core::fmt`: the part of a timestamp that changes once
/// a second, for writers of many rows.
///
/// ```
/// use flakeid::rfc3339::date_time;
///
/// assert_eq!(date_time(1_793_448_000).as_ref().map(|t| &t[..]), Some(&b"2026-10-31T12:00:00"[..]));
/// assert_eq!(date_time(253_402_300_800), None); // +10000-01-01
/// ```
pub fn date_time(secs: i64) -> Option<[u8; 19]> {
    if !FOUR_DIGIT_YEARS.contains(&secs) {
        return None;
    }
    let from_year_0 = (secs + SECONDS_FROM_YEAR_0) as u64;
    let days = (from_year_0 / 86_400) as i32 - (SECONDS_FROM_YEAR_0 / 86_400) as i32;
    let sod = (from_year_0 % 86_400) as u32;
    let (y, m, d) = civil_from_days_32(days);
    let pair = |v: u32| {
        let at = v as usize * 2;
        [PAIRS[at], PAIRS[at + 1]]
    };
    let (y_hi, y_lo) = (pair(y / 100), pair(y % 100));
    let (mo, dd) = (pair(m), pair(d));
    let (h, mi, s) = (pair(sod / 3600), pair(sod / 60 % 60), pair(sod % 60));
    Some([
        y_hi[0], y_hi[1], y_lo[0], y_lo[1], b'-', mo[0], mo[1], b'-', dd[0], dd[1], b'T', h[0],
        h[1], b':', mi[0], mi[1], b':', s[0], s[1],
    ])
}

/// Writes `unix_ns` as `YYYY-MM-DDTHH:MM:SS.mmmZ`, with nine fractional digits instead of
/// three when the instant is not a whole millisecond. Accepts every `i128`: a year outside
/// 0000..=9999 is written in the expanded form (`+71654-…`, `-0001-…`), which [`parse`]
/// reads back.
pub fn write(out: &mut impl Write, unix_ns: i128) -> fmt::Result {
    // The common case in 64 bits and without `core::fmt`'s padding machinery.
    if let Ok(ns) = i64::try_from(unix_ns) {
        let nanos = ns.rem_euclid(1_000_000_000) as u32;
        if let Some(text) = date_time(ns.div_euclid(1_000_000_000)) {
            let mut frac = [
                b'.', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'Z',
            ];
            let digits = if nanos.is_multiple_of(1_000_000) {
                3
            } else {
                9
            };
            let mut v = if digits == 3 {
                nanos / 1_000_000
            } else {
                nanos
            };
            for at in (1..=digits).rev() {
                frac[at] = b'0' + (v % 10) as u8;
                v /= 10;
            }
            frac[digits + 1] = b'Z';
            // Both are ASCII digits and punctuation.
            out.write_str(core::str::from_utf8(&text).map_err(|_| fmt::Error)?)?;
            return out
                .write_str(core::str::from_utf8(&frac[..digits + 2]).map_err(|_| fmt::Error)?);
        }
    }
    write_wide(out, unix_ns)
}

/// [`write()`] in 128-bit arithmetic, for every `i128`: the path of the expanded years, and
/// the oracle of the 64-bit one.
fn write_wide(out: &mut impl Write, unix_ns: i128) -> fmt::Result {
    let secs = unix_ns.div_euclid(NS_PER_SEC);
    let nanos = unix_ns.rem_euclid(NS_PER_SEC) as u32;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u32;
    let (y, mo, d) = civil_from_days(days);
    if (0..=9999).contains(&y) {
        write!(out, "{y:04}")?;
    } else {
        // The sign counts towards the width: `+10000`, `-0001`.
        write!(out, "{y:+05}")?;
    }
    write!(
        out,
        "-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )?;
    if nanos.is_multiple_of(1_000_000) {
        write!(out, ".{:03}Z", nanos / 1_000_000)
    } else {
        write!(out, ".{nanos:09}Z")
    }
}

/// A displayable RFC 3339 timestamp for a count of Unix nanoseconds (any `i128`; see
/// [`write()`] for years past 9999 or before 0000).
#[derive(Debug, Clone, Copy)]
pub struct Timestamp(pub i128);

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write(f, self.0)
    }
}

fn bad() -> ParseError {
    ParseError::Timestamp
}

fn digits(s: &[u8], at: usize, n: usize) -> Result<u32, ParseError> {
    let part = s.get(at..at + n).ok_or_else(bad)?;
    part.iter().try_fold(0u32, |acc, &b| {
        if b.is_ascii_digit() {
            Ok(acc * 10 + u32::from(b - b'0'))
        } else {
            Err(bad())
        }
    })
}

fn expect(s: &[u8], at: usize, want: &[u8]) -> Result<(), ParseError> {
    match s.get(at) {
        Some(b) if want.contains(b) => Ok(()),
        _ => Err(bad()),
    }
}

/// Reads the year at the start of `s`: four digits, or a sign and four to
/// [`MAX_YEAR_DIGITS`] digits. Returns the year and where the text goes on.
fn year(s: &[u8]) -> Result<(i128, usize), ParseError> {
    let (negative, start) = match s.first() {
        Some(b'+') => (false, 1),
        Some(b'-') => (true, 1),
        _ => return Ok((i128::from(digits(s, 0, 4)?), 4)),
    };
    let len = s[start..].iter().take_while(|b| b.is_ascii_digit()).count();
    if !(4..=MAX_YEAR_DIGITS).contains(&len) {
        return Err(bad());
    }
    let magnitude = s[start..start + len]
        .iter()
        .fold(0i128, |acc, &b| acc * 10 + i128::from(b - b'0'));
    Ok((if negative { -magnitude } else { magnitude }, start + len))
}

/// Parses an RFC 3339 timestamp (`2026-10-31T12:00:00Z`, fractions of a second and
/// `+HH:MM` offsets allowed) into Unix nanoseconds. Years outside 0000..=9999 are read in
/// the expanded form [`write()`] uses (`+71654-01-01T00:00:00Z`); an instant too far out for
/// an `i128` of nanoseconds is an error, never a wrapped value.
pub fn parse(text: &str) -> Result<i128, ParseError> {
    let s = text.trim().as_bytes();
    let (year, at) = year(s)?;
    let s = &s[at - 4..];
    expect(s, 4, b"-")?;
    let month = digits(s, 5, 2)?;
    expect(s, 7, b"-")?;
    let day = digits(s, 8, 2)?;
    expect(s, 10, b"Tt ")?;
    let hour = digits(s, 11, 2)?;
    expect(s, 13, b":")?;
    let minute = digits(s, 14, 2)?;
    expect(s, 16, b":")?;
    let second = digits(s, 17, 2)?;
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(bad());
    }
    let mut at = 19;
    let mut nanos: u32 = 0;
    if s.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while let Some(b) = s.get(at).filter(|b| b.is_ascii_digit()) {
            if at - start < 9 {
                nanos = nanos * 10 + u32::from(b - b'0');
            }
            at += 1;
        }
        let n = at - start;
        if n == 0 {
            return Err(bad());
        }
        for _ in n..9 {
            nanos *= 10;
        }
    }
    let offset_secs: i128 = match s.get(at) {
        Some(b'Z' | b'z') if at + 1 == s.len() => 0,
        Some(&sign @ (b'+' | b'-')) if at + 6 == s.len() => {
            let h = digits(s, at + 1, 2)?;
            expect(s, at + 3, b":")?;
            let m = digits(s, at + 4, 2)?;
            if h > 23 || m > 59 {
                return Err(bad());
            }
            let off = i128::from(h * 3600 + m * 60);
            if sign == b'+' { off } else { -off }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + i128::from(hour * 3600 + minute * 60 + second) - offset_secs;
    secs.checked_mul(NS_PER_SEC)
        .and_then(|ns| ns.checked_add(i128::from(nanos)))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(ns: i128) -> String {
        Timestamp(ns).to_string()
    }

    #[test]
    fn known_instants() {
        assert_eq!(fmt(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            fmt(1_288_834_974_657 * 1_000_000),
            "2010-11-04T01:42:54.657Z"
        );
        assert_eq!(
            fmt(3_487_858_230_209 * 1_000_000),
            "2080-07-10T17:30:30.209Z"
        );
        assert_eq!(fmt(1_500_000_001), "1970-01-01T00:00:01.500000001Z");
        assert_eq!(
            parse("2010-11-04T01:42:54.657Z").unwrap(),
            1_288_834_974_657_000_000
        );
        assert_eq!(
            parse("2026-10-31T12:00:00Z").unwrap(),
            1_793_448_000_000 * 1_000_000
        );
        assert_eq!(
            parse("2026-10-31T14:00:00+02:00").unwrap(),
            parse("2026-10-31T12:00:00Z").unwrap()
        );
        assert_eq!(parse("1969-12-31T23:59:59Z").unwrap(), -1_000_000_000);
    }

    #[test]
    fn round_trip_over_many_days() {
        let mut ns: i128 = -5_000_000_000_000_000_000;
        while ns < 9_000_000_000_000_000_000 {
            assert_eq!(parse(&fmt(ns)).unwrap(), ns, "{}", fmt(ns));
            ns += 86_399_999_999_937;
        }
    }

    #[test]
    fn every_i128_formats_and_expanded_years_read_back() {
        assert_eq!(fmt(-1_000_000), "1969-12-31T23:59:59.999Z");
        let far = parse("+71654-01-01T00:00:00Z").unwrap();
        assert_eq!(fmt(far), "+71654-01-01T00:00:00.000Z");
        let bc = parse("-0001-12-31T00:00:00Z").unwrap();
        assert_eq!(fmt(bc), "-0001-12-31T00:00:00.000Z");
        assert_eq!(
            fmt(parse("0000-01-01T00:00:00Z").unwrap()),
            "0000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            fmt(parse("+10000-01-01T00:00:00Z").unwrap()),
            "+10000-01-01T00:00:00.000Z"
        );
        for ns in [i128::MAX, i128::MIN, i128::MAX - 1, i128::MIN + 1, 0, -1, 1] {
            let text = fmt(ns);
            assert!(text.ends_with('Z'), "{text}");
            // The far ends are past what a 22-digit year reads back; the rest round-trips.
            match parse(&text) {
                Ok(back) => assert_eq!(back, ns, "{text}"),
                Err(e) => assert_eq!(e, ParseError::Timestamp, "{text}"),
            }
        }
        // i128::MAX is about 5.4e21 years after 1970, never a negative year.
        assert!(
            fmt(i128::MAX).starts_with("+5391559471918239"),
            "{}",
            fmt(i128::MAX)
        );
        assert!(
            fmt(i128::MIN).starts_with("-5391559471918239"),
            "{}",
            fmt(i128::MIN)
        );
        // Too far out for i128 nanoseconds: an error, not a wrapped value.
        assert_eq!(
            parse("+9999999999999999999999-01-01T00:00:00Z"),
            Err(ParseError::Timestamp)
        );
    }

    /// The 64-bit writer agrees with the 128-bit one on every second it writes, the ends of
    /// years 0000 and 9999 included, and declines the seconds outside them.
    #[test]
    fn the_64_bit_date_time_is_the_128_bit_one() {
        let oracle = |secs: i64| {
            let mut text = std::string::String::new();
            write_wide(&mut text, i128::from(secs) * NS_PER_SEC).unwrap();
            text
        };
        let (first, last) = (*FOUR_DIGIT_YEARS.start(), *FOUR_DIGIT_YEARS.end());
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut seconds = std::vec![first, last, 0, -1, 1, 951_782_400, 951_868_799];
        for _ in 0..200_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            seconds.push(first + (rng % (last - first + 1) as u64) as i64);
        }
        // Every day's first and last second over 1,000 years around leap centuries.
        seconds.extend(
            (0..365_250).flat_map(|d| [d * 86_400 - 15_000_000_000, d * 86_400 - 15_000_000_001]),
        );
        for secs in seconds {
            let text = date_time(secs).unwrap_or_else(|| panic!("{secs} has a four-digit year"));
            assert_eq!(
                core::str::from_utf8(&text).unwrap(),
                &oracle(secs)[..19],
                "second {secs}"
            );
        }
        for secs in [first - 1, last + 1, i64::MIN, i64::MAX] {
            assert_eq!(date_time(secs), None, "{secs}");
        }
        for ns in [
            0i128,
            -1,
            1,
            1_500_000_001,
            -1_000_000,
            i128::from(i64::MAX),
            i128::from(i64::MIN),
        ] {
            let mut fast = std::string::String::new();
            let mut wide = std::string::String::new();
            write(&mut fast, ns).unwrap();
            write_wide(&mut wide, ns).unwrap();
            assert_eq!(fast, wide, "{ns}");
        }
    }

    /// The 32-bit date of every day of years 0000 to 9999 is the 128-bit one.
    #[test]
    fn the_32_bit_date_of_every_four_digit_day() {
        let first = FOUR_DIGIT_YEARS.start().div_euclid(86_400);
        let last = FOUR_DIGIT_YEARS.end().div_euclid(86_400);
        for day in first..=last {
            let (y, m, d) = civil_from_days(i128::from(day));
            assert_eq!(
                civil_from_days_32(day as i32),
                (y as u32, m, d),
                "day {day}"
            );
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "2026-10-31",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-10-31T24:00:00Z",
            "2026-10-31T12:00:00",
            "2026-10-31T12:00:00.Z",
            "2026-10-31T12:00:00Zjunk",
            "2026-10-31T12:00:00+0200",
            "２026-10-31T12:00:00Z",
            "10000-01-01T00:00:00Z",
            "+999-01-01T00:00:00Z",
            "+-1000-01-01T00:00:00Z",
            "+12345678901234567890123-01-01T00:00:00Z",
        ] {
            assert_eq!(parse(bad), Err(ParseError::Timestamp), "{bad}");
        }
        assert!(parse("2024-02-29T00:00:00Z").is_ok());
    }
}
