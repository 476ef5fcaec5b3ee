'use strict'
// The package's errors. Every error the addon throws carries a stable `code`; the
// subclasses say what it is about, and what to do is in the message:
//   TypeError  (code FLAKEID_INVALID_TYPE)  an argument of the wrong type
//   RangeError (code FLAKEID_OUT_OF_RANGE)  a number out of its range (negative, not whole,
//                                           past a field's bits, a count too large)
//   LayoutError   a layout that cannot be, an ID or time that does not fit one
//                 (FLAKEID_LAYOUT, FLAKEID_BAD_ID)
//   MintError     minting refused or out of time, with `retryAfterMs` (a number, or null
//                 when waiting cannot help): FLAKEID_WOULD_BLOCK, FLAKEID_CLOCK_BEHIND,
//                 FLAKEID_AT_FENCE, FLAKEID_CLAIM_LOST, FLAKEID_RENEWAL_STOPPED,
//                 FLAKEID_LAYOUT_ENDED, FLAKEID_BEFORE_EPOCH, FLAKEID_LEASED, FLAKEID_MINT
//   ClaimError    a claim that could not be taken, renewed, listed or used, with `kind`
//                 (settings, unavailable, busy, not_owner, access, corrupt, cancelled,
//                 released): FLAKEID_CLAIM, FLAKEID_RELEASED
// All but TypeError and RangeError extend FlakeidError.

class FlakeidError extends Error {
  constructor (message, code) {
    super(message)
    this.name = new.target.name
    this.code = code
  }
}

class LayoutError extends FlakeidError {}

class MintError extends FlakeidError {
  constructor (message, code, retryAfterMs) {
    super(message, code)
    this.retryAfterMs = retryAfterMs
  }
}

class ClaimError extends FlakeidError {
  constructor (message, code, kind) {
    super(message, code)
    this.kind = kind
  }
}

class FlakeidTypeError extends TypeError {
  constructor (message) {
    super(message)
    this.name = 'TypeError'
    this.code = 'FLAKEID_INVALID_TYPE'
  }
}

class FlakeidRangeError extends RangeError {
  constructor (message) {
    super(message)
    this.name = 'RangeError'
    this.code = 'FLAKEID_OUT_OF_RANGE'
  }
}

const NATIVE = /^(FLAKEID_[A-Z_]+)\|([^|]*)\|([\s\S]*)$/

// The package's error for what the addon threw (anything else as it is).
function convert (e) {
  if (!(e instanceof Error)) return e
  const m = NATIVE.exec(e.message)
  if (m === null) {
    // napi's own conversion of an argument of the wrong type.
    if (e.code === 'InvalidArg' || e.code === 'NumberExpected' || e.code === 'StringExpected' ||
        e.code === 'ObjectExpected' || e.code === 'BigintExpected') {
      return new FlakeidTypeError(`${e.message}: see the argument's type in index.d.ts`)
    }
    if (/panic/i.test(e.message)) {
      return new FlakeidError(`flakeid's addon failed inside (${e.message}); please report it`, 'FLAKEID_INTERNAL')
    }
    return e
  }
  const [, code, extra, text] = m
  switch (code) {
    case 'FLAKEID_INVALID_TYPE': return new FlakeidTypeError(text)
    case 'FLAKEID_OUT_OF_RANGE': return new FlakeidRangeError(text)
    case 'FLAKEID_LAYOUT':
    case 'FLAKEID_BAD_ID': return new LayoutError(text, code)
    case 'FLAKEID_CLAIM':
    case 'FLAKEID_RELEASED': return new ClaimError(text, code, extra || 'other')
    default: return new MintError(text, code, extra === '' ? null : Number(extra))
  }
}

module.exports = {
  FlakeidError,
  LayoutError,
  MintError,
  ClaimError,
  FlakeidTypeError,
  FlakeidRangeError,
  convert
}
