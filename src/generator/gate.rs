//! [`TickGate`]: what may hold a generator at a tick. [`Unfenced`] (nothing, the default,
//! a zero-sized type the compiler removes) or a gate of the layer above, a claim's fence
//! (the claim module's `ClaimGate`, with `std`).

use core::fmt;

use crate::error::MintError;

/// The seal: only this crate's gates implement [`TickGate`] (the claim layer seals its
/// own).
pub(crate) mod sealed {
    pub trait Sealed {}
}

/// What may hold a [`Generator`](crate::Generator) at a tick: asked once per tick change
/// on the slow path, never on the fast path, which stays in a tick already allowed.
///
/// Two gates exist, and the trait is sealed: [`Unfenced`], the default, which allows every
/// tick and costs nothing (its checks are constants the compiler removes); and
/// the claim layer's `ClaimGate`, a node id claimed from a store, whose fence
/// allows only the ticks of a reservation the store accepted.
pub trait TickGate: sealed::Sealed + fmt::Debug {
    /// Whether any tick can be refused. With `false`, [`TickGate::allows`] is never asked.
    #[doc(hidden)]
    const FENCED: bool = false;

    /// The first tick the generator may mint in (the end of an earlier holder's
    /// reservation), or 0.
    #[doc(hidden)]
    fn first_tick(&self) -> u64 {
        0
    }

    /// Whether an ID of `tick` may be minted now.
    #[doc(hidden)]
    fn allows(&self, tick: u64) -> bool;

    /// When the gate refuses: the final error of a gate that will never open again
    /// (the claim is lost, or nothing renews it), or `None` if waiting can help.
    #[doc(hidden)]
    fn closed(&self, node: u64) -> Option<MintError> {
        let _ = node;
        None
    }

    /// A caller starts (`true`) or stops (`false`) waiting for the gate to open, for the
    /// gate's status.
    #[doc(hidden)]
    fn waiting(&self, entered: bool) {
        let _ = entered;
    }

    /// The generator is dropped with `last_tick` its last tick minted in.
    #[doc(hidden)]
    fn release(&mut self, last_tick: u64) {
        let _ = last_tick;
    }
}

/// The default [`TickGate`]: every tick allowed. Zero-sized; a generator of it has no
/// gate to ask and nothing to release (shown equal in size and speed to a generator
/// without the parameter: the `hot_path` benchmarks, and the test
/// `an_unfenced_generator_carries_no_gate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unfenced;

impl sealed::Sealed for Unfenced {}

impl TickGate for Unfenced {
    #[inline(always)]
    fn allows(&self, _tick: u64) -> bool {
        true
    }
}
