//! A short time slice for a thread that sleeps to a tick's boundary (Linux 6.12 and
//! later; a no-op elsewhere).
//!
//! Linux's scheduler (EEVDF) gives a waking thread a deadline one slice after it is placed
//! and runs the thread with the earliest deadline. Beside busy threads of the default slice
//! (0.75-3 ms) a thread that slept to a boundary is run only when the running thread's
//! slice ends, later the more CPU it used before it slept; one that asks for a
//! [`SHORT`] slice comes first at once. Its share of the CPU does not change, only how
//! finely it is cut. Measured (`examples/at_the_cap.rs`, 2 cores, eight busy threads):
//! `next_id` at Snowflake's cap held 84% of it with the default slice and 94-99% with
//! 100 µs; a slice of 300 µs gave 80-89%.
//!
//! A thread asks (`sched_setattr`, the `sched_runtime` of a fair-class thread) the first
//! time it sleeps to a boundary and keeps the slice: asking only for each wait and putting
//! the old slice back on waking held 84-93%, no better than not asking, as the thread was
//! placed again with its long slice just as it began to mint. A thread of another policy
//! (real-time, batch, idle), one that already asks for a slice this short, a kernel that
//! reports no slice (before 6.12) and a process whose sandbox refuses the call are left as
//! they are; [`GeneratorBuilder::short_slice`](crate::GeneratorBuilder::short_slice)
//! turns the request off for a generator's callers.

use core::sync::atomic::{AtomicBool, Ordering};

/// The slice asked for: the shortest the kernel grants (`NSEC_PER_MSEC / 10`).
pub(crate) const SHORT: u64 = 100_000;

/// `struct sched_attr` as of Linux 3.14 (`SCHED_ATTR_SIZE_VER0`, 48 bytes): the fields
/// after it (utilization clamps) are neither read nor written.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Attr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    /// For a fair-class thread (Linux 6.12 and later): its slice in ns.
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// `SCHED_OTHER`, the default fair policy.
const SCHED_OTHER: u32 = 0;
/// The one flag `sched_getattr` reports for a fair thread and `sched_setattr` must be given
/// back so as not to change it.
const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

/// Set once the kernel or the sandbox said no: no thread asks again.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// The slice of thread `tid` (0: the caller) if it is a fair-class (`SCHED_OTHER`) thread.
pub(crate) fn fair_slice_of(tid: i32) -> Option<u64> {
    get_of(tid)
        .filter(|a| a.policy == SCHED_OTHER)
        .map(|a| a.runtime)
}

/// The scheduling attributes of thread `tid` (0: the caller).
#[allow(unsafe_code)] // FFI: sched_getattr, which neither std nor rustix wraps
fn get_of(tid: i32) -> Option<Attr> {
    let mut attr = Attr::default();
    // SAFETY: sched_getattr writes at most `size` (48) bytes into `attr`, a live
    // `#[repr(C)]` struct of exactly that size and layout, and keeps no pointer to it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut Attr,
            core::mem::size_of::<Attr>() as libc::c_uint,
            0 as libc::c_uint,
        )
    };
    (r == 0).then_some(attr)
}

/// Sets the calling thread's attributes (keeping its reset-on-fork flag); false if refused.
#[allow(unsafe_code)] // FFI: sched_setattr, which neither std nor rustix wraps
fn set(attr: &Attr) -> bool {
    let attr = Attr {
        size: core::mem::size_of::<Attr>() as u32,
        flags: attr.flags & SCHED_FLAG_RESET_ON_FORK,
        ..*attr
    };
    // SAFETY: sched_setattr reads `size` (48) bytes from `attr`, a live `#[repr(C)]`
    // struct of exactly that size and layout, and keeps no pointer to it.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const Attr, 0) };
    r == 0
}

thread_local! {
    /// Whether this thread already asked (once is enough: the slice stays).
    static ASKED: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Asks, once per thread, for a [`SHORT`] slice for the calling thread if it is a fair one
/// with a longer slice. It keeps it for the rest of its life.
pub(crate) fn shorten() {
    // Miri runs no scheduler calls.
    if cfg!(miri)
        || REFUSED.load(Ordering::Relaxed)
        || ASKED.try_with(|a| a.replace(true)).unwrap_or(true)
    {
        return;
    }
    let Some(had) = get_of(0) else { return };
    match (had.policy, had.runtime) {
        // A kernel that reports no slice for a fair thread (before 6.12) takes none.
        (SCHED_OTHER, 0) => REFUSED.store(true, Ordering::Relaxed),
        (SCHED_OTHER, longer) if longer > SHORT => {
            let short = Attr {
                runtime: SHORT,
                ..had
            };
            if !set(&short) {
                REFUSED.store(true, Ordering::Relaxed);
            }
        }
        // Another policy, or a slice this short already.
        _ => {}
    }
}

/// Sets the calling thread's timer slack to `ns` (Linux's `PR_SET_TIMERSLACK`): how late
/// the kernel may end its sleeps to merge wake-ups. Whether it was taken.
#[allow(unsafe_code)] // FFI: prctl, which std does not wrap (rustix does, but only the claims need rustix)
pub(crate) fn set_timer_slack(ns: u64) -> bool {
    // SAFETY: PR_SET_TIMERSLACK takes the slack by value in the second argument and reads
    // or writes no memory; the other arguments are unused.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) == 0 }
}
