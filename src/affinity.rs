//! Pinning threads to cores (through `core_affinity`), for one thread per shard.
//! Used by `flakeid bench --sharded`; `examples/pinned.rs` shows the same with
//! `core_affinity` directly.

/// The number of cores this process may run on: `core_affinity`'s list, or
/// `std::thread::available_parallelism` when that is unavailable; at least 1.
pub fn cores() -> usize {
    core_affinity::get_core_ids()
        .map(|ids| ids.len())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// Pins the calling thread to core `index` (modulo the number of cores). Returns whether
/// the OS accepted it; pinning is an optimisation, so callers may ignore a `false`.
pub fn pin_current_thread(index: usize) -> bool {
    match core_affinity::get_core_ids() {
        Some(ids) if !ids.is_empty() => core_affinity::set_for_current(ids[index % ids.len()]),
        _ => false,
    }
}
