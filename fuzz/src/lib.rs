//! The checks behind flakeid's fuzz targets (see `checks.rs`).

mod checks;

pub use checks::{decode, generator, parse};
