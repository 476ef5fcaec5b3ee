//! Every atomic, spin hint, yield and sleep of the crate, swapped for loom's under
//! `--cfg flakeid_loom` so the loom models in `loom-tests/` explore the real code.
//! Without `std` there is no scheduler to yield to or sleep on: both become spin hints.

#[cfg(flakeid_loom)]
pub(crate) use loom::{
    hint::spin_loop,
    sync::atomic::{AtomicU64, Ordering},
    sync::{Condvar, Mutex, MutexGuard},
    thread::yield_now,
};
#[cfg(all(not(flakeid_loom), feature = "std"))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(flakeid_loom))]
pub(crate) use core::hint::spin_loop;
#[cfg(all(not(flakeid_loom), target_has_atomic = "64"))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};

#[cfg(all(not(flakeid_loom), not(feature = "std")))]
pub(crate) fn yield_now() {
    spin_loop();
}

pub(crate) fn sleep(d: core::time::Duration) {
    #[cfg(flakeid_loom)]
    {
        let _ = d;
        yield_now();
    }
    #[cfg(all(not(flakeid_loom), feature = "std"))]
    std::thread::sleep(d);
    #[cfg(all(not(flakeid_loom), not(feature = "std")))]
    {
        let _ = d;
        spin_loop();
    }
}

/// Asks, once per thread, for a short time slice for the calling thread, so that it is run
/// at once when it wakes beside busy threads (see `wait::slice`); a no-op where the
/// scheduler takes no such request (other systems, no `std`, loom).
pub(crate) fn shorten_slice() {
    #[cfg(all(
        feature = "std",
        any(target_os = "linux", target_os = "android"),
        not(flakeid_loom)
    ))]
    crate::wait::slice::shorten();
}
