'use strict'
// Layouts: every preset and custom layout of the Rust crate, bit-exact against the npm
// peers both ways (their IDs decode to their fields here, ours decode to ours there),
// decoded names that compose back, facts, the end warning and time-to-ID ranges.

const test = require('node:test')
const assert = require('node:assert/strict')
const { Snowflake: Sapphire } = require('@sapphire/snowflake')
const { Snowflake: WasmSnowflake } = require('nodejs-snowflake')
const FlakeId = require('flake-idgen')
const { Layout, Generator, LayoutError } = require('..')
const { rng } = require('./support.js')

const TWITTER_EPOCH = 1288834974657
const DISCORD_EPOCH = 1420070400000


test('@sapphire/snowflake IDs are Discord IDs, both ways', () => {
  const discord = Layout.discord()
  const sapphire = new Sapphire(DISCORD_EPOCH)
  const next = rng(7)
  for (let i = 0; i < 2000; i++) {
    const timestamp = DISCORD_EPOCH + Number(next() % 100000000000n)
    const workerId = next() % 32n
    const processId = next() % 32n
    const increment = next() % 4096n
    const theirs = sapphire.generate({ timestamp, workerId, processId, increment })
    const ours = discord.compose({ unixMs: timestamp, worker: workerId, process: processId, sequence: increment })
    assert.equal(ours, theirs)
    const d = discord.decompose(theirs)
    assert.deepEqual([d.unixMs, d.worker, d.process, d.sequence], [timestamp, Number(workerId), Number(processId), Number(increment)])
    const back = sapphire.deconstruct(ours)
    assert.deepEqual([back.timestamp, back.workerId, back.processId, back.increment], [BigInt(timestamp), workerId, processId, increment])
  }
})

test('flake-idgen IDs are Twitter Snowflake IDs, both ways', () => {
  const snowflake = Layout.snowflake()
  for (const [datacenter, worker] of [[0, 0], [3, 7], [31, 31]]) {
    const peer = new FlakeId({ datacenter, worker, epoch: TWITTER_EPOCH })
    const theirs = peer.next().readBigUInt64BE(0)
    const d = snowflake.decompose(theirs)
    assert.deepEqual([d.datacenter, d.worker], [datacenter, worker])
    assert.ok(Math.abs(d.unixMs - Date.now()) < 5000, `${d.unixMs}`)
    // Ours through the peer's own reading of its layout (time, id, sequence fields).
    const ours = new Generator(snowflake, (datacenter << 5) | worker).nextId()
    assert.equal(ours >> 12n & 1023n, BigInt((datacenter << 5) | worker))
    assert.equal(snowflake.compose(snowflake.decompose(theirs)), theirs)
  }
})

test('nodejs-snowflake IDs are a custom layout (12-bit instance, 10-bit sequence), both ways', () => {
  const layout = new Layout(`time=41,node=12,seq=10,order=tns,epoch=${new Date(TWITTER_EPOCH).toISOString()}`)
  const peer = new WasmSnowflake({ custom_epoch: TWITTER_EPOCH, instance_id: 517 })
  const theirs = BigInt(peer.getUniqueID())
  const d = layout.decompose(theirs)
  assert.equal(d.node, 517)
  assert.equal(d.unixMs, WasmSnowflake.timestampFromID(theirs, TWITTER_EPOCH))
  const ours = new Generator(layout, 517).nextId()
  assert.equal(WasmSnowflake.instanceIDFromID(ours), 517)
  assert.equal(WasmSnowflake.timestampFromID(ours, TWITTER_EPOCH), layout.decompose(ours).unixMs)
  const at = Date.now() - 12345
  assert.equal(layout.compose({ unixMs: at, node: 517 }), BigInt(peer.idFromTimestamp(at)))
})

test('what decompose gives composes back, for every preset and random custom layouts', () => {
  const layouts = Layout.presets().map((p) => new Layout(p))
  layouts.push(new Layout('time=40,seq=10,node=13,dc=5'))
  layouts.push(new Layout('time=39,seq=8,node=16,unit=10ms,order=tsn'))
  layouts.push(new Layout('time=41,seq=12,node=10,dc=5,parts=worker-process'))
  const next = rng(11)
  for (const layout of layouts) {
    for (let i = 0; i < 300; i++) {
      const id = next() & layout.maxId
      const d = layout.decompose(id)
      assert.equal(layout.compose(d), id, `${layout} ${id}`)
      // Each way alone: ticks, or unixMs for a whole-millisecond tick; the node whole, or
      // by its parts.
      const node = layout.nodeFields.length > 1 && layout.nodeFields[1] !== 'machine'
        ? Object.fromEntries(layout.nodeFields.slice(1).map((f) => [f, d[f]]))
        : { node: d.node }
      assert.equal(layout.compose({ ticks: d.ticks, sequence: d.sequence, ...node }), id, `${layout}`)
      if (layout.facts().nodeFields.includes('machine')) {
        assert.equal(layout.compose({ ticks: d.ticks, sequence: d.sequence, machine: d.machine }), id)
      }
    }
    assert.equal(new Layout(layout.toString()).toString(), layout.toString())
    assert.ok(new Layout(layout.toString()).equals(layout))
  }
})

test('fields that disagree or do not belong are refused by name', () => {
  const snowflake = Layout.snowflake()
  const d = snowflake.decompose(snowflake.compose({ ticks: 5, node: 39 }))
  assert.throws(() => snowflake.compose({ ...d, worker: d.worker + 1 }), (e) => e instanceof LayoutError && /disagree|different/.test(e.message))
  assert.throws(() => snowflake.compose({ ticks: 1, machine: 1 }), (e) => e instanceof LayoutError && /machine/.test(e.message))
  assert.throws(() => snowflake.compose({ ticks: 1, datacenter: 1 }), (e) => e instanceof LayoutError && /worker/.test(e.message))
  assert.throws(() => snowflake.compose({ ...d, id: d.id + 1n }), LayoutError)
  assert.throws(() => snowflake.compose({ ticks: 1, color: 3 }), (e) => e instanceof LayoutError && /color/.test(e.message))
})

test('facts, and a warning from a year before a layout ends', () => {
  const s = Layout.snowflake()
  assert.equal(s.name, 'snowflake')
  assert.deepEqual([s.timeBits, s.sequenceBits, s.nodeBits], [41, 12, 10])
  assert.equal(s.idsPerSecondPerNode, 4096000)
  assert.equal(s.epochUnixMs, TWITTER_EPOCH)
  assert.equal(s.maxId, (1n << 63n) - 1n)
  assert.equal(s.jsSafe, false)
  assert.equal(Layout.jsSafe().jsSafe, true)
  assert.equal(s.endWarning(), null)
  const end = s.endUnixMs
  assert.match(s.endWarning(undefined, end - 10 * 86400000), /runs out at 2080-.*in 10\.0 days/)
  assert.match(s.endWarning(undefined, end + 1), /ran out/)
  assert.equal(s.msLeft(end + 1), 0)
  const ended = new Layout('time=20,seq=12,node=10,epoch=2000-01-01T00:00:00Z')
  const warnings = []
  process.on('warning', (w) => warnings.push(w))
  try {
    new Generator(ended, 1) // eslint-disable-line no-new
  } catch (e) {
    assert.equal(e.code, 'FLAKEID_LAYOUT_ENDED')
  }
  return new Promise((resolve) => setImmediate(() => {
    assert.ok(warnings.some((w) => w.code === 'FLAKEID_LAYOUT_ENDING'), warnings.map(String).join())
    resolve()
  }))
})

test('an idRange holds the IDs minted in the span and none minted outside it', async () => {
  const layout = Layout.snowflake()
  const g = new Generator(layout, 9)
  const before = g.nextId()
  await new Promise((resolve) => setTimeout(resolve, 5))
  const from = Date.now()
  const inside = g.nextIds(1000)
  await new Promise((resolve) => setTimeout(resolve, 5))
  const to = Date.now()
  await new Promise((resolve) => setTimeout(resolve, 2))
  const after = g.nextId()
  const { first, last } = layout.idRange(from, to)
  for (const id of inside) assert.ok(first <= id && id <= last, `${id} in ${first}..${last}`)
  assert.ok(before < first && after > last)
  // The edges exactly: the first ID of from's tick, the last of the tick before to's.
  assert.equal(first, layout.compose({ unixMs: from }))
  assert.equal(last + 1n, layout.compose({ unixMs: to }))
  assert.throws(() => layout.idRange(to, from), LayoutError)
  assert.deepEqual(layout.idRange(new Date(from), new Date(to).toISOString()), { first, last })
})

const vectors = process.env.FLAKEID_TEST_RUST_VECTORS
test('the Rust crate\'s IDs and fields, both ways', { skip: vectors === undefined && process.env.FLAKEID_REQUIRE_SERVERS === undefined && 'FLAKEID_TEST_RUST_VECTORS is not set (cargo test -p flakeid-node-tests sets it)' }, () => {
  assert.ok(vectors !== undefined, 'FLAKEID_TEST_RUST_VECTORS is not set and FLAKEID_REQUIRE_SERVERS is')
  const rows = JSON.parse(require('node:fs').readFileSync(vectors, 'utf8'))
  assert.ok(rows.length >= 2000, `${rows.length} rows`)
  const layouts = new Map()
  for (const row of rows) {
    if (!layouts.has(row.layout)) layouts.set(row.layout, new Layout(row.layout))
    const layout = layouts.get(row.layout)
    const id = BigInt(row.id)
    const d = layout.decompose(id)
    for (const k of ['ticks', 'unixMs', 'sequence', 'node', 'datacenter', 'worker', 'process', 'machine']) {
      assert.equal(d[k] === undefined ? undefined : String(d[k]), row[k], `${row.layout} ${row.id} ${k}`)
    }
    const fields = { ticks: BigInt(row.ticks), sequence: BigInt(row.sequence) }
    for (const k of ['node', 'datacenter', 'worker', 'process', 'machine']) {
      if (row[k] !== undefined) fields[k] = BigInt(row[k])
    }
    assert.equal(layout.compose(fields), id, `${row.layout} ${row.id}`)
  }
})
