//! Per-core sharding: N generators, each with its own node id, so N cores mint N times the
//! layout's cap without touching each other's cache lines.

mod builder;
pub(crate) mod slots;

use slots::Slots;

use core::fmt;
use std::sync::Arc;

pub use builder::ShardedBuilder;

use crate::clock::Clock;
use crate::error::MintError;
use crate::generator::{DefaultClock, Generator, Ids, TickGate, Unfenced};
use crate::id::Id;

/// N [`Generator`]s of one layout, one per shard, each with its own node id from a block
/// the caller hands over (for Snowflake, a range of worker ids in one datacenter; for
/// Sonyflake, a range of machine ids).
///
/// Each thread has a home shard, fixed for the thread's life (the lowest index free when
/// the thread first mints, modulo the number of shards; the index goes back for the next
/// thread when this one ends, so threads that come and go keep the fast path), and mints
/// there.
///
/// What holds:
/// - **Unique**, always: shards differ in node id, and each shard is a lock-free
///   [`Generator`] that never hands out a (tick, sequence) twice, even when several
///   threads share it (more threads than shards is fine, just slower).
/// - **Strictly increasing per thread**: a thread always mints on its home shard (save
///   from another thread-local's destructor after the thread's index is given back).
/// - **Time-ordered across shards, not strictly increasing**: two IDs from different
///   shards compare by tick first, so an ID from a later tick is larger, but within one
///   tick the shard with the larger node id sorts after the other whatever the order of
///   minting.
///
/// For the highest rate, pin one thread per core and let each [lease](Generator::lease)
/// its shard (see the `pinned` example).
///
/// ```
/// use flakeid::{Layout, ShardedGenerator};
///
/// let sharded = ShardedGenerator::builder(Layout::snowflake())
///     .datacenter(3)
///     .workers(0..32)
///     .shards(4)
///     .build()?;
/// let id = sharded.next_id()?;
/// let parts = Layout::snowflake().decompose(id.get())?;
/// assert_eq!(parts.node, sharded.home_shard().node());
/// # Ok::<(), flakeid::Error>(())
/// ```
///
/// `G` is the shards' [`TickGate`]: [`Unfenced`] by default, or
/// the claim layer's `ClaimGate` for the shards of its `build_claimed` on this builder, each
/// fenced by its own claim.
pub struct ShardedGenerator<C = DefaultClock, G: TickGate = Unfenced> {
    /// In an `Arc`, not a `Box`, for `table`: moving a `Box` reasserts unique access to
    /// what it holds, which the pointers taken from it would then not be part of.
    shards: Arc<[Generator<C, G>]>,
    /// `u64::MAX / len + 1`: turns `thread index % len` into two multiplications.
    fastmod: u64,
    /// The home shard of the threads in each slot (see `SLOT`): `table[s]` is
    /// `&shards[s % len]`; `table[UNASSIGNED]` is `inert` (unfenced shards) or null (fenced
    /// ones: there is no inert gate to make one of). So `next_id` finds its shard with two
    /// loads and no test. Raw pointers into `shards` and `inert`, heap allocations this
    /// value holds and neither moves nor frees while it lives.
    table: [*const Generator<C, G>; 256],
    /// A generator whose word is leased for good, so its fast path always misses: where a
    /// thread with no slot lands, to take the way through `home` (which gives it one).
    /// Only held, for `table`.
    _inert: Option<Arc<Generator<C, G>>>,
}

// SAFETY: the pointers in `table` are shared references into `shards` and `inert`, which
// this value owns: sending it sends those generators, and sharing it shares `&Generator`s,
// exactly as the `Box`es alone would.
#[allow(unsafe_code)]
unsafe impl<C, G: TickGate> Send for ShardedGenerator<C, G> where Generator<C, G>: Send + Sync {}
// SAFETY: as for `Send`: shared access reaches the generators only through `&`.
#[allow(unsafe_code)]
unsafe impl<C, G: TickGate> Sync for ShardedGenerator<C, G> where Generator<C, G>: Sync {}

/// The fast-path slots: a thread holds one (its index) from its first mint until it ends,
/// in every sharded generator's table; threads past this many alive at once, and threads
/// that have not asked for their index yet, hold [`UNASSIGNED`].
const SLOTS: u32 = 255;
/// The slot of a thread with none: its table entry sends `next_id` through `home`.
const UNASSIGNED: u8 = 255;

std::thread_local! {
    /// The calling thread's slot: its dense index once taken, if below [`SLOTS`]. Made
    /// without code and dropped without code, so reading it is one load.
    static SLOT: core::cell::Cell<u8> = const { core::cell::Cell::new(UNASSIGNED) };
}

impl<C, G: TickGate> fmt::Debug for ShardedGenerator<C, G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedGenerator")
            .field("shards", &self.shards)
            .finish()
    }
}

/// The calling thread's index: the lowest slot free when it first asks (see [`slots`]),
/// held until the thread ends and then given back for the next thread; past [`SLOTS`]
/// threads alive at once, an index above them (which has no slot). Taking it also sets
/// the thread's [`SLOT`].
fn thread_index() -> u32 {
    use std::sync::LazyLock;
    use std::sync::atomic::{AtomicU32, Ordering};
    static FREE: LazyLock<Slots> = LazyLock::new(|| Slots::new(SLOTS));
    static OVERFLOW: AtomicU32 = AtomicU32::new(SLOTS);
    /// The index a thread holds; its slot goes back to the table when the thread ends.
    struct Held(u32);
    impl Drop for Held {
        fn drop(&mut self) {
            if self.0 < SLOTS {
                // First off this thread's fast path, then free for the next thread.
                SLOT.set(UNASSIGNED);
                FREE.give_back(self.0);
            }
        }
    }
    std::thread_local! {
        static INDEX: Held = {
            match FREE.take() {
                Some(slot) => {
                    SLOT.set(slot as u8);
                    Held(slot)
                }
                None => Held(OVERFLOW.fetch_add(1, Ordering::Relaxed)),
            }
        };
    }
    // A thread minting from another thread-local's destructor, after its own index is gone,
    // gets an index of its own for that call.
    INDEX
        .try_with(|held| held.0)
        .unwrap_or_else(|_| OVERFLOW.fetch_add(1, Ordering::Relaxed))
}

/// The calling thread's fast-path slot, if it holds one (for the tests).
pub(crate) fn thread_slot() -> Option<u8> {
    Some(SLOT.get()).filter(|&s| s != UNASSIGNED)
}

impl<C, G: TickGate> ShardedGenerator<C, G> {
    /// Over `shards` (at least one): the table of home shards, and at its unassigned slot
    /// `inert`, a generator whose word is then leased for good (the fenced builder has none
    /// to give: null there, which `next_id` tests for).
    pub(crate) fn from_shards(
        shards: Box<[Generator<C, G>]>,
        inert: Option<Generator<C, G>>,
    ) -> Self {
        let shards: Arc<[Generator<C, G>]> = Arc::from(shards);
        let inert = inert.map(Arc::new);
        assert!(!shards.is_empty(), "a sharded generator has a shard");
        assert!(
            G::FENCED || inert.is_some(),
            "unfenced shards get an inert one"
        );
        let mut table = [core::ptr::null(); 256];
        for (slot, entry) in table.iter_mut().enumerate().take(SLOTS as usize) {
            *entry = &shards[slot % shards.len()] as *const _;
        }
        if let Some(inert) = &inert {
            inert.make_inert();
            table[usize::from(UNASSIGNED)] = &**inert as *const _;
        }
        ShardedGenerator {
            fastmod: (u64::MAX / shards.len() as u64).wrapping_add(1),
            shards,
            table,
            _inert: inert,
        }
    }
}

impl<C: Clock, G: TickGate> ShardedGenerator<C, G> {
    /// The number of shards.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Always false: a sharded generator has at least one shard.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// All shards, in node id order.
    pub fn shards(&self) -> &[Generator<C, G>] {
        &self.shards
    }

    /// Shard `index`, if there is one.
    pub fn shard(&self, index: usize) -> Option<&Generator<C, G>> {
        self.shards.get(index)
    }

    /// The calling thread's home shard index.
    #[inline]
    pub fn home(&self) -> usize {
        self.shard_of(thread_index())
    }

    /// The shard of the thread with dense index `index`: `index % len`, by Lemire's
    /// fastmod (two multiplications), exact for a 32-bit index and a 32-bit divisor.
    #[inline(always)]
    fn shard_of(&self, index: u32) -> usize {
        let low = self.fastmod.wrapping_mul(u64::from(index));
        ((u128::from(low) * self.shards.len() as u128) >> 64) as usize
    }

    /// The calling thread's home shard.
    #[inline]
    pub fn home_shard(&self) -> &Generator<C, G> {
        &self.shards[self.home()]
    }

    /// Mints the next ID on the calling thread's home shard (see [`Generator::next_id`]).
    #[inline]
    pub fn next_id(&self) -> Result<Id, MintError> {
        match self.mint_at_home() {
            0 => self.next_id_home::<true>(),
            id => Ok(Id::from_raw(id)),
        }
    }

    /// Mints without waiting on the home shard (see [`Generator::try_next_id`]).
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, MintError> {
        match self.mint_at_home() {
            0 => self.next_id_home::<false>(),
            id => Ok(Id::from_raw(id)),
        }
    }

    /// The home shard's fast path, found through the thread's slot: the ID, or 0 (a
    /// miss, or a thread with no slot).
    #[inline(always)]
    #[allow(unsafe_code)]
    fn mint_at_home(&self) -> u64 {
        let shard = self.table[usize::from(SLOT.with(core::cell::Cell::get))];
        if G::FENCED && shard.is_null() {
            return 0;
        }
        // SAFETY: a non-null entry points into `self.shards` or at `self.inert`, which
        // live, unmoved, as long as `self` (see `table`).
        unsafe { &*shard }.mint_same_tick()
    }

    /// After the fast path missed, or found no slot: `next_id` (`BLOCK`) or `try_next_id`
    /// on the home shard, which `home` finds (taking the thread's index and slot the first
    /// time).
    #[cold]
    #[inline(never)]
    fn next_id_home<const BLOCK: bool>(&self) -> Result<Id, MintError> {
        let home = self.home_shard();
        if BLOCK {
            home.next_id()
        } else {
            home.try_next_id()
        }
    }

    /// Mints on the home shard of the thread the task runs on, awaiting the next tick
    /// (see [`Generator::next_id_async`]; feature `tokio`). A task that moves between
    /// threads may mint on different shards: unique always, ordered by tick.
    #[cfg(feature = "tokio")]
    pub async fn next_id_async(&self) -> Result<Id, MintError> {
        self.home_shard().next_id_async().await
    }

    /// Fills `out` from the home shard (see [`Generator::next_ids`]).
    pub fn next_ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.home_shard().next_ids(out)
    }

    /// Fills `out` from the home shard without waiting (see [`Generator::try_next_ids`]).
    pub fn try_next_ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.home_shard().try_next_ids(out)
    }

    /// Fills `out` from the home shard of the thread the task starts on, awaiting the next
    /// tick (see [`Generator::next_ids_async`]; feature `tokio`). For a series that must
    /// increase across calls, mint from one [`shard`](ShardedGenerator::shard).
    #[cfg(feature = "tokio")]
    pub async fn next_ids_async(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.home_shard().next_ids_async(out).await
    }

    /// `count` IDs from the home shard, reserved in runs (see [`Generator::ids`]).
    pub fn ids(&self, count: usize) -> Ids<'_, C, G> {
        self.home_shard().ids(count)
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use crate::clock::ManualClock;
    use crate::{Layout, ShardedGenerator};

    /// The generator's own `shard_of` (what `home` calls), built as `build` builds it, for
    /// every shard count up to 67 and indexes at both ends of `u32`.
    #[test]
    fn home_shard_is_the_thread_index_modulo_the_shards() {
        let layout = Layout::builder()
            .time_bits(40)
            .sequence_bits(8)
            .node_bits(7)
            .build()
            .unwrap();
        for len in 1..=67usize {
            let sharded = ShardedGenerator::builder(layout)
                .nodes(0..len as u64)
                .shards(len)
                .clock(ManualClock::from_unix_ms(1_000))
                .build()
                .unwrap();
            for index in (0..2000u32).chain([u32::MAX - 5, u32::MAX]) {
                assert_eq!(
                    sharded.shard_of(index),
                    index as usize % len,
                    "{index} % {len}"
                );
            }
        }
    }
}
