//! The checks behind flakeid's fuzz targets (see `checks.rs` and `mint.rs`).

mod checks;
mod input;
mod mint;

pub use checks::{decode, parse};
pub use mint::generator;
