//! A row of text being written in place ([`Line`]: numbers, bytes and padding as
//! fixed-size stores) and the RFC 3339 text of its time ([`TimeText`]: the dates of
//! recent days and tables of the time of day), below the row writers of `rows.rs`.

use core::fmt::{self, Write as _};

use flakeid::Encoding;
use flakeid::rfc3339::{self, Timestamp};

/// The most one row takes in the batch's text, over-copies included: a row is at most
/// about 310 bytes (nine 20-digit numbers, a timestamp and the keys), and the fixed-size
/// copies below write up to `TICK_TEXT` (128) bytes past where the row then goes on.
pub(crate) const ROW_MAX: usize = 512;

/// The room kept for the part of a row that only the tick decides (at most about 80 bytes).
pub(crate) const TICK_TEXT: usize = 128;

/// A row being written straight into the writer's buffer of rows, from `len`. Numbers go in place
/// ([`Line::digits_at`]); padding and the cached tick text are fixed-size copies (no
/// `memset`/`memmove` call per piece), of which only `len` counts.
pub(crate) struct Line<'a> {
    pub(crate) buf: &'a mut [u8],
    pub(crate) len: usize,
}

impl<'a> Line<'a> {
    /// A row written into `buf` from `at`, over [`ROW_MAX`] bytes (which `buf` has).
    #[inline(always)]
    pub(crate) fn at(buf: &'a mut [u8], at: usize) -> Line<'a> {
        Line {
            buf: &mut buf[at..at + ROW_MAX],
            len: 0,
        }
    }

    #[inline]
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// The first `len` bytes of `block` (a fixed-size copy of all of it).
    #[inline]
    pub(crate) fn block(&mut self, block: &[u8; TICK_TEXT], len: usize) {
        self.buf[self.len..self.len + TICK_TEXT].copy_from_slice(block);
        self.len += len;
    }

    #[inline]
    pub(crate) fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// `n` spaces, at most 32 (a fixed-size copy of 32).
    #[inline]
    pub(crate) fn spaces(&mut self, n: usize) {
        self.buf[self.len..self.len + 32].copy_from_slice(&[b' '; 32]);
        self.len += n.min(32);
    }

    /// `v` in decimal, straight into the row (which keeps the 20 bytes' slack
    /// [`Line::digits_at`] may write).
    #[inline(always)]
    pub(crate) fn u64(&mut self, v: u64) {
        self.len += self.digits_at(v, self.len);
    }

    /// `v` right-aligned in `width` columns (as `{:>width$}`, `width` at most 20). A `v`
    /// that fits takes exactly `width` columns, so where the row goes on does not wait for
    /// `v`'s length: the field is spaces, then `v` written to end at its last column.
    #[inline(always)]
    pub(crate) fn right(&mut self, v: u64, width: usize) {
        if !fits(v, width) {
            return self.u64(v);
        }
        self.buf[self.len..self.len + 32].copy_from_slice(&[b' '; 32]);
        let end = self.len + width;
        self.digits_at(v, end - Encoding::decimal_len(v));
        self.len = end;
    }

    /// `v` left-aligned in `width` columns (as `{:<width$}`, `width` at most 20): as
    /// [`Line::right`], `v` first, then the spaces up to the field's end.
    #[inline(always)]
    pub(crate) fn left(&mut self, v: u64, width: usize) {
        if !fits(v, width) {
            return self.u64(v);
        }
        let after = self.len + Encoding::decimal_len(v);
        self.digits_at(v, self.len);
        self.buf[after..after + 32].copy_from_slice(&[b' '; 32]);
        self.len += width;
    }

    /// `v` in decimal from `at`, leaving `len` as it is; returns its length (the bytes
    /// after it, up to 20 from `at`, may be written too). At or above 10,000 by the core's
    /// writer (eight digits a step); below (a sequence, node or part of one) without a
    /// branch on its length, which varies from row to row in real data: its digits from
    /// [`SMALL`], stored as one 4-byte word.
    #[inline(always)]
    fn digits_at(&mut self, v: u64, at: usize) -> usize {
        if v < 10_000 {
            self.buf[at..at + 4].copy_from_slice(&SMALL[v as usize].to_le_bytes());
            // The length from `v`, not from the word: where the next piece goes must not
            // wait for a load (in a column of random values it may come from L2).
            1 + usize::from(v > 9) + usize::from(v > 99) + usize::from(v > 999)
        } else {
            let to: &mut [u8; Encoding::MAX_LEN] = (&mut self.buf[at..at + Encoding::MAX_LEN])
                .try_into()
                .expect("20 bytes");
            Encoding::Decimal.write(v, to)
        }
    }
}

/// Whether `v` takes at most `width` (at most 20) digits in decimal (the power of ten
/// is a constant where `width` is).
#[inline(always)]
fn fits(v: u64, width: usize) -> bool {
    width >= 20 || v < 10u64.pow(width as u32)
}

/// The decimal text of each number below 10,000, its first digit in the lowest byte of a
/// little-endian word and zeros after the last (40 KB; a column of sequences or nodes
/// reads a small part of it).
static SMALL: [u32; 10_000] = {
    let mut t = [0; 10_000];
    let mut v = 0;
    while v < 10_000 {
        let mut word = 0u32;
        let mut rest = v as u32;
        // From the last digit to the first, each pushed in at the bottom: the first ends
        // lowest.
        loop {
            word = word << 8 | (b'0' as u32 + rest % 10);
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        t[v] = word;
        v += 1;
    }
    t
};

/// The last Unix millisecond whose year has four digits (9999-12-31T23:59:59.999Z).
const LAST_FOUR_DIGIT_MS: u64 = 253_402_300_799_999;

/// Milliseconds in a day and in a minute.
const DAY_MS: u64 = 86_400_000;
const MINUTE_MS: u32 = 60_000;

/// `:SS` for each second of a minute, in the three low bytes of a little-endian word.
static SECONDS: [u32; 60] = {
    let mut t = [0; 60];
    let mut s = 0;
    while s < 60 {
        t[s] =
            b':' as u32 | (b'0' as u32 + s as u32 / 10) << 8 | (b'0' as u32 + s as u32 % 10) << 16;
        s += 1;
    }
    t
};

/// Days in the cache of dates: a direct-mapped table, so that a column of IDs spread over
/// a year or so (in any order) works out each date once.
const DAYS: usize = 512;

/// The `HH:MM` of each minute of a day, in the five low bytes of a little-endian word.
static HOURS_MINUTES: [u64; 1_440] = {
    let mut t = [0; 1_440];
    let mut m = 0;
    while m < 1_440 {
        let (h, mm) = ((m / 60) as u64, (m % 60) as u64);
        t[m] = (b'0' as u64 + h / 10)
            | (b'0' as u64 + h % 10) << 8
            | (b':' as u64) << 16
            | (b'0' as u64 + mm / 10) << 24
            | (b'0' as u64 + mm % 10) << 32;
        m += 1;
    }
    t
};

/// The `.ddd` of each millisecond of a second, as a little-endian word.
static MILLIS: [u32; 1_000] = {
    let mut t = [0; 1_000];
    let mut ms = 0;
    while ms < 1_000 {
        let v = ms as u32;
        t[ms] = b'.' as u32
            | (b'0' as u32 + v / 100) << 8
            | (b'0' as u32 + v / 10 % 10) << 16
            | (b'0' as u32 + v % 10) << 24;
        ms += 1;
    }
    t
};

/// A day's date in the cache: the day, then its `YYYY-MM-` and its `DDT` as the
/// little-endian words they are stored as.
#[derive(Debug, Clone, Copy)]
struct Day {
    day: u32,
    year_month: u64,
    day_t: u32,
}

/// The RFC 3339 text of a time: the date from a cache of recent days, the time of day from
/// tables.
#[derive(Debug)]
pub(crate) struct TimeText {
    days: Box<[Day; DAYS]>,
}

impl TimeText {
    pub(crate) fn new() -> Self {
        TimeText {
            days: Box::new(
                [Day {
                    day: u32::MAX,
                    year_month: 0,
                    day_t: 0,
                }; DAYS],
            ),
        }
    }

    /// Appends `unix_ms` as RFC 3339 (`2026-10-31T12:00:00.000Z`, or the expanded year);
    /// returns its length. A four-digit year's text is three words: the date from the
    /// cache of days (worked out by `rfc3339::date_time` on a miss), `HH:MM` and `.ddd`
    /// from tables, and `:SS` from a table.
    #[inline(always)]
    pub(crate) fn push(&mut self, out: &mut Line<'_>, unix_ms: u64) -> usize {
        if unix_ms > LAST_FOUR_DIGIT_MS {
            // Out of line, and given nothing of the row: a row passed to a call would be
            // kept in memory in the loop over every row.
            let text = Self::wide(unix_ms);
            out.bytes(&text.buf[..text.len]);
            return text.len;
        }
        let day = (unix_ms / DAY_MS) as u32;
        let of_day = (unix_ms % DAY_MS) as u32;
        let slot = &mut self.days[day as usize % DAYS];
        if slot.day != day {
            *slot = Self::day(day);
        }
        let (minute, of_minute) = (of_day / MINUTE_MS, of_day % MINUTE_MS);
        let (second, ms) = ((of_minute / 1_000) as usize, (of_minute % 1_000) as usize);
        let time = u64::from(slot.day_t) | HOURS_MINUTES[minute as usize] << 24;
        let seconds =
            u64::from(SECONDS[second]) | u64::from(MILLIS[ms]) << 24 | u64::from(b'Z') << 56;
        let at = &mut out.buf[out.len..out.len + 24];
        at[..8].copy_from_slice(&slot.year_month.to_le_bytes());
        at[8..16].copy_from_slice(&time.to_le_bytes());
        at[16..].copy_from_slice(&seconds.to_le_bytes());
        out.len += 24;
        24
    }

    /// A day's date, for the cache (a day of a four-digit year).
    #[cold]
    fn day(day: u32) -> Day {
        let t = rfc3339::date_time(i64::from(day) * 86_400).unwrap_or([b'?'; 19]);
        Day {
            day,
            year_month: u64::from_le_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]]),
            day_t: u32::from_le_bytes([t[8], t[9], t[10], 0]),
        }
    }

    /// The text [`TimeText::push`] writes for a time whose year is not of four digits,
    /// by `Timestamp`, in a fixed buffer (no allocation).
    #[cold]
    fn wide(unix_ms: u64) -> Fixed {
        let mut text = Fixed {
            buf: [0; WIDE_TEXT],
            len: 0,
        };
        // The widest (u64::MAX ms, year 584,556,019) is 32 bytes: it fits.
        let _ = write!(text, "{}", Timestamp(i128::from(unix_ms) * 1_000_000));
        text
    }
}

/// Room for the text of a time whose year is not of four digits.
const WIDE_TEXT: usize = 48;

/// A fixed buffer that `write!` fills (what does not fit is cut off, with an error).
struct Fixed {
    buf: [u8; WIDE_TEXT],
    len: usize,
}

impl fmt::Write for Fixed {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number below 10,000 is written as `format!` writes it, and nothing past it
    /// counts.
    #[test]
    fn small_numbers_equal_format() {
        for v in 0..10_000u32 {
            let mut buf = [b'#'; 8];
            let mut line = Line {
                buf: &mut buf,
                len: 1,
            };
            line.u64(u64::from(v));
            let len = line.len;
            assert_eq!(&buf[1..len], v.to_string().as_bytes(), "{v}");
            assert_eq!(buf[0], b'#');
        }
    }

    /// `right` and `left` write what `{:>w$}` and `{:<w$}` write, for every width up to
    /// 20 and numbers of every length (those longer than the width as they are, with no
    /// padding), nothing before the field, and the next piece where the text ends.
    #[test]
    fn padded_numbers_equal_format() {
        let mut values = vec![0, u64::MAX];
        for d in 1..20 {
            let p = 10u64.pow(d);
            values.extend([p - 1, p, p + p / 3]);
        }
        for width in 1..=20 {
            for &v in &values {
                for (right, want) in [
                    (true, format!("{v:>width$}|")),
                    (false, format!("{v:<width$}|")),
                ] {
                    let mut buf = [b'#'; 3 + ROW_MAX];
                    let mut line = Line {
                        buf: &mut buf,
                        len: 3,
                    };
                    match right {
                        true => line.right(v, width),
                        false => line.left(v, width),
                    }
                    line.byte(b'|');
                    let len = line.len;
                    assert_eq!(&buf[3..len], want.as_bytes(), "{v} in {width}");
                    assert_eq!(&buf[..3], b"###");
                }
            }
        }
    }

    /// `unix_ms` written by `push`, checked against `Timestamp`'s text: the whole row
    /// buffer, so nothing is written before it and its length is the text's.
    fn check_time(times: &mut TimeText, unix_ms: u64) {
        let mut buf = [b'#'; 128];
        let mut line = Line {
            buf: &mut buf,
            len: 3,
        };
        let len = times.push(&mut line, unix_ms);
        let want = Timestamp(i128::from(unix_ms) * 1_000_000).to_string();
        assert_eq!(&buf[3..3 + len], want.as_bytes(), "{unix_ms}");
        assert_eq!(&buf[..3], b"###");
    }

    /// Every millisecond of the four-digit years' range the cache of days is tried on
    /// (each day's first and last, every minute and millisecond of the tables, and days a
    /// table's length apart, so slots are reused) is written as `Timestamp` writes it.
    #[test]
    fn times_equal_the_timestamp_oracle() {
        let mut times = TimeText::new();
        let mut checked = 0;
        let (mut day, mut step) = (0u64, 0);
        while day * DAY_MS <= LAST_FOUR_DIGIT_MS {
            let start = day * DAY_MS;
            // Each day a different minute and millisecond: over the days, all of them.
            let inside = (step as u64 * 60_001 + step as u64 / 1_440 * 7) % DAY_MS;
            for unix_ms in [start, start + DAY_MS - 1, start + inside] {
                check_time(&mut times, unix_ms);
                checked += 1;
            }
            // Days a table apart, then across a year, then in big steps.
            day += [DAYS as u64, 1, 367, 9_973][step % 4];
            step += 1;
        }
        assert!(checked > 1_000, "{checked}");
        for minute in 0..1_440 {
            for ms in [0, 999, 59_999, minute * 41 % 60_000] {
                check_time(
                    &mut times,
                    1_700_000_000_000 / DAY_MS * DAY_MS + minute * 60_000 + ms,
                );
            }
        }
        for ms in 0..60_000 {
            check_time(&mut times, 1_700_000_000_000 + ms);
        }
    }

    /// Times past the four-digit years (expanded years, up to the last `u64` millisecond)
    /// are written whole, as `Timestamp` writes them.
    #[test]
    fn wide_years_equal_the_timestamp_oracle() {
        let mut times = TimeText::new();
        for unix_ms in [
            LAST_FOUR_DIGIT_MS,
            LAST_FOUR_DIGIT_MS + 1,
            LAST_FOUR_DIGIT_MS * 1_000 + 123,
            u64::MAX,
        ] {
            check_time(&mut times, unix_ms);
        }
    }
}
