'use strict'
// Bad input gets a typed error with a stable code and what to do, never a crash: wrong
// types are TypeErrors, numbers out of range RangeErrors, the rest the package's own.

const test = require('node:test')
const assert = require('node:assert/strict')
const flakeid = require('..')

const { Layout, Generator, LayoutError, FlakeidError, decode } = flakeid

function code (c, kind = Error) {
  return (e) => e instanceof kind && e.code === c && e.message.length > 20
}

test('wrong types are TypeErrors', () => {
  for (const node of ['1', null, {}, [], () => 1, Symbol('x')]) {
    assert.throws(() => new Generator('snowflake', node), code('FLAKEID_INVALID_TYPE', TypeError))
  }
  assert.throws(() => new Layout(42), code('FLAKEID_INVALID_TYPE', TypeError))
  const g = new Generator('snowflake', 1)
  assert.throws(() => g.nextIds('10'), code('FLAKEID_INVALID_TYPE', TypeError))
  assert.throws(() => g.nextIds(10n), code('FLAKEID_INVALID_TYPE', TypeError))
  assert.throws(() => Layout.snowflake().decompose({}), code('FLAKEID_INVALID_TYPE', TypeError))
  assert.throws(() => decode('snowflake', 'ids'), code('FLAKEID_INVALID_TYPE', TypeError))
  assert.throws(() => decode('snowflake', [1n, 'x']), code('FLAKEID_INVALID_TYPE', TypeError))
  assert.throws(() => Layout.snowflake().compose({ ticks: '5' }), code('FLAKEID_INVALID_TYPE', TypeError))
  assert.throws(() => flakeid.claim(5), code('FLAKEID_INVALID_TYPE', TypeError))
})

test('numbers out of range are RangeErrors', () => {
  const g = new Generator('snowflake', 1)
  for (const n of [-1, 1.5, NaN, Infinity, 2 ** 28 + 1, Number.MAX_SAFE_INTEGER + 2]) {
    assert.throws(() => g.nextIds(n), code('FLAKEID_OUT_OF_RANGE', RangeError), `${n}`)
  }
  for (const node of [-1, 1024, 0.5, -0n - 1n, 1n << 64n, 2 ** 60]) {
    assert.throws(() => new Generator('snowflake', node), code('FLAKEID_OUT_OF_RANGE', RangeError), `${node}`)
  }
  const s = Layout.snowflake()
  assert.throws(() => s.compose({ ticks: 1, sequence: 4096 }), code('FLAKEID_OUT_OF_RANGE', RangeError))
  assert.throws(() => s.compose({ ticks: 1, worker: 32, datacenter: 0 }), code('FLAKEID_OUT_OF_RANGE', RangeError))
  assert.throws(() => s.decompose(-5), code('FLAKEID_OUT_OF_RANGE', RangeError))
  assert.throws(() => s.decompose(-5n), code('FLAKEID_OUT_OF_RANGE', RangeError))
  assert.throws(() => new Generator('snowflake', 1, { maxWaitMs: -3 }), code('FLAKEID_OUT_OF_RANGE', RangeError))
})

test('malformed text and layouts are LayoutErrors that say what to give', () => {
  for (const spec of ['', 'nope', 'time=80', 'seq=12,node=10,epoch=tomorrow', 'seq=-1']) {
    assert.throws(() => new Layout(spec), code('FLAKEID_LAYOUT', LayoutError), spec)
  }
  const s = Layout.snowflake()
  for (const text of ['', '12a', '-1', '18446744073709551616', ' 1 2']) {
    assert.throws(() => s.decompose(text), (e) => e instanceof LayoutError && e.code === 'FLAKEID_BAD_ID', text)
  }
  assert.throws(() => decode(s, ['1', 'x']), (e) => e instanceof LayoutError && /index 1/.test(e.message))
  assert.throws(() => s.idRange('yesterday'), code('FLAKEID_LAYOUT', LayoutError))
  // An ID past the layout's bits (the sign bit of Twitter's) is named, with its index.
  assert.throws(() => decode(s, [1n, 1n << 63n]), (e) => e instanceof LayoutError && /at index 1 /.test(e.message))
  // Its index in the whole batch, past the addon's first chunks.
  const many = new BigUint64Array(5000).fill(1n)
  many[2500] = 1n << 63n
  assert.throws(() => decode(s, many), (e) => e instanceof LayoutError && /at index 2500 /.test(e.message))
})

test('a panic inside the addon is an exception, and the process goes on', () => {
  assert.throws(() => flakeid._panicForTests(), (e) => e instanceof FlakeidError && e.code === 'FLAKEID_INTERNAL')
  assert.ok(new Generator('snowflake', 1).nextId() > 0n)
})

test('huge counts fail cleanly and the process goes on', async () => {
  const g = new Generator('snowflake', 1)
  await assert.rejects(g.nextIdsAsync(-1), code('FLAKEID_OUT_OF_RANGE', RangeError))
  assert.throws(() => g.nextIds(2 ** 40), code('FLAKEID_OUT_OF_RANGE', RangeError))
  assert.equal(g.nextIds(0).length, 0)
})
