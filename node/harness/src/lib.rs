//! Runs the Node package's tests from `cargo test` (see `tests/node.rs`).
