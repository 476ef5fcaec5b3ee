//! Nothing to link: this package's test (`tests/pytest.rs`) builds the Python package with
//! maturin and runs its pytest suite, so that `cargo test` runs the Python tests while
//! `cargo build` and `cargo run` of the tool never build the extension.
#![forbid(unsafe_code)]
