//! Every atomic, spin hint, yield and sleep of the crate, swapped for loom's under
//! `--cfg flakeid_loom` so the loom models in `loom-tests/` explore the real code.

#[cfg(flakeid_loom)]
pub(crate) use loom::{
    hint::spin_loop,
    sync::atomic::{AtomicU64, Ordering},
    thread::yield_now,
};

#[cfg(not(flakeid_loom))]
pub(crate) use core::{
    hint::spin_loop,
    sync::atomic::{AtomicU64, Ordering},
};
#[cfg(not(flakeid_loom))]
pub(crate) use std::thread::yield_now;

/// Sleeps; under loom a sleep is only a chance for another thread to run.
pub(crate) fn sleep(d: core::time::Duration) {
    #[cfg(flakeid_loom)]
    {
        let _ = d;
        yield_now();
    }
    #[cfg(not(flakeid_loom))]
    std::thread::sleep(d);
}
