'use strict'
// The batch decoder into typed arrays: the same fields as decompose, ID by ID, from a
// BigUint64Array, BigInts or decimal strings, for every preset and wide custom layouts.

const test = require('node:test')
const assert = require('node:assert/strict')
const { Layout, Generator, decode } = require('..')
const { rng } = require('./support.js')


test('columns equal decompose, ID by ID, in every input form', () => {
  const layouts = Layout.presets().map((p) => new Layout(p))
  layouts.push(new Layout('time=20,seq=30,node=13,unit=1s'))
  layouts.push(new Layout('time=24,seq=2,node=37,dc=3,unit=1s'))
  // A 64-bit sequence beside a 32-bit node with parts; ticks past 2^53 (BigUint64Array).
  layouts.push(new Layout('time=16,seq=33,node=14,dc=4,unit=1s'))
  layouts.push(new Layout('time=56,seq=4,node=4,unit=1ms'))
  const next = rng(3)
  for (const layout of layouts) {
    // 5,000 IDs: the addon decodes a chunk (1,024) at a time, so several, and a part.
    const ids = new BigUint64Array(5000)
    for (let i = 0; i < ids.length; i++) ids[i] = next() & layout.maxId
    for (const input of [ids, new BigInt64Array(ids.buffer), Array.from(ids), Array.from(ids, String)]) {
      const c = decode(layout, input)
      for (let i = 0; i < ids.length; i++) {
        const d = layout.decompose(ids[i])
        assert.equal(c.unixMs[i], d.unixMs)
        assert.equal(BigInt(c.ticks[i]), BigInt(d.ticks))
        assert.equal(BigInt(c.sequence[i]), BigInt(d.sequence))
        assert.equal(BigInt(c.node[i]), BigInt(d.node))
        for (const part of ['datacenter', 'worker', 'process']) {
          if (d[part] !== undefined) assert.equal(BigInt(c[part][i]), BigInt(d[part]), part)
        }
        if (d.machine !== undefined) assert.equal(BigInt(c.machine[i]), BigInt(d.machine))
      }
    }
  }
})

test('columns are typed arrays of the widths the layout needs', () => {
  const g = new Generator('snowflake', 3)
  const c = decode('snowflake', g.nextIds(10))
  assert.ok(c.unixMs instanceof Float64Array && c.ticks instanceof Float64Array)
  assert.ok(c.sequence instanceof Uint32Array && c.node instanceof Uint32Array)
  assert.ok(c.datacenter instanceof Uint32Array && c.worker instanceof Uint32Array)
  assert.equal(c.process, undefined)
  const wide = decode('time=20,seq=34,node=9,unit=1s', [5n])
  assert.ok(wide.sequence instanceof BigUint64Array)
  assert.equal(decode('snowflake', new BigUint64Array(0)).unixMs.length, 0)
  assert.equal(Layout.snowflake().decode([g.nextId()]).node[0], 3)
})

test('the addon refuses columns that share memory or differ from the ids in length', () => {
  // decode allocates its own columns; the addon it calls checks them anyway, since it
  // writes them as Rust slices, which must not overlap.
  const native = require(`../${require('../platform.js').addon}`)
  const layout = native.NativeLayout.parse('snowflake')
  const ids = new Generator('snowflake', 1).nextIds(10)
  const f64 = () => new Float64Array(10)
  const u32 = () => new Uint32Array(10)
  const ok = [f64(), f64(), u32(), u32(), u32(), u32()]
  native.decodeInto(layout, ids, ...ok)
  assert.deepEqual(Array.from(ok[5]), Array(10).fill(1))
  const shared = u32()
  const overlapping = new Uint32Array(new ArrayBuffer(60), 0, 10)
  const cases = [
    [f64(), f64(), shared, shared, u32(), u32()],
    [f64(), f64(), overlapping, new Uint32Array(overlapping.buffer, 20, 10), u32(), u32()],
    [new Float64Array(ids.buffer), f64(), u32(), u32(), u32(), u32()],
    [f64(), f64(), u32(), u32(), u32(), new Uint32Array(9)]
  ]
  for (const [i, columns] of cases.entries()) {
    assert.throws(() => native.decodeInto(layout, ids, ...columns), /share memory|as long as the ids/, `case ${i}`)
  }
})
