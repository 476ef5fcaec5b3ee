//! Loom models of sharded minting's table of thread slots (`sharded::slots`): threads that
//! take slots at once never hold the same one, and a slot given back is taken again. Run
//! with `RUSTFLAGS="--cfg flakeid_loom"` (see `.ci/run`).
#![cfg(flakeid_loom)]

use flakeid::__private::Slots;
use flakeid_loom_tests::{model, must_fail};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::thread;

/// The two ways to take a slot: the crate's, and a known-wrong one.
trait Take: Send + Sync + 'static {
    fn take(&self) -> Option<u32>;
    fn give_back(&self, slot: u32);
}

impl Take for Slots {
    fn take(&self) -> Option<u32> {
        Slots::take(self)
    }
    fn give_back(&self, slot: u32) {
        Slots::give_back(self, slot)
    }
}

/// Takes the lowest free slot with a load and then a store: two threads can both read the
/// slot free and both set it.
struct ByLoadAndStore(AtomicU64);

impl Take for ByLoadAndStore {
    fn take(&self) -> Option<u32> {
        let held = self.0.load(Ordering::Acquire);
        let bit = (!held).trailing_zeros();
        (bit < 64).then(|| {
            self.0.store(held | 1 << bit, Ordering::Release);
            bit
        })
    }
    fn give_back(&self, slot: u32) {
        self.0.fetch_and(!(1 << slot), Ordering::Release);
    }
}

/// Two threads take a slot each (and one gives its slot back and takes again) while the
/// main thread takes one: no two hold the same slot at once, and at the end every slot
/// given back is free again.
fn race<T: Take>(slots: T) {
    let slots = Arc::new(slots);
    let spawn = |again: bool| {
        let slots = slots.clone();
        thread::spawn(move || {
            let first = slots.take().expect("room for every thread");
            if !again {
                return vec![first];
            }
            slots.give_back(first);
            vec![first, slots.take().expect("room for every thread")]
        })
    };
    let (a, b) = (spawn(false), spawn(true));
    let main = slots.take().expect("room for every thread");
    let a = a.join().unwrap();
    let b = b.join().unwrap();
    let held = [a[0], *b.last().unwrap(), main];
    assert!(
        held[0] != held[1] && held[1] != held[2] && held[0] != held[2],
        "one slot held by two threads: {held:?}"
    );
    for slot in held {
        slots.give_back(slot);
    }
    assert_eq!(slots.take(), Some(0), "a slot given back is taken again");
}

/// The table the crate uses: no slot held twice.
#[test]
fn no_two_threads_hold_one_slot() {
    model("slots taken by compare-and-swap", || race(Slots::new(8)));
}

/// The model bites: a slot taken by a load and a store can be taken by two threads.
#[test]
fn a_slot_taken_by_load_and_store_is_caught() {
    let message = must_fail("a slot held twice", || {
        loom::model(|| race(ByLoadAndStore(AtomicU64::new(0))));
    });
    assert!(
        message.contains("held by two threads"),
        "failed for another reason: {message}"
    );
}
