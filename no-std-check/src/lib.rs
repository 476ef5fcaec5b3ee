//! A `no_std` user of flakeid, built by CI twice: as is, and with `--features std` (which
//! turns flakeid's `std` on). Features are additive: no item this crate names may vanish
//! or change type when a feature is added.
#![no_std]
#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU64, Ordering};

use flakeid::decode::{Backend, Columns, Decoder};
use flakeid::{
    Clock, ClockPolicy, Encoding, Error, Generator, GeneratorBuilder, Id, Layout, MintError,
    ParseError,
};

/// A clock a firmware keeps: milliseconds counted by an interrupt.
pub struct TickClock {
    ms: AtomicU64,
}

impl TickClock {
    /// A clock standing at `ms` Unix milliseconds.
    pub const fn new(ms: u64) -> Self {
        TickClock {
            ms: AtomicU64::new(ms),
        }
    }

    /// What the interrupt does.
    pub fn tick(&self) {
        self.ms.fetch_add(1, Ordering::Relaxed);
    }
}

impl Clock for TickClock {
    fn unix_ns(&self) -> u64 {
        self.ms.load(Ordering::Relaxed) * 1_000_000
    }
}

/// A generator on the firmware's clock, named with its clock type (never the default).
pub fn generator(clock: &TickClock) -> Result<Generator<&TickClock>, Error> {
    GeneratorBuilder::with_clock(Layout::snowflake(), clock)
        .node(7)
        .policy(ClockPolicy::Reject)
        .build()
}

/// Mints one ID and writes it in base32 into `buf`.
pub fn mint_text<'b>(
    g: &Generator<&TickClock>,
    buf: &'b mut [u8; Encoding::MAX_LEN],
) -> Result<&'b str, MintError> {
    Ok(g.next_id()?.encode(Encoding::Base32, buf))
}

/// Layout arithmetic and the batch decoder, without an allocator.
pub fn decode_one(text: &str) -> Result<(u64, u64), Error> {
    let layout: Layout = "seq=12,node=10,dc=5,epoch=1288834974657".parse()?;
    let id: Id = text.parse().map_err(|e: ParseError| Error::Parse(e))?;
    let (mut ms, mut node) = ([0u64; 1], [0u64; 1]);
    Decoder::with_backend(&layout, Backend::Scalar).decode(
        Id::as_u64s(&[id]),
        Columns {
            unix_ms: Some(&mut ms),
            node: Some(&mut node),
            ..Columns::default()
        },
    )?;
    Ok((ms[0], node[0]))
}
