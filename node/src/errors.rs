//! The library's errors as the addon throws them: an `Error` whose message is
//! `CODE|EXTRA|text`, which `index.js` turns into the package's `Error` subclasses
//! (`errors.js`): the `code` stays, `EXTRA` is what the subclass carries (a claim
//! error's kind, a mint error's retry delay in milliseconds).

use core::fmt::Display;

use flakeid::MintError;
use flakeid::claim::ClaimError;
use napi::{Error, Status};

/// A value of the wrong type: a `TypeError`.
pub(crate) const INVALID_TYPE: &str = "FLAKEID_INVALID_TYPE";
/// A number out of its range (negative, not whole, past a field's bits): a `RangeError`.
pub(crate) const OUT_OF_RANGE: &str = "FLAKEID_OUT_OF_RANGE";
/// A layout that cannot be, or an ID or time that does not fit one: `LayoutError`.
pub(crate) const LAYOUT: &str = "FLAKEID_LAYOUT";
/// Text that is not an ID: `LayoutError`.
pub(crate) const BAD_ID: &str = "FLAKEID_BAD_ID";
/// A claim that could not be taken, renewed or listed: `ClaimError`, with its kind.
pub(crate) const CLAIM: &str = "FLAKEID_CLAIM";
/// Minting on a claim after `close()`: `ClaimError` of kind `released`.
pub(crate) const RELEASED: &str = "FLAKEID_RELEASED";

/// The error `code` with `extra` and `text`.
pub(crate) fn error(code: &str, extra: &str, text: impl Display) -> Error {
    Error::new(Status::GenericFailure, format!("{code}|{extra}|{text}"))
}

/// A `TypeError`.
pub(crate) fn type_error(text: impl Display) -> Error {
    error(INVALID_TYPE, "", text)
}

/// A `RangeError`.
pub(crate) fn range_error(text: impl Display) -> Error {
    error(OUT_OF_RANGE, "", text)
}

/// The library's general error: a value past its field is a `RangeError`, a mint
/// failure a `MintError`, the rest a `LayoutError`.
pub(crate) fn core_error(e: flakeid::Error) -> Error {
    match e {
        flakeid::Error::Mint(m) => mint_error(m),
        e @ flakeid::Error::OutOfRange { .. } => range_error(e),
        e @ flakeid::Error::IdOutOfLayout { index: Some(i), .. } => error(
            LAYOUT,
            "",
            format!(
                "{e}, at index {i} of the batch: decode it with the layout its IDs were minted with"
            ),
        ),
        e => error(LAYOUT, "", e),
    }
}

/// `MintError`, its code by what happened and its retry delay (ms) where waiting helps.
pub(crate) fn mint_error(e: MintError) -> Error {
    let code = match e {
        MintError::WouldBlock { .. } | MintError::WaitTooLong { .. } => "FLAKEID_WOULD_BLOCK",
        MintError::ClockBehind { .. } => "FLAKEID_CLOCK_BEHIND",
        MintError::Leased => "FLAKEID_LEASED",
        MintError::BeforeEpoch { .. } => "FLAKEID_BEFORE_EPOCH",
        MintError::PastLifetime { .. } => "FLAKEID_LAYOUT_ENDED",
        MintError::ReservationExpired { .. } => "FLAKEID_AT_FENCE",
        MintError::ClaimLost { .. } => "FLAKEID_CLAIM_LOST",
        MintError::RenewalStopped { .. } => "FLAKEID_RENEWAL_STOPPED",
        _ => "FLAKEID_MINT",
    };
    let retry = e
        .retry_after()
        .map(|d| format!("{}", d.as_secs_f64() * 1e3))
        .unwrap_or_default();
    error(code, &retry, e)
}

/// `ClaimError`, with its kind: `settings`, `unavailable`, `busy`, `not_owner`, `access`,
/// `corrupt` or `cancelled`.
pub(crate) fn claim_error(e: ClaimError) -> Error {
    let kind = e.kind().name();
    let text = match e {
        ClaimError::PasswordInUrl { .. } | ClaimError::NoPassword { .. } => {
            format!("{e} (here: the password option)")
        }
        e => e.to_string(),
    };
    error(CLAIM, kind, text)
}
