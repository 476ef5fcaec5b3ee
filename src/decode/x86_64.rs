//! The AVX2 and AVX-512 kernels, behind the CPU tokens of `Backend`; each hands its
//! tail to the scalar kernel.
#![allow(unsafe_code)] // the SIMD kernels: every intrinsic is unsafe

use core::arch::x86_64::*;

use super::{Out, Plan, scalar};
use crate::layout::Layout;

/// `a * b mod 2^64` per lane from AVX2's 32 x 32 -> 64 multiply.
#[inline(always)]
unsafe fn mul64_avx2(a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: called only from AVX2-enabled functions.
    unsafe {
        let lo = _mm256_mul_epu32(a, b);
        let cross = _mm256_add_epi64(
            _mm256_mul_epu32(_mm256_srli_epi64::<32>(a), b),
            _mm256_mul_epu32(a, _mm256_srli_epi64::<32>(b)),
        );
        _mm256_add_epi64(lo, _mm256_slli_epi64::<32>(cross))
    }
}

/// Stores 4 `u64` lanes at `p`: a non-temporal store if `S` (then `p` must be 32-byte
/// aligned), else an unaligned one.
#[inline(always)]
unsafe fn put_avx2<const S: bool>(p: *mut u64, v: __m256i) {
    // SAFETY: called only from AVX2-enabled functions, with `p` valid for 32 bytes (and
    // 32-byte aligned when `S`).
    unsafe {
        if S {
            _mm256_stream_si256(p.cast(), v)
        } else {
            _mm256_storeu_si256(p.cast(), v)
        }
    }
}

/// Stores the low halves of 4 `u64` lanes (each below 2^32) as 4 `u32` at `p`: a
/// non-temporal store if `S` (then `p` must be 16-byte aligned), else an unaligned one.
#[inline(always)]
unsafe fn put32_avx2<const S: bool>(p: *mut u32, v: __m256i) {
    // SAFETY: called only from AVX2-enabled functions, with `p` valid for 16 bytes (and
    // 16-byte aligned when `S`).
    unsafe {
        let low = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
            v,
            _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
        ));
        if S {
            _mm_stream_si128(p.cast(), low)
        } else {
            _mm_storeu_si128(p.cast(), low)
        }
    }
}

/// # Safety
/// - The CPU must have AVX2.
/// - Every non-null column of `out` must be valid for `ids.len()` writes.
/// - If `N`, the `u32` sequence and node columns are used, else the `u64` ones.
/// - If `S` (non-temporal stores), every non-null column starts on a 64-byte boundary.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2<const N: bool, const S: bool>(
    plan: &Plan,
    layout: &Layout,
    ids: &[u64],
    out: &Out,
) -> u64 {
    const W: usize = 4;
    let chunks = ids.len() / W;
    let ts = _mm_cvtsi64_si128(i64::from(plan.time_shift));
    let ss = _mm_cvtsi64_si128(i64::from(plan.sequence_shift));
    let ns = _mm_cvtsi64_si128(i64::from(plan.node_shift));
    let smask = _mm256_set1_epi64x(plan.sequence_mask as i64);
    let nmask = _mm256_set1_epi64x(plan.node_mask as i64);
    let invalid = _mm256_set1_epi64x(plan.invalid as i64);
    let unit = _mm256_set1_epi64x(plan.unit_ms.unwrap_or(1) as i64);
    let base = _mm256_set1_epi64x(plan.base_ms as i64);
    let want_ms = !out.unix_ms.is_null() && plan.unit_ms.is_some();
    let ms_is_ticks = plan.unit_ms == Some(1);
    let mut bad = _mm256_setzero_si256();
    for c in 0..chunks {
        let row = c * W;
        // SAFETY: `row + W <= ids.len()`, and each non-null column is `ids.len()` long;
        // loads are unaligned. With `S` every column starts 64-byte aligned and `row` is a
        // multiple of 4, so each `u64` store is 32-byte and each `u32` store 16-byte
        // aligned.
        unsafe {
            let v = _mm256_loadu_si256(ids.as_ptr().add(row).cast());
            bad = _mm256_or_si256(bad, _mm256_and_si256(v, invalid));
            let ticks = _mm256_srl_epi64(v, ts);
            if !out.ticks.is_null() {
                put_avx2::<S>(out.ticks.add(row), ticks);
            }
            if want_ms {
                let ms = if ms_is_ticks {
                    ticks
                } else {
                    mul64_avx2(ticks, unit)
                };
                put_avx2::<S>(out.unix_ms.add(row), _mm256_add_epi64(ms, base));
            }
            // `N` picks the `u32` columns at compile time: one pointer test per field.
            let s = || _mm256_and_si256(_mm256_srl_epi64(v, ss), smask);
            let n = || _mm256_and_si256(_mm256_srl_epi64(v, ns), nmask);
            if N {
                if !out.sequence32.is_null() {
                    put32_avx2::<S>(out.sequence32.add(row), s());
                }
                if !out.node32.is_null() {
                    put32_avx2::<S>(out.node32.add(row), n());
                }
            } else {
                if !out.sequence.is_null() {
                    put_avx2::<S>(out.sequence.add(row), s());
                }
                if !out.node.is_null() {
                    put_avx2::<S>(out.node.add(row), n());
                }
            }
        }
    }
    if S {
        // Non-temporal stores are weakly ordered: fence them before the ordinary stores
        // of the tail and before the caller hands the columns to anyone.
        // SAFETY: SSE is part of x86-64. `_mm_sfence` is an unsafe fn in Rust 1.89 (the
        // MSRV) and safe in later releases, hence the allowance.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_sfence();
        }
    }
    let mut lanes = [0u64; W];
    // SAFETY: `lanes` is 32 bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), bad) };
    let done = chunks * W;
    let mut bad = lanes.iter().fold(0, |a, b| a | b);
    // SAFETY: `done <= ids.len()`; the columns are as this function requires.
    bad |= unsafe { finish::<N>(plan, layout, ids, out, done) };
    bad
}

/// Stores 8 `u64` lanes at `p`: a non-temporal store if `S` (then `p` must be 64-byte
/// aligned), else an unaligned one.
#[inline(always)]
unsafe fn put_avx512<const S: bool>(p: *mut u64, v: __m512i) {
    // SAFETY: called only from AVX-512F functions, with `p` valid for 64 bytes (and
    // 64-byte aligned when `S`).
    unsafe {
        if S {
            _mm512_stream_si512(p.cast(), v)
        } else {
            _mm512_storeu_si512(p.cast(), v)
        }
    }
}

/// Stores 8 `u64` lanes (each below 2^32) truncated to 8 `u32` at `p`: a non-temporal
/// store if `S` (then `p` must be 32-byte aligned), else an unaligned one.
#[inline(always)]
unsafe fn put32_avx512<const S: bool>(p: *mut u32, v: __m512i) {
    // SAFETY: called only from AVX-512F functions, with `p` valid for 32 bytes (and
    // 32-byte aligned when `S`).
    unsafe {
        let low = _mm512_cvtepi64_epi32(v);
        if S {
            _mm256_stream_si256(p.cast(), low)
        } else {
            _mm256_storeu_si256(p.cast(), low)
        }
    }
}

/// # Safety
/// - The CPU must have AVX-512 F and DQ.
/// - Every non-null column of `out` must be valid for `ids.len()` writes.
/// - If `N`, the `u32` sequence and node columns are used, else the `u64` ones.
/// - If `S` (non-temporal stores), every non-null column starts on a 64-byte boundary.
#[target_feature(enable = "avx512f,avx512dq")]
pub(super) unsafe fn avx512<const N: bool, const S: bool>(
    plan: &Plan,
    layout: &Layout,
    ids: &[u64],
    out: &Out,
) -> u64 {
    const W: usize = 8;
    let chunks = ids.len() / W;
    let ts = _mm_cvtsi64_si128(i64::from(plan.time_shift));
    let ss = _mm_cvtsi64_si128(i64::from(plan.sequence_shift));
    let ns = _mm_cvtsi64_si128(i64::from(plan.node_shift));
    let smask = _mm512_set1_epi64(plan.sequence_mask as i64);
    let nmask = _mm512_set1_epi64(plan.node_mask as i64);
    let invalid = _mm512_set1_epi64(plan.invalid as i64);
    let unit = _mm512_set1_epi64(plan.unit_ms.unwrap_or(1) as i64);
    let base = _mm512_set1_epi64(plan.base_ms as i64);
    let want_ms = !out.unix_ms.is_null() && plan.unit_ms.is_some();
    let mut bad = _mm512_setzero_si512();
    for c in 0..chunks {
        let row = c * W;
        // SAFETY: `row + W <= ids.len()`, and each non-null column is `ids.len()` long;
        // loads are unaligned. With `S` every column starts 64-byte aligned and `row` is a
        // multiple of 8, so each `u64` store is 64-byte and each `u32` store 32-byte
        // aligned.
        unsafe {
            let v = _mm512_loadu_si512(ids.as_ptr().add(row).cast());
            bad = _mm512_or_si512(bad, _mm512_and_si512(v, invalid));
            let ticks = _mm512_srl_epi64(v, ts);
            if !out.ticks.is_null() {
                put_avx512::<S>(out.ticks.add(row), ticks);
            }
            if want_ms {
                let ms = _mm512_add_epi64(_mm512_mullo_epi64(ticks, unit), base);
                put_avx512::<S>(out.unix_ms.add(row), ms);
            }
            // `N` picks the `u32` columns at compile time: one pointer test per field.
            let s = || _mm512_and_si512(_mm512_srl_epi64(v, ss), smask);
            let n = || _mm512_and_si512(_mm512_srl_epi64(v, ns), nmask);
            if N {
                if !out.sequence32.is_null() {
                    put32_avx512::<S>(out.sequence32.add(row), s());
                }
                if !out.node32.is_null() {
                    put32_avx512::<S>(out.node32.add(row), n());
                }
            } else {
                if !out.sequence.is_null() {
                    put_avx512::<S>(out.sequence.add(row), s());
                }
                if !out.node.is_null() {
                    put_avx512::<S>(out.node.add(row), n());
                }
            }
        }
    }
    if S {
        // Non-temporal stores are weakly ordered: fence them before the ordinary stores
        // of the tail and before the caller hands the columns to anyone.
        // SAFETY: SSE is part of x86-64. `_mm_sfence` is an unsafe fn in Rust 1.89 (the
        // MSRV) and safe in later releases, hence the allowance.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_sfence();
        }
    }
    let done = chunks * W;
    // SAFETY: `done <= ids.len()`; the columns are as this function requires.
    _mm512_reduce_or_epi64(bad) as u64 | unsafe { finish::<N>(plan, layout, ids, out, done) }
}

/// The tail after the vector loop, and the unix_ms column of layouts whose unit is not a
/// whole number of milliseconds (exact 128-bit arithmetic, per ID).
///
/// # Safety
/// `done <= ids.len()`, and every non-null column of `out` must be valid for `ids.len()`
/// writes.
#[inline(always)]
unsafe fn finish<const N: bool>(
    plan: &Plan,
    layout: &Layout,
    ids: &[u64],
    out: &Out,
    done: usize,
) -> u64 {
    // SAFETY: rows `done..ids.len()` are within every non-null column (the caller's
    // contract).
    let bad = unsafe { scalar::kernel::<N>(plan, layout, &ids[done..], out, done) };
    if plan.unit_ms.is_none() && !out.unix_ms.is_null() {
        for (row, &id) in ids[..done].iter().enumerate() {
            // SAFETY: `row < ids.len()`, within the column (the caller's contract).
            unsafe { *out.unix_ms.add(row) = layout.unix_ms_of_unchecked(id >> plan.time_shift) };
        }
    }
    bad
}
