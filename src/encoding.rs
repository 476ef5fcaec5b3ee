//! Text encodings of IDs: decimal, hex and Crockford base32. Each formats into the
//! caller's buffer without allocating, and each parse fails with a clear error.

use crate::error::ParseError;

/// Crockford's base32 alphabet: no I, L, O or U.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A text encoding of IDs. More may come (a `match` needs a `_` arm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Encoding {
    /// Plain decimal, as most systems store and print IDs.
    #[default]
    Decimal,
    /// `0x` and 16 lowercase hex digits: fixed width, so it sorts like the number.
    Hex,
    /// 13 Crockford base32 characters: fixed width, sorts like the number, case-insensitive.
    Base32,
}

impl Encoding {
    /// The longest text any encoding writes, in bytes (decimal of `u64::MAX`): the size of
    /// the buffer [`Encoding::encode`] and [`Id::encode`](crate::Id::encode) write into.
    pub const MAX_LEN: usize = 20;

    /// How many bytes `v` takes in decimal (1 for 0): what [`Encoding::write`] returns for
    /// [`Encoding::Decimal`], without writing (for padding, or sizing a buffer).
    ///
    /// ```
    /// use flakeid::Encoding;
    ///
    /// assert_eq!(Encoding::decimal_len(0), 1);
    /// assert_eq!(Encoding::decimal_len(999), 3);
    /// assert_eq!(Encoding::decimal_len(u64::MAX), Encoding::MAX_LEN);
    /// ```
    #[inline(always)]
    pub fn decimal_len(v: u64) -> usize {
        decimal_len(v)
    }

    /// Writes `id` into `buf` and returns the text.
    #[inline]
    pub fn encode(self, id: u64, buf: &mut [u8; Self::MAX_LEN]) -> &str {
        let len = self.write(id, buf);
        // Every byte written is ASCII.
        core::str::from_utf8(&buf[..len]).unwrap_or_default()
    }

    /// Writes `id` at the start of `buf` and returns its length in bytes (ASCII): the text
    /// of [`Encoding::encode`] for writers that collect bytes (the tool's rows, the
    /// service's batches), without checking it is text. The bytes of `buf` past the
    /// length may be written too (decimal stores whole blocks of eight digits).
    ///
    /// ```
    /// use flakeid::Encoding;
    ///
    /// let mut buf = [0u8; Encoding::MAX_LEN];
    /// let len = Encoding::Decimal.write(1_234_567, &mut buf);
    /// assert_eq!(&buf[..len], b"1234567");
    /// ```
    #[inline]
    pub fn write(self, id: u64, buf: &mut [u8; Self::MAX_LEN]) -> usize {
        match self {
            Encoding::Decimal => decimal(id, buf),
            Encoding::Hex => hex(id, buf),
            Encoding::Base32 => base32(id, buf),
        }
    }

    /// Parses text in this encoding (surrounding whitespace allowed; hex with or without
    /// `0x`): any `u64`. A value past `u64::MAX` (21 decimal digits, say, or 13 base32
    /// characters starting above `F`) is [`ParseError::Overflow`].
    pub fn parse(self, text: &str) -> Result<u64, ParseError> {
        let s = text.trim();
        let lead = text.len() - text.trim_start().len();
        if s.is_empty() {
            return Err(ParseError::Empty);
        }
        let value = match self {
            Encoding::Decimal => fold(s, lead, 20, 10, |b| match b {
                b'0'..=b'9' => Some(b - b'0'),
                _ => None,
            })?,
            Encoding::Hex => {
                let (s, lead) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                    Some(rest) => (rest, lead + 2),
                    None => (s, lead),
                };
                if s.is_empty() {
                    return Err(ParseError::NoDigits);
                }
                fold(s, lead, 16, 16, |b| match b {
                    b'0'..=b'9' => Some(b - b'0'),
                    b'a'..=b'f' => Some(b - b'a' + 10),
                    b'A'..=b'F' => Some(b - b'A' + 10),
                    _ => None,
                })?
            }
            Encoding::Base32 => fold(s, lead, 13, 32, base32_digit)?,
        };
        Ok(value)
    }

    /// Parses text in any encoding, by this precedence: `0x`/`0X` first is hex, digits only
    /// is decimal, anything else of 13 characters is base32; anything else again is
    /// [`ParseError::UnknownEncoding`] (a bare hex number, say: give it a `0x`).
    ///
    /// Base32 text can look like the others: a base32 ID made only of digits reads as
    /// decimal, and one that starts with `0X` (Crockford's X is a digit) reads as hex.
    /// When the encoding is known, [`Encoding::parse`] is exact (`flakeid decode
    /// --encoding base32` for streams of base32).
    ///
    /// ```
    /// use flakeid::Encoding;
    ///
    /// assert_eq!(Encoding::parse_any("0x1d5f51ed8fc7102a")?, 2116500430648709162);
    /// assert_eq!(Encoding::parse_any("0X7FFFFFFFFFF")?, 0x7ff_ffff_ffff);
    /// assert_eq!(Encoding::Base32.parse("0X7FFFFFFFFFF")?, 1053261203175357935);
    /// # Ok::<(), flakeid::ParseError>(())
    /// ```
    pub fn parse_any(text: &str) -> Result<u64, ParseError> {
        let s = text.trim();
        if s.starts_with("0x") || s.starts_with("0X") {
            Encoding::Hex.parse(text)
        } else if s.bytes().all(|b| b.is_ascii_digit()) {
            Encoding::Decimal.parse(text)
        } else if s.chars().count() == 13 {
            Encoding::Base32.parse(text)
        } else if s.is_empty() {
            Err(ParseError::Empty)
        } else {
            Err(ParseError::UnknownEncoding {
                len: s.chars().count(),
            })
        }
    }
}

fn base32_digit(b: u8) -> Option<u8> {
    let b = b.to_ascii_uppercase();
    match b {
        b'O' => Some(0),
        b'I' | b'L' => Some(1),
        _ => CROCKFORD.iter().position(|&c| c == b).map(|p| p as u8),
    }
}

fn fold(
    s: &str,
    lead: usize,
    max_len: usize,
    radix: u64,
    digit: impl Fn(u8) -> Option<u8>,
) -> Result<u64, ParseError> {
    let mut value: u64 = 0;
    for (i, b) in s.bytes().enumerate() {
        let d = digit(b).ok_or(ParseError::InvalidDigit { at: lead + i })?;
        if i >= max_len {
            return Err(ParseError::TooLong);
        }
        value = value
            .checked_mul(radix)
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or(ParseError::Overflow)?;
    }
    Ok(value)
}

/// `0x` and 16 hex digits.
fn hex(id: u64, buf: &mut [u8; Encoding::MAX_LEN]) -> usize {
    buf[0] = b'0';
    buf[1] = b'x';
    for (i, slot) in buf[2..18].iter_mut().enumerate() {
        let nibble = (id >> (60 - 4 * i)) & 0xF;
        *slot = b"0123456789abcdef"[nibble as usize];
    }
    18
}

/// 13 Crockford base32 characters.
fn base32(id: u64, buf: &mut [u8; Encoding::MAX_LEN]) -> usize {
    for (i, slot) in buf[..13].iter_mut().enumerate() {
        // 13 x 5 = 65 bits: the first character carries the top 4 bits.
        let shift = 60 - 5 * i as i32;
        let digit = if shift >= 0 { id >> shift } else { id << 1 } & 0x1F;
        *slot = CROCKFORD[digit as usize];
    }
    13
}

/// How many decimal digits `v` has (1 for 0): from its bit length, `bits * 1233 >> 12`
/// (log10 2 is about 1233 / 4096) is the count less one or exact, and one comparison
/// with a power of ten says which; `checked_ilog10` costs about 25 instructions more.
#[inline(always)]
fn decimal_len(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut p = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    let bits = 64 - (v | 1).leading_zeros();
    let guess = (bits * 1233) >> 12;
    (guess as usize + usize::from(v >= POW10[guess as usize])).max(1)
}

/// Writes `v` in decimal at the start of `buf`, straight into place (its length is known
/// first), in blocks of eight digits: at most two divisions of the `u64` (by constants,
/// so multiplications), each block's digits found all at once in the lanes of one `u64`
/// ([`eight`]), without a branch on the digits. Returns the length.
#[inline(always)]
fn decimal(v: u64, buf: &mut [u8; Encoding::MAX_LEN]) -> usize {
    const E8: u64 = 100_000_000;
    let len = decimal_len(v);
    // Each block is stored as eight bytes; a leading block that is shorter is shifted so
    // that its digits come first, and the blocks after it overwrite what it left past them.
    let lead = |block: u64, digits: usize| eight(block as u32) >> (8 * (8 - digits));
    if v < E8 {
        buf[..8].copy_from_slice(&lead(v, len).to_le_bytes());
    } else if v < E8 * E8 {
        let (high, low) = eight_pair((v / E8) as u32, (v % E8) as u32);
        buf[..8].copy_from_slice(&(high >> (8 * (16 - len))).to_le_bytes());
        buf[len - 8..len].copy_from_slice(&low.to_le_bytes());
    } else {
        let high = v / E8;
        let (middle, low) = eight_pair((high % E8) as u32, (v % E8) as u32);
        buf[..8].copy_from_slice(&lead(high / E8, len - 16).to_le_bytes());
        buf[len - 16..len - 8].copy_from_slice(&middle.to_le_bytes());
        buf[len - 8..len].copy_from_slice(&low.to_le_bytes());
    }
    len
}

/// [`eight`] of two blocks at once, in the lanes of one SSE2 register (every x86-64 has
/// SSE2): each block cut into its two halves of four digits (32-bit lanes) by a
/// reciprocal in 64-bit lanes, then the halves split into pairs in 16-bit lanes and into
/// digits in bytes by the same reciprocals as [`eight`]; about half the instructions of
/// two [`eight`]s. Tested against them.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
#[inline(always)]
#[allow(unsafe_code)] // SSE2 intrinsics, called where the build enables SSE2
fn eight_pair(a: u32, b: u32) -> (u64, u64) {
    use core::arch::x86_64::{
        _mm_add_epi8, _mm_cvtsi128_si64, _mm_mul_epu32, _mm_mulhi_epu16, _mm_mullo_epi16,
        _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8, _mm_set1_epi16, _mm_set1_epi64x,
        _mm_slli_epi16, _mm_slli_epi32, _mm_slli_epi64, _mm_srli_epi16, _mm_srli_epi64,
        _mm_sub_epi16, _mm_sub_epi32, _mm_unpackhi_epi64,
    };
    // SAFETY: SSE2 is enabled for the whole build (the `cfg` above), so the CPU has it;
    // the intrinsics touch no memory.
    unsafe {
        // Each block in a 64-bit lane, cut into its high and low four digits: v / 10^4 =
        // v * 3,518,437,209 >> 45 for v < 10^8; the high half in the lane's lower 32 bits.
        let v = _mm_set_epi64x(i64::from(b), i64::from(a));
        let high = _mm_srli_epi64::<45>(_mm_mul_epu32(v, _mm_set1_epi64x(3_518_437_209)));
        let low = _mm_sub_epi32(v, _mm_mul_epu32(high, _mm_set1_epi64x(10_000)));
        let x = _mm_or_si128(high, _mm_slli_epi64::<32>(low));
        // n / 100 = (n * 5243 >> 16) >> 3 for n < 43,699, in every 16-bit lane (the upper
        // half of each 32-bit lane is zero and stays so).
        let hundreds = _mm_srli_epi16::<3>(_mm_mulhi_epu16(x, _mm_set1_epi16(5_243)));
        let rest = _mm_sub_epi16(x, _mm_mullo_epi16(hundreds, _mm_set1_epi16(100)));
        let pairs = _mm_or_si128(hundreds, _mm_slli_epi32::<16>(rest));
        // p / 10 = p * 103 >> 10 for p < 100.
        let tens = _mm_srli_epi16::<10>(_mm_mullo_epi16(pairs, _mm_set1_epi16(103)));
        let units = _mm_sub_epi16(pairs, _mm_mullo_epi16(tens, _mm_set1_epi16(10)));
        let digits = _mm_or_si128(tens, _mm_slli_epi16::<8>(units));
        let ascii = _mm_add_epi8(digits, _mm_set1_epi8(b'0' as i8));
        (
            _mm_cvtsi128_si64(ascii) as u64,
            _mm_cvtsi128_si64(_mm_unpackhi_epi64(ascii, ascii)) as u64,
        )
    }
}

/// [`eight`] of two blocks.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
#[inline(always)]
fn eight_pair(a: u32, b: u32) -> (u64, u64) {
    (eight(a), eight(b))
}

/// The eight decimal digits of `v` (below 10^8, leading zeros included) as ASCII, the most
/// significant first in memory (the lowest byte of the little-endian word). SWAR: the two
/// halves of four digits sit in 32-bit lanes, split into pairs in 16-bit lanes, then into
/// digits in bytes, each step one multiplication by a reciprocal that is exact for the
/// lane's range (n / 100 = n * 10486 >> 20 for n < 10^4; n / 10 = n * 103 >> 10 for
/// n < 100), with no carry from one lane into the next.
#[inline(always)]
fn eight(v: u32) -> u64 {
    // Lane 0 the high four digits, lane 1 the low four.
    let x = u64::from(v / 10_000) | u64::from(v % 10_000) << 32;
    let hundreds = ((x * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let pairs = hundreds | (x - hundreds * 100) << 16;
    let tens = ((pairs * 103) >> 10) & 0x000F_000F_000F_000F;
    let digits = tens | (pairs - tens * 10) << 8;
    digits + 0x3030_3030_3030_3030
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Encoding; 3] = [Encoding::Decimal, Encoding::Hex, Encoding::Base32];

    /// Two blocks at once are the digits of each block alone, at the ends of the range,
    /// around every power of ten, and on a spread of values.
    #[test]
    fn eight_pair_equals_two_eights() {
        let mut values: [u32; 64] = [0; 64];
        let mut x = 0x9E37_79B9u32;
        for (i, v) in values.iter_mut().enumerate() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *v = match i % 4 {
                0 => 10u32.pow((i / 4 % 8) as u32),
                1 => 10u32.pow((i / 4 % 8) as u32) - 1,
                2 => 99_999_999 - (i as u32),
                _ => x % 100_000_000,
            };
        }
        for &a in &values {
            for &b in &values {
                assert_eq!(eight_pair(a, b), (eight(a), eight(b)), "{a} {b}");
            }
        }
    }

    /// The digit count from the bit length is `checked_ilog10`'s, around every power of
    /// ten and of two, at the extremes, and on a spread of values.
    #[test]
    fn the_digit_count_is_the_logarithm_s() {
        let mut values = vec![0, 1, u64::MAX, u64::MAX - 1];
        for k in 0..20 {
            let p = 10u64.pow(k);
            values.extend([p - 1, p, p + 1]);
        }
        for k in 0..64 {
            values.extend([(1u64 << k) - 1, 1u64 << k, (1u64 << k) + 1]);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
            let want = v.checked_ilog10().map_or(1, |l| l as usize + 1);
            assert_eq!(decimal_len(v), want, "{v}");
        }
    }

    /// The decimal writer agrees with `core::fmt` at every length and around every power
    /// of ten (where the blocks of eight digits split).
    #[test]
    fn decimal_is_the_standard_decimal_at_every_length() {
        let mut values = std::vec![0u64, u64::MAX, u64::MAX - 1];
        for k in 0..20 {
            let p = 10u64.pow(k);
            values.extend([p - 1, p, p + 1, p.saturating_mul(7).saturating_add(3)]);
        }
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..100_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            values.push(rng >> (rng % 64));
        }
        let mut buf = [0u8; Encoding::MAX_LEN];
        for v in values {
            assert_eq!(
                Encoding::Decimal.encode(v, &mut buf),
                std::format!("{v}"),
                "{v}"
            );
        }
    }

    #[test]
    fn round_trip_and_sort_order() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut values = vec![0, 1, 9, 10, 31, 32, i64::MAX as u64, 1 << 63, u64::MAX];
        // Every length of decimal, at both ends.
        for p in 1..20 {
            values.extend([10u64.pow(p) - 1, 10u64.pow(p)]);
        }
        for _ in 0..10_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            values.push(rng >> (rng % 64));
        }
        for e in ALL {
            let mut buf = [0u8; Encoding::MAX_LEN];
            for &v in &values {
                let text = e.encode(v, &mut buf).to_owned();
                assert_eq!(e.parse(&text), Ok(v), "{e:?} {text}");
                if e == Encoding::Decimal {
                    assert_eq!(text, v.to_string());
                }
                // parse_any reads every encoding back exactly, except base32 text that
                // looks like another encoding (documented): digits only read as decimal,
                // a leading `0X` as hex. Those must still parse, as the other encoding.
                let looks_decimal = text.bytes().all(|b| b.is_ascii_digit());
                let looks_hex = text.starts_with("0X");
                let any = Encoding::parse_any(&text);
                if e != Encoding::Base32 || !(looks_decimal || looks_hex) {
                    assert_eq!(any, Ok(v), "{e:?} {text}");
                } else if looks_decimal {
                    assert_eq!(any, Encoding::Decimal.parse(&text), "{text}");
                } else {
                    assert_eq!(any, Encoding::Hex.parse(&text), "{text}");
                }
            }
            if e != Encoding::Decimal {
                let mut sorted: Vec<u64> = values.clone();
                sorted.sort_unstable();
                let texts: Vec<String> = sorted
                    .iter()
                    .map(|&v| e.encode(v, &mut buf).to_owned())
                    .collect();
                assert!(
                    texts.windows(2).all(|w| w[0] <= w[1]),
                    "{e:?} sorts like the number"
                );
            }
        }
    }

    #[test]
    fn known_texts() {
        let mut buf = [0u8; Encoding::MAX_LEN];
        let id = 2_116_500_430_648_709_162;
        assert_eq!(
            Encoding::Decimal.encode(id, &mut buf),
            "2116500430648709162"
        );
        assert_eq!(Encoding::Hex.encode(id, &mut buf), "0x1d5f51ed8fc7102a");
        assert_eq!(Encoding::Base32.encode(0, &mut buf), "0000000000000");
        assert_eq!(
            Encoding::Base32.encode(i64::MAX as u64, &mut buf),
            "7ZZZZZZZZZZZZ"
        );
        assert_eq!(Encoding::Base32.parse("7zzzzzzzzzzzz"), Ok(i64::MAX as u64));
        // 13 x 5 = 65 bits: the first character carries the top 4 of 64.
        assert_eq!(Encoding::Base32.encode(u64::MAX, &mut buf), "FZZZZZZZZZZZZ");
        assert_eq!(Encoding::Base32.encode(1 << 63, &mut buf), "8000000000000");
        assert_eq!(
            Encoding::Decimal.encode(u64::MAX, &mut buf),
            "18446744073709551615"
        );
        assert_eq!(
            Encoding::Hex.encode(u64::MAX, &mut buf),
            "0xffffffffffffffff"
        );
        assert_eq!(Encoding::parse_any("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(Encoding::parse_any("0xffffffffffffffff"), Ok(u64::MAX));
        assert_eq!(Encoding::parse_any("fzzzzzzzzzzzz"), Ok(u64::MAX));
        assert_eq!(Encoding::Base32.parse("0000000000O0I"), Ok(1));
    }

    #[test]
    fn bad_text_gets_its_own_error() {
        let e = |k| Err(k);
        assert_eq!(Encoding::Decimal.parse("  "), e(ParseError::Empty));
        assert_eq!(
            Encoding::Decimal.parse(" 12a"),
            e(ParseError::InvalidDigit { at: 3 })
        );
        assert_eq!(
            Encoding::Decimal.parse("-1"),
            e(ParseError::InvalidDigit { at: 0 })
        );
        assert_eq!(
            Encoding::Decimal.parse("18446744073709551616"),
            e(ParseError::Overflow)
        );
        assert_eq!(
            Encoding::Decimal.parse("99999999999999999999"),
            e(ParseError::Overflow)
        );
        assert_eq!(
            Encoding::Decimal.parse("000000000000000000001"),
            e(ParseError::TooLong)
        );
        assert_eq!(Encoding::Hex.parse("0x"), e(ParseError::NoDigits));
        assert!(
            ParseError::NoDigits
                .to_string()
                .contains("no hex digits after 0x")
        );
        assert!(
            ParseError::InvalidDigit { at: 0 }
                .to_string()
                .contains("byte 1 (counting from 1)")
        );
        assert!(
            ParseError::UnknownEncoding { len: 1 }
                .to_string()
                .contains("(this has 1 character)")
        );
        assert_eq!(
            Encoding::Hex.parse("0x10000000000000000"),
            e(ParseError::TooLong)
        );
        assert_eq!(
            Encoding::Base32.parse("U000000000000"),
            e(ParseError::InvalidDigit { at: 0 })
        );
        assert_eq!(
            Encoding::Base32.parse("G000000000000"),
            e(ParseError::Overflow)
        );
        assert_eq!(
            Encoding::parse_any("hello"),
            e(ParseError::UnknownEncoding { len: 5 })
        );
        // A 12-character base32 ID is named as such, not "invalid character".
        assert_eq!(
            Encoding::parse_any("7ZZZZZZZZZZZ"),
            e(ParseError::UnknownEncoding { len: 12 })
        );
        assert_eq!(Encoding::parse_any("   "), e(ParseError::Empty));
    }
}
