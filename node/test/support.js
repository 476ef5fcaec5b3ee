'use strict'
// What the suites share (not a suite: `npm test` runs test/*.test.js).

// A reproducible stream of 64-bit numbers (xorshift).
function rng (seed) {
  let x = BigInt(seed)
  return () => {
    x ^= (x << 13n) & 0xffffffffffffffffn
    x ^= x >> 7n
    x ^= (x << 17n) & 0xffffffffffffffffn
    return x
  }
}

module.exports = { rng }
