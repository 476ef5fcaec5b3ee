//! flakeid for Node.js, the addon under the npm package `flakeid-rs`: layouts, minting
//! (plain, fenced by a claim, or one node id per process from a local directory),
//! decoding into typed arrays, and time-to-ID ranges, over the core crate and
//! `flakeid-stores`. The package's JavaScript (`index.js`) is the API: it checks
//! arguments, turns the addon's errors into `Error` subclasses with stable `code`s, and
//! releases claims at exit; these exports are its raw material.

// napi-rs registers the exports only outside `cfg(test)`: there they are unused.
#![cfg_attr(test, allow(dead_code))]

mod claimed;
mod decode;
mod errors;
mod layout;
mod mint;
mod numbers;
mod shared;
mod watch;

/// The addon's version (the workspace's).
#[napi_derive::napi(catch_unwind)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").into()
}

/// Panics on purpose: the tests' check that a Rust panic reaches JavaScript as an
/// exception (`catch_unwind` on every export), never an abort of the process.
#[napi_derive::napi(catch_unwind, js_name = "__panicForTests")]
pub fn panic_for_tests() {
    panic!("a panic on purpose, for the tests");
}
