//! # flakeid: Snowflake-family IDs, minted lock-free and proven unique
//!
//! An ID is an unsigned 64-bit integer (up to all 64 bits; 63 keep it a non-negative
//! `i64`) made of three fields: the
//! **time** in ticks since an epoch (most significant, so IDs sort by time), a **sequence**
//! number that counts IDs within one tick, and a **node** id that tells minting processes
//! apart. Two nodes never collide; one node never repeats itself; no database is asked.
//!
//! ## Choosing a layout
//!
//! | layout | lifetime | IDs/s per node | nodes | pick it when |
//! |---|---|---|---|---|
//! | [`Layout::snowflake`] (41 time, 5+5 node, 12 seq, 1 ms) | 69.68 years (to 2080) | 4,096,000 | 1,024 | you need Twitter-compatible IDs or high rates per node |
//! | [`Layout::sonyflake`] (39 time, 8 seq, 16 machine, 10 ms) | 174.21 years (to 2199) | 25,600 | 65,536 | many machines, modest rates, a long life |
//! | [`Layout::javascript_safe`] (41 time, 5 node, 7 seq, 1 ms) | 69.7 years (to 2094) | 128,000 | 32 | IDs that travel as JSON numbers: at most 2^53 - 1 |
//! | [`Layout::discord`], [`Layout::instagram`], [`Layout::mastodon`] (64 bits) | 139.4, 69.7, 8,919 years | 4,096,000, 1,024,000, 65,536,000 | 1,024, 8,192, 1 | you decode (or mint) those platforms' IDs; [`Layout::presets`] lists every preset with its source |
//! | [`Layout::builder`] | your choice | `2^seq / unit` | `2^node` | anything else, e.g. capped with [`layout::LayoutBuilder::max_bits`] |
//!
//! More time bits buy lifetime, more sequence bits buy rate per node, more node bits buy
//! nodes; a longer unit buys lifetime at the cost of rate. [`Layout::sonyflake_v2`] applies
//! Sonyflake's own rules to custom Sonyflake settings.
//!
//! ## Guarantees
//!
//! - **Unique**: a [`Generator`] hands out each (tick, sequence) pair once, by
//!   compare-and-swap on one packed `AtomicU64`; distinct node ids make generators disjoint.
//! - **Strictly increasing per generator, in the order IDs are reserved**, whatever the
//!   clock does: each `next_id` reserves one ID, each `next_ids` slice and each run of an
//!   [`generator::Ids`] iterator are reserved at once (see [`Generator::ids`] for the one surprise).
//! - **Sequence exhausted**: the call waits for the next tick (sleeping while far, spinning
//!   at the boundary), then mints with sequence 0. [`Generator::try_next_id`] returns
//!   [`MintError::WouldBlock`] with the wait instead.
//! - **Clock behind the last tick**: chosen by [`ClockPolicy`]: reject (Snowflake), continue
//!   on the last tick (Sonyflake, the default), or wait. [`GeneratorBuilder::max_wait`]
//!   bounds all the waits of one call together (a batch returns what it minted when the
//!   bound would pass); the default clock ([`DefaultClock`], the [`CoarseClock`]) is
//!   monotonic (built on [`MonotonicClock`]), so an NTP step inside the process never moves
//!   it backwards. After a restart,
//!   [`GeneratorBuilder::resume_after`] continues past a persisted last ID, and
//!   [`GeneratorBuilder::build_claimed`] takes the node id from a store with a window the
//!   next holder of that id starts after (see [`claim`]).
//! - **Lifetime**: past the layout's last tick every call fails with
//!   [`MintError::PastLifetime`]; an ID never wraps or turns negative.
//! - **No panics on input**: every bad layout, node id, time or ID string gets its own
//!   error variant. Nothing on the minting path allocates.
//!
//! ## Minting paths, cheapest last
//!
//! | path | cost per ID (one thread) | ordering | pick it when |
//! |---|---|---|---|
//! | [`Generator::next_id`] on the default [`CoarseClock`] | one relaxed load and one CAS | strictly increasing per generator; the time may lag by about a millisecond | the default: any thread, any time |
//! | the same on [`MonotonicClock`] | a TSC read and one CAS | the same, the time exact to the tick | IDs whose time must not lag |
//! | [`Generator::next_ids`], [`Generator::ids`] | one CAS per tick per batch | the same | you need many IDs at once (a bulk insert) |
//! | [`ShardedGenerator::next_id`] | a thread-local read, then as above | strictly increasing per thread, ordered by tick across shards | many threads mint flat out and you can spend a node id per core |
//! | [`generator::Lease::next_id`] ([`Generator::lease`]) | one relaxed load and an add on the lease's own copy (a plain store per tick) | strictly increasing; the lease holder mints alone | one thread owns the generator (a pinned thread per shard) |
//!
//! Share one generator per node among all threads: it is `Sync`. In an `Arc`
//! (`Arc::new(generator)`, cloned into each thread or task), in a `static`
//! (`static GEN: LazyLock<Generator> = LazyLock::new(|| ...)`), or borrowed by scoped
//! threads (`std::thread::scope`). Never one generator per request: two generators of one
//! node mint duplicates.
//!
//! What a hot-path caller does with each [`MintError`] (none changes the generator, so a
//! retry is always safe; [`MintError::retry_after`] says when one can succeed):
//!
//! | error | retry? |
//! |---|---|
//! | `WouldBlock` (only from `try_next_id`) | yes, after `retry_after()`, or call `next_id` |
//! | `WaitTooLong` | yes, later: the clock must still move `retry_after()`; or raise `max_wait` |
//! | `ClockBehind` (`ClockPolicy::Reject`) | yes, once the clock has caught up |
//! | `Leased` | yes, once the lease holder drops it |
//! | `BeforeEpoch` | no: fix the clock or the layout's epoch |
//! | `ReservationExpired` (a claimed generator at its fence) | yes, later: it resumes by itself once a renewal lands |
//! | `ClaimLost` ([`MintError::is_final`]) | never: the node id is someone else's; build a new generator |
//! | `RenewalStopped` ([`MintError::is_final`]) | never: nothing renews the claim any more (its renewal panicked, its runtime shut down); build a new generator |
//! | `PastLifetime`, `ClockRangeEnd` ([`MintError::is_final`]) | never: a new layout |
//!
//! BENCHMARKS.md has the measured figures against ferroid, snowflake_me, snowflaked,
//! uuid v7 and ulid.
//!
//! ## The API at a glance
//!
//! The root holds what a user names; the rest sits in its module.
//!
//! | item | what it is |
//! |---|---|
//! | [`Layout`] | the bit layout: the presets ([`Layout::snowflake`], ...), compose, decompose, ticks and instants |
//! | [`Id`] | a minted ID; decimal, hex and base32 text without allocating |
//! | [`Encoding`] | the text forms of an ID |
//! | [`Generator`] | the lock-free generator of one node id |
//! | [`GeneratorBuilder`] | its node id, clock, clock policy, wait bound, resume point; `build` or `build_claimed` |
//! | [`ShardedGenerator`] | one generator per core, each its own node id |
//! | [`ClockPolicy`] | what a generator does when the clock reads behind |
//! | [`Clock`] | a time source; [`DefaultClock`] is the [`CoarseClock`] |
//! | [`CoarseClock`], [`MonotonicClock`], [`SystemClock`], [`ManualClock`] | the clocks |
//! | [`MintError`] | from minting: wait, retry, or give up (the table above) |
//! | [`ParseError`] | from text: what is wrong and at which byte |
//! | [`Error`] | a layout or generator that cannot be built, a value that does not fit a layout |
//!
//! | module | what is in it |
//! |---|---|
//! | [`layout`] | [`layout::LayoutBuilder`], field order and tick grid, [`layout::Parts`], [`layout::Preset`], the references' epochs ([`layout::TWEPOCH_MS`], ...) and the caps |
//! | [`generator`] | batches ([`generator::Ids`]), leases ([`generator::Lease`]), [`generator::FastPath`], [`generator::TickGate`], [`generator::ShardedBuilder`] |
//! | [`clock`] | the clocks, [`clock::NO_RECENT_READING`], and [`clock::CLOCK_END_UNIX_NS`], where every clock stops |
//! | [`decode`] | batch decoding into columns (AVX2, AVX-512, scalar), the backends and their pick |
//! | [`claim`] (`claim`, on by default) | fleet-safe node ids: claimed from a store, fenced by a reserved window, [`claim::ClaimedGenerator`] |
//! | [`error`] | the errors, [`error::ErrorKind`] (an [`Error`]'s remedy: fix the settings, fix the input, retry) and [`error::Field`] |
//! | [`node`] | Sonyflake's private-IP machine id |
//! | [`rfc3339`] | RFC 3339 text for instants, years past 9999 included |
//! | [`affinity`] (`std`) | the cores this process may run on, and pinning a thread to one |
//! | `serde` (feature) | `Id` with serde; `as_string`, `as_number`, `as_i64`, `javascript_safe`, layout checks |
//!
//! With `default-features = false` the crate is `no_std`: everything above but the clocks
//! (bring one: [`GeneratorBuilder::with_clock`]), `ShardedGenerator`, `claim`, `node`'s OS
//! lookup and runtime SIMD detection.
//!
//! ## Example
//!
//! ```
//! use flakeid::{Generator, Layout};
//!
//! let layout = Layout::snowflake();
//! let generator = Generator::builder(layout).datacenter(1).worker(7).build()?;
//! let id = generator.next_id()?;
//! let parts = layout.decompose(id.get())?;
//! assert_eq!(layout.split_node(parts.node), (1, 7));
//! println!("{id} was minted at Unix ms {}", layout.unix_ms_of(parts.ticks)?);
//!
//! // The worked example of the reference: 2026-10-31T12:00:00Z, dc 3, worker 17, seq 42.
//! let ticks = layout.ticks_at(1_793_448_000_000 * 1_000_000)?;
//! let id = layout.compose(ticks, 42, layout.node_of(3, 17)?)?;
//! assert_eq!(id, 2116500430648709162);
//! # Ok::<(), flakeid::Error>(())
//! ```
//!
//! ## How flakeid treats the references' behaviours
//!
//! | behaviour | Twitter Snowflake | Sonyflake | flakeid |
//! |---|---|---|---|
//! | clock behind | throws, state unchanged | keeps counting on the last tick, sleeps as long as the clock jumped | your choice of either, or wait; every wait bounded |
//! | sequence exhausted | busy-spins to the next ms | sleeps to the next unit holding a mutex | sleeps while far, spins at the boundary, no lock |
//! | past the lifetime | IDs silently turn negative | `over the time limit` | [`MintError::PastLifetime`] |
//! | clock | wall clock | wall clock | monotonic, anchored to the wall clock ([`CoarseClock`] by default; or [`MonotonicClock`], [`SystemClock`], [`ManualClock`]) |
//! | first ID | time part may be 0 | time part never 0 | as Sonyflake |
//! | machine id from IP | - | first private IPv4, last two octets | same rule, [`node::private_ip_machine_id`] |
//! | out-of-range fields | masked | range-checked | range-checked, never masked |
//!
//! [`CoarseClock`]: crate::clock::CoarseClock
//! [`MonotonicClock`]: crate::clock::MonotonicClock
//! [`SystemClock`]: crate::clock::SystemClock
//! [`ManualClock`]: crate::clock::ManualClock

#![warn(missing_docs)]
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "std")]
pub mod affinity;
#[cfg(all(feature = "claim", target_has_atomic = "64"))]
pub mod claim;
pub mod clock;
pub mod decode;
mod encoding;
pub mod error;
mod field;
#[cfg(target_has_atomic = "64")]
pub mod generator;
mod id;
pub mod layout;
pub mod node;
#[cfg(any(feature = "metrics", feature = "tracing"))]
mod observe;
mod parse;
pub mod rfc3339;
#[cfg(feature = "serde")]
pub mod serde;
mod sync;
#[cfg(feature = "std")]
pub mod wait;

pub use clock::Clock;
pub use encoding::Encoding;
pub use error::{Error, MintError, ParseError};
#[cfg(target_has_atomic = "64")]
pub use generator::ClockPolicy;
#[cfg(all(feature = "std", target_has_atomic = "64"))]
pub use generator::DefaultClock;
#[cfg(all(feature = "std", target_has_atomic = "64"))]
pub use generator::ShardedGenerator;
#[cfg(target_has_atomic = "64")]
pub use generator::{Generator, GeneratorBuilder};
pub use id::Id;
pub use layout::Layout;

/// Not API: what the loom models (`loom-tests/`), the crate's own integration tests and its
/// benches reach inside the crate for; no other package of the workspace uses it. Hidden
/// from the docs, outside semver: it may change in any release.
#[doc(hidden)]
pub mod __private {
    #[cfg(target_has_atomic = "64")]
    pub use crate::generator::state::{LEASED, Shape, Step, reserve};

    /// A claimed generator's fence (crate-private elsewhere), for the loom models of the
    /// renewal order.
    #[cfg(all(feature = "claim", target_has_atomic = "64"))]
    pub use crate::claim::fence::Fence;

    /// A claimed generator's fence, for the loom models of the renewal order.
    #[cfg(all(feature = "claim", target_has_atomic = "64"))]
    pub fn fence<C>(generator: &crate::claim::ClaimedGenerator<C>) -> &Fence {
        generator.gate.holder().fence()
    }

    /// How many shared minters of `generator` wait for its lease to end, for the tests that
    /// must know a waiter is waiting before they drop a lease.
    #[cfg(all(feature = "std", target_has_atomic = "64"))]
    pub fn lease_waiters<C: crate::Clock, G: crate::generator::TickGate>(
        generator: &crate::Generator<C, G>,
    ) -> u64 {
        generator.lease_waiter_count()
    }

    /// The table of sharded minting's thread slots, for its loom model.
    #[cfg(all(feature = "std", target_has_atomic = "64"))]
    pub use crate::generator::sharded::slots::Slots;

    /// The calling thread's fast-path slot in sharded generators, if it holds one: for the
    /// tests that threads coming and going leave slots for the next.
    #[cfg(all(feature = "std", target_has_atomic = "64"))]
    pub fn thread_slot() -> Option<u8> {
        crate::generator::sharded::thread_slot()
    }

    /// The time slice of thread `tid` (0: the caller; Linux's thread id otherwise) if it is
    /// a fair-class thread (0 on a kernel that reports none, before 6.12), for the tests
    /// of the slice a waiting thread asks for.
    #[cfg(all(
        feature = "std",
        any(target_os = "linux", target_os = "android"),
        not(flakeid_loom)
    ))]
    pub fn fair_slice_of(tid: i32) -> Option<u64> {
        crate::wait::slice::fair_slice_of(tid)
    }

    /// A layout's arithmetic the crate keeps to itself, for its tests, benches and loom
    /// models: the absolute tick of the epoch; the shifts of the time, sequence and node
    /// fields; and an ID composed of fields known to be in range.
    pub fn epoch_tick(layout: &crate::Layout) -> u64 {
        layout.epoch_tick()
    }

    /// The (time, sequence, node) shifts of `layout`.
    pub fn shifts(layout: &crate::Layout) -> (u32, u32, u32) {
        (
            layout.time_shift(),
            layout.sequence_shift(),
            layout.node_shift(),
        )
    }

    /// An ID of fields known to be in range (no checks).
    pub fn compose_unchecked(layout: &crate::Layout, ticks: u64, sequence: u64, node: u64) -> u64 {
        layout.compose_unchecked(ticks, sequence, node)
    }
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
struct LibraryGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/cli.md")]
struct CliGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/fleet.md")]
struct FleetGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/guarantees.md")]
struct GuaranteesDoctests;
