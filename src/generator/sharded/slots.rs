//! The table of thread slots: which of the [`SLOTS`](super::SLOTS) fast-path slots are held
//! by a live thread. A thread takes the lowest free slot the first time it mints on a
//! sharded generator and gives it back when it ends, so a process whose threads come and
//! go (thread-per-task code, recreated pools, tokio's blocking pool) keeps finding slots:
//! only more than `SLOTS` threads alive at once leave one without.
//!
//! A slot is one bit; taking it is a compare-and-swap of its word from clear to set, and
//! giving it back is a `fetch_and` that clears it, so two threads never hold one slot
//! (the loom model in `loom-tests/tests/slots.rs` checks it, beside a variant that takes a
//! slot with a load and a store, which it catches).

use crate::sync::{AtomicU64, Ordering};

/// Words of 64 slots each.
const WORDS: usize = 4;

/// Which slots are held: bit `s % 64` of word `s / 64` for slot `s`.
#[derive(Debug)]
pub struct Slots {
    held: [AtomicU64; WORDS],
    /// How many slots may be handed out (at most `WORDS * 64`).
    limit: u32,
}

impl Slots {
    /// A table of `limit` free slots (at most 256).
    pub fn new(limit: u32) -> Slots {
        Slots {
            held: core::array::from_fn(|_| AtomicU64::new(0)),
            limit: limit.min((WORDS * 64) as u32),
        }
    }

    /// Takes the lowest free slot, or `None` when all `limit` are held.
    pub fn take(&self) -> Option<u32> {
        for (w, word) in self.held.iter().enumerate() {
            let mut seen = word.load(Ordering::Relaxed);
            loop {
                let free = !seen;
                if free == 0 {
                    break;
                }
                let bit = free.trailing_zeros();
                let slot = w as u32 * 64 + bit;
                if slot >= self.limit {
                    return None;
                }
                // Acquire: what the slot's last holder did before giving it back happens
                // before this thread uses it.
                match word.compare_exchange_weak(
                    seen,
                    seen | 1 << bit,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some(slot),
                    Err(now) => seen = now,
                }
            }
        }
        None
    }

    /// Gives back `slot`, which the caller took and holds.
    pub fn give_back(&self, slot: u32) {
        if slot >= self.limit {
            return;
        }
        let (w, bit) = ((slot / 64) as usize, slot % 64);
        self.held[w].fetch_and(!(1 << bit), Ordering::Release);
    }

    /// Whether `slot` is held now.
    #[cfg(test)]
    pub fn is_held(&self, slot: u32) -> bool {
        slot < self.limit
            && self.held[(slot / 64) as usize].load(Ordering::Relaxed) & 1 << (slot % 64) != 0
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    /// Slots are handed out lowest first, never twice, up to the limit; a slot given back
    /// is the next one taken.
    #[test]
    fn slots_are_taken_lowest_first_and_reused() {
        let slots = Slots::new(130);
        let taken: std::vec::Vec<u32> = (0..130).map(|_| slots.take().unwrap()).collect();
        assert_eq!(taken, (0..130).collect::<std::vec::Vec<_>>());
        assert_eq!(slots.take(), None, "the limit holds");
        slots.give_back(77);
        assert!(!slots.is_held(77));
        assert_eq!(slots.take(), Some(77));
        slots.give_back(3);
        slots.give_back(129);
        assert_eq!(
            (slots.take(), slots.take(), slots.take()),
            (Some(3), Some(129), None)
        );
    }

    /// Threads that take and give back slots at once never hold the same one.
    #[test]
    fn concurrent_holders_never_share_a_slot() {
        let slots = Slots::new(64);
        let holders = std::sync::Mutex::new(std::collections::HashSet::new());
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        let slot = slots.take().expect("4 threads, 64 slots");
                        assert!(holders.lock().unwrap().insert(slot), "slot {slot} twice");
                        assert!(holders.lock().unwrap().remove(&slot));
                        slots.give_back(slot);
                    }
                });
            }
        });
        assert!((0..64).all(|s| !slots.is_held(s)));
    }
}
