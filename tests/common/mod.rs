//! Helpers shared by the integration tests.
#![allow(dead_code)]

use flakeid::Layout;

/// 2026-10-31T12:00:00Z.
pub const T0_MS: u64 = 1_793_448_000_000;
/// Ticks of [`tiny`] at `T0_MS` (its epoch lies a day before).
pub const T0_TICKS: u64 = 86_400_000;

/// A small layout that runs out quickly: 4 sequence numbers per 1 ms tick, 3 node bits.
pub fn tiny() -> Layout {
    Layout::builder()
        .time_bits(40)
        .sequence_bits(2)
        .node_bits(3)
        .epoch_unix_ms(T0_MS - T0_TICKS)
        .build()
        .unwrap()
}

/// xorshift64: the same steps every run, for tests that want many varied inputs.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
