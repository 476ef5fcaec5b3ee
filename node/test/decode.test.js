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
  const next = rng(3)
  for (const layout of layouts) {
    const ids = new BigUint64Array(5000)
    for (let i = 0; i < ids.length; i++) ids[i] = next() & layout.maxId
    for (const input of [ids, Array.from(ids), Array.from(ids, String)]) {
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
