//! Loom models live in `tests/`; this crate holds only what they share: the small layout
//! they mint in, running a model with its counts reported, and reading the panic a broken
//! model must raise.
#![forbid(unsafe_code)]

/// One sequence bit: two IDs per tick, so two or three threads race across the boundary,
/// and every other ID changes the tick (where a claimed generator reads its fence).
pub fn tiny() -> flakeid::Layout {
    flakeid::Layout::builder()
        .time_bits(20)
        .sequence_bits(1)
        .node_bits(1)
        .epoch_unix_ms(0)
        .build()
        .unwrap()
}

/// Runs `f` under `loom::model` and reports how many interleavings loom explored and how
/// long it took (shown with `--nocapture`; CI shows it).
pub fn model<F: Fn() + Sync + Send + 'static>(name: &str, f: F) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let started = std::time::Instant::now();
    loom::model(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    });
    eprintln!(
        "loom model {name}: {} interleavings in {:.2?}",
        runs.load(Ordering::Relaxed),
        started.elapsed()
    );
}

/// Runs a model that must fail and returns its panic message; panics if loom found
/// nothing.
pub fn must_fail(what: &str, f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    match std::panic::catch_unwind(f) {
        Ok(()) => panic!("loom must find {what}"),
        Err(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    }
}
