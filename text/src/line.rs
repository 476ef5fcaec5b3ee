//! A row of text being written in place ([`Line`]: numbers, bytes and padding as
//! fixed-size stores) and the RFC 3339 text of its time ([`SecondCache`]: the current
//! second's, and the dates of recent days), below the row writers of `rows.rs`.

use flakeid::Encoding;
use flakeid::rfc3339::{self, Timestamp};

pub(crate) const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The most one row takes in the batch's text, over-copies included: a row is at most
/// about 310 bytes (nine 20-digit numbers, a timestamp and the keys), and the fixed-size
/// copies below write up to `TICK_TEXT` (128) bytes past where the row then goes on.
pub const ROW_MAX: usize = 512;

/// The room kept for the part of a row that only the tick decides (at most about 80 bytes).
pub(crate) const TICK_TEXT: usize = 128;

/// A row being written straight into the batch's text, from `len`. Numbers go in place,
/// four digits a step, from their known length; padding and the cached tick text are
/// fixed-size copies (no `memset`/`memmove` call per piece), of which only `len` counts.
pub(crate) struct Line<'a> {
    pub(crate) buf: &'a mut [u8],
    pub(crate) len: usize,
}

impl<'a> Line<'a> {
    /// A row written into `out` from `at`, over [`ROW_MAX`] bytes (`out` grown with zeros
    /// first if it is shorter).
    #[inline(always)]
    pub(crate) fn at(out: &'a mut Vec<u8>, at: usize) -> Line<'a> {
        if out.len() < at.saturating_add(ROW_MAX) {
            out.resize(at + ROW_MAX, 0);
        }
        Line {
            buf: &mut out[at..at + ROW_MAX],
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

    /// `v` in decimal, by the core's writer (four digits a step), straight into the row
    /// (which keeps the 20 bytes' slack it may write).
    #[inline(always)]
    pub(crate) fn u64(&mut self, v: u64) {
        if v < 10_000 {
            return self.small(v as u32);
        }
        let at: &mut [u8; Encoding::MAX_LEN] = (&mut self.buf
            [self.len..self.len + Encoding::MAX_LEN])
            .try_into()
            .expect("20 bytes");
        self.len += Encoding::Decimal.write(v, at);
    }

    /// `v` (below 10,000: a sequence, node or part of one) without a branch on its length,
    /// which varies from row to row in real data: its four digits found at once in the
    /// bytes of one word (SWAR), leading zeros shifted out, stored as one 4-byte word of
    /// which the length counts.
    #[inline(always)]
    pub(crate) fn small(&mut self, v: u32) {
        // The two pairs of digits in 16-bit lanes (v / 100 = v * 5243 >> 19 for v < 43,699),
        // then each pair's two digits in bytes (p / 10 = p * 103 >> 10 for p < 100): the
        // first digit in the lowest byte.
        let high = (v * 5_243) >> 19;
        let pairs = high | (v - high * 100) << 16;
        let tens = ((pairs * 103) >> 10) & 0x000F_000F;
        let digits = tens | (pairs - tens * 10) << 8;
        // Leading zeros are the low bytes that are zero; the last digit always counts.
        let zeros = (digits | 1 << 24).trailing_zeros() / 8;
        let word = (digits + 0x3030_3030) >> (8 * zeros);
        self.buf[self.len..self.len + 4].copy_from_slice(&word.to_le_bytes());
        self.len += 4 - zeros as usize;
    }

    /// `v` right-aligned in `width` columns (as `{:>width$}`).
    #[inline]
    pub(crate) fn right(&mut self, v: u64, width: usize) {
        self.spaces(width.saturating_sub(Encoding::decimal_len(v)));
        self.u64(v);
    }

    /// `v` left-aligned in `width` columns (as `{:<width$}`).
    #[inline]
    pub(crate) fn left(&mut self, v: u64, width: usize) {
        let len = Encoding::decimal_len(v);
        self.u64(v);
        self.spaces(width.saturating_sub(len));
    }
}

/// The room for a second's RFC 3339 text before the milliseconds: 19 bytes for a
/// four-digit year, up to about 42 for the widest expanded one.
const SECOND_TEXT: usize = 48;

/// The last second whose year has four digits (9999-12-31T23:59:59Z).
const LAST_FOUR_DIGIT_SECOND: u64 = 253_402_300_799;

/// Days in the cache of dates: a direct-mapped table, so that a column of IDs spread over
/// a year or so (in any order) works out each date once.
const DAYS: usize = 512;

/// A day's date in the cache: the day, then its `YYYY-MM-` and its `DDT` as the
/// little-endian words they are stored as.
#[derive(Debug, Clone, Copy)]
struct Day {
    day: u32,
    year_month: u64,
    day_t: u32,
}

/// The RFC 3339 text of the last second seen, up to the `.` before the milliseconds, and
/// the dates of recent days.
#[derive(Debug)]
pub(crate) struct SecondCache {
    second: u64,
    prefix: [u8; SECOND_TEXT],
    len: usize,
    days: Box<[Day; DAYS]>,
}

impl SecondCache {
    pub(crate) fn new() -> Self {
        SecondCache {
            second: u64::MAX,
            prefix: [0; SECOND_TEXT],
            len: 0,
            days: Box::new(
                [Day {
                    day: u32::MAX,
                    year_month: 0,
                    day_t: 0,
                }; DAYS],
            ),
        }
    }

    /// `second` (at most [`LAST_FOUR_DIGIT_SECOND`]) as `YYYY-MM-DDTHH:MM:SS`: the date from
    /// the cache of days (worked out by `rfc3339::date_time` on a miss), the time of day
    /// by multiplications; built in three words, in registers.
    #[inline(always)]
    fn date_time(&mut self, second: u64) -> Option<[u8; 19]> {
        let day = (second / 86_400) as u32;
        let of_day = (second % 86_400) as u32;
        let slot = &mut self.days[day as usize % DAYS];
        if slot.day != day {
            *slot = Self::day(day)?;
        }
        let pair = |v: u32| {
            let at = v as usize * 2;
            u64::from(u16::from_le_bytes([PAIRS[at], PAIRS[at + 1]]))
        };
        let colon = u64::from(b':');
        let time = u64::from(slot.day_t)
            | pair(of_day / 3600) << 24
            | colon << 40
            | pair(of_day / 60 % 60) << 48;
        let seconds = colon | pair(of_day % 60) << 8;
        let mut text = [0; 19];
        text[..8].copy_from_slice(&slot.year_month.to_le_bytes());
        text[8..16].copy_from_slice(&time.to_le_bytes());
        text[16..].copy_from_slice(&seconds.to_le_bytes()[..3]);
        Some(text)
    }

    /// A day's date, for the cache.
    #[cold]
    fn day(day: u32) -> Option<Day> {
        let t = rfc3339::date_time(i64::from(day) * 86_400)?;
        Some(Day {
            day,
            year_month: u64::from_le_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]]),
            day_t: u32::from_le_bytes([t[8], t[9], t[10], 0]),
        })
    }

    /// Appends `unix_ms` as RFC 3339 (`2026-10-31T12:00:00.000Z`, or the expanded year);
    /// returns its length.
    #[inline(always)]
    pub(crate) fn push(&mut self, out: &mut Line<'_>, unix_ms: u64) -> usize {
        let second = unix_ms / 1000;
        if second == self.second {
            // A fixed-size copy of which the length counts.
            out.buf[out.len..out.len + SECOND_TEXT].copy_from_slice(&self.prefix);
            out.len += self.len;
        } else if let Some(text) = (second <= LAST_FOUR_DIGIT_SECOND)
            .then(|| self.date_time(second))
            .flatten()
        {
            // A new second is written into the row from the words just made, not copied
            // back out of the cache it was stored in a moment before (a load of bytes
            // still on their way to memory waits for them).
            self.second = second;
            self.prefix[..text.len()].copy_from_slice(&text);
            self.len = text.len();
            out.bytes(&text);
        } else {
            self.fill_wide(second);
            out.buf[out.len..out.len + SECOND_TEXT].copy_from_slice(&self.prefix);
            out.len += self.len;
        }
        let ms = (unix_ms % 1000) as usize;
        let pair = (ms % 100) * 2;
        out.bytes(&[
            b'.',
            b'0' + (ms / 100) as u8,
            PAIRS[pair],
            PAIRS[pair + 1],
            b'Z',
        ]);
        self.len + 5
    }

    /// The cache for a second whose year is not of four digits.
    #[cold]
    fn fill_wide(&mut self, second: u64) {
        self.second = second;
        let text = Timestamp(i128::from(second) * 1_000_000_000).to_string();
        // A whole second is written with `.000Z`: keep what comes before it.
        let cut = text.len().saturating_sub(5).min(SECOND_TEXT);
        self.prefix[..cut].copy_from_slice(&text.as_bytes()[..cut]);
        self.len = cut;
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
            line.small(v);
            let len = line.len;
            assert_eq!(&buf[1..len], v.to_string().as_bytes(), "{v}");
            assert_eq!(buf[0], b'#');
        }
    }

    /// Every second of the four-digit years' range the cache of days is tried on (each
    /// day's first and last second, and days a table's length apart, so slots are
    /// reused) is written as `Timestamp` writes it.
    #[test]
    fn date_times_equal_the_timestamp_oracle() {
        let mut cache = SecondCache::new();
        let mut checked = 0;
        let (mut day, mut step) = (0u64, 0);
        while day * 86_400 <= LAST_FOUR_DIGIT_SECOND {
            for second in [day * 86_400, day * 86_400 + 86_399, day * 86_400 + 45_296] {
                let got = cache.date_time(second).unwrap();
                let want = Timestamp(i128::from(second) * 1_000_000_000).to_string();
                assert_eq!(&got[..], &want.as_bytes()[..19], "{second}");
                checked += 1;
            }
            // Days a table apart, then across a year, then in big steps.
            day += [DAYS as u64, 1, 367, 9_973][step % 4];
            step += 1;
        }
        assert!(checked > 1_000, "{checked}");
    }
}
