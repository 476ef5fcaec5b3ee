//! Picking a backend by measuring ([`Backend::fastest`]) or by name
//! ([`Backend::from_name`]), and [`Decoder::new`], which decodes on the pick: above the
//! decoder, which the measurement runs.

#[cfg(feature = "std")]
use super::Columns;
use super::{Avx2, Avx512, Backend, Decoder};
use crate::layout::Layout;

impl Decoder {
    /// A decoder on the fastest backend this CPU has: [`Backend::fastest`] (measured once
    /// per process) with `std`, [`Backend::best`]'s rule without.
    pub fn new(layout: &Layout) -> Decoder {
        #[cfg(feature = "std")]
        let backend = Backend::fastest();
        #[cfg(not(feature = "std"))]
        let backend = Backend::best();
        Decoder::with_backend(layout, backend)
    }
}

impl Backend {
    /// The fastest backend on this CPU, measured once per process and kept: each available
    /// backend decodes the same 2,048 IDs into four columns (placed 16 bytes past a 64-byte
    /// boundary, as `malloc` places a `Vec<u64>`), best of several rounds, and
    /// [`Backend::best`]'s pick stands unless another is at least 5% faster. [`Decoder::new`] uses it. The rule of [`Backend::best`] is
    /// right on AMD Zen 4 (AVX2) but not on Intel cores with full-width AVX-512, where
    /// AVX-512 is faster (BENCHMARKS.md); measuring needs no table of CPUs. Every backend gives
    /// the same columns, so the pick changes only the speed.
    #[cfg(feature = "std")]
    pub fn fastest() -> Backend {
        static PICK: std::sync::OnceLock<Backend> = std::sync::OnceLock::new();
        *PICK.get_or_init(calibrate)
    }

    /// The backend named `scalar`, `avx2` or `avx512`, if this CPU (and build) runs it;
    /// `auto` is [`Backend::fastest`] (with `std`; else [`Backend::best`]).
    ///
    /// ```
    /// use flakeid::decode::Backend;
    ///
    /// assert_eq!(Backend::from_name("scalar"), Some(Backend::Scalar));
    /// assert_eq!(Backend::from_name("avx2").map(Backend::name), flakeid::decode::Avx2::detect().map(|_| "avx2"));
    /// assert_eq!(Backend::from_name("sse9"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Backend> {
        match name {
            "auto" => {
                #[cfg(feature = "std")]
                return Some(Backend::fastest());
                #[cfg(not(feature = "std"))]
                return Some(Backend::best());
            }
            "scalar" => Some(Backend::Scalar),
            "avx2" => Avx2::detect().map(Backend::Avx2),
            "avx512" => Avx512::detect().map(Backend::Avx512),
            _ => None,
        }
    }
}

/// [`Backend::fastest`]'s measurement: each available backend on 2,048 Snowflake IDs into
/// four columns placed as `malloc` places a `Vec<u64>`, best of 5 rounds of 4 decodes each.
#[cfg(feature = "std")]
fn calibrate() -> Backend {
    const N: usize = 2048;
    if Backend::available().nth(1).is_none() {
        return Backend::Scalar; // nothing to measure
    }
    let layout = Layout::snowflake();
    let ids: std::vec::Vec<u64> = (0..N as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & layout.max_id())
        .collect();
    // Columns placed as `malloc` places a `Vec<u64>`: 16 bytes past a 64-byte boundary.
    // Where the columns sit decides the order: on Zen 4, 32-byte-aligned columns make AVX2
    // and AVX-512 even, and 16 bytes off make AVX2 1.3x slower (its stores split lines).
    let mut store: [std::vec::Vec<u64>; 4] = core::array::from_fn(|_| std::vec![0; N + 8]);
    let mut cols = store.each_mut().map(|v| {
        let addr = v.as_ptr() as usize;
        let skip = (0..8).find(|k| (addr + 8 * k) % 64 == 16).unwrap_or(0);
        &mut v[skip..skip + N]
    });
    let mut time = |backend: Backend| {
        let decoder = Decoder::with_backend(&layout, backend);
        let mut best = u128::MAX;
        for _ in 0..5 {
            let started = std::time::Instant::now();
            for _ in 0..4 {
                let [t, m, q, n] = &mut cols;
                let columns = Columns {
                    ticks: Some(t),
                    unix_ms: Some(m),
                    sequence: Some(q),
                    node: Some(n),
                };
                let _ = core::hint::black_box(decoder.decode(core::hint::black_box(&ids), columns));
            }
            best = best.min(started.elapsed().as_nanos());
        }
        best
    };
    // The rule's pick stands unless another backend is clearly (5%) faster, so that two
    // backends within noise of each other do not flip from run to run.
    let rule = Backend::best();
    let mut pick = (rule, time(rule));
    for backend in Backend::available().filter(|&b| b != rule) {
        let t = time(backend);
        if t * 100 < pick.1 * 95 {
            pick = (backend, t);
        }
    }
    pick.0
}
