// flakeid-rs beside the npm peers, in one run, as ratios: `npm run bench` (after `npm run
// build`: the release addon). Prints the tables of the package's README and of
// BENCHMARKS.md, with the machine. Goals (issue 62): nextId() no slower per call than
// @sapphire/snowflake; nextIds per ID at most 0.1x a nextId() loop; decode of 1M IDs at
// most 0.2x a JavaScript BigInt loop; the event loop's p99 delay under 1 ms while minting
// at the cap; no duplicate anywhere.

import { createRequire } from 'node:module'
import os from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const require = createRequire(import.meta.url)
const { Generator, Layout, decode } = require('../index.js')
const { Snowflake: Sapphire } = require('@sapphire/snowflake')
const { Snowflake: WasmSnowflake } = require('nodejs-snowflake')
const FlakeId = require('flake-idgen')
const hyperid = require('hyperid')

const TWITTER_EPOCH = 1288834974657
const ROUNDS = Number(process.env.ROUNDS ?? 5)

// ns per call of `f`, the best of ROUNDS rounds of `n` calls (after a warm-up).
function perCall (f, n) {
  for (let i = 0; i < Math.min(n, 100000); i++) f()
  let best = Infinity
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < n; i++) f()
    const ns = Number(process.hrtime.bigint() - t0) / n
    best = Math.min(best, ns)
  }
  return best
}

function table (title, rows, base) {
  console.log(`\n${title}\n`)
  console.log('| | ns per ID | x flakeid |')
  console.log('|---|---|---|')
  for (const [name, ns] of rows) console.log(`| ${name} | ${ns.toFixed(1)} | ${(ns / base).toFixed(2)}x |`)
}

console.log(`Machine: ${os.cpus().length} vCPU ${os.cpus()[0].model}, Node ${process.version}, ${os.platform()} ${os.release()}; best of ${ROUNDS} rounds each.`)

// One ID per call. A wide layout (22-bit sequence) so that no generator waits for a tick:
// the call is measured, not the layout's cap; the peers mint Twitter's layout, where
// @sapphire/snowflake and hyperid never wait (they do not count a sequence per ms).
const wide = new Layout(`time=41,seq=22,node=0,epoch=${new Date(TWITTER_EPOCH).toISOString()}`)
const g = new Generator(wide, 0)
const N = 1_000_000
const ours = perCall(() => g.nextId(), N)
const sapphire = new Sapphire(TWITTER_EPOCH)
const wasm = new WasmSnowflake({ custom_epoch: TWITTER_EPOCH, instance_id: 1 })
const flake = new FlakeId({ datacenter: 1, worker: 1, epoch: TWITTER_EPOCH })
const hid = hyperid()
let flakeIds = 0
const rows = [
  ['**flakeid-rs** `nextId()` (BigInt)', ours],
  ['**flakeid-rs** `nextIdString()`', perCall(() => g.nextIdString(), N)],
  ['@sapphire/snowflake `generate()` (BigInt)', perCall(() => sapphire.generate(), N)],
  ['nodejs-snowflake `getUniqueID()` (BigInt, WASM)', perCall(() => wasm.getUniqueID(), 200000)],
  ['flake-idgen `next()` (Buffer; throws past 4,096 a ms)', perCall(() => { try { flake.next(); flakeIds++ } catch {} }, 200000)],
  ['hyperid `hyperid()` (a string, not time-ordered)', perCall(() => hid(), N)]
]
table('One ID per call', rows, ours)

// Batches: per ID, against the nextId() loop.
const batchNs = perCall(() => g.nextIds(4096), 500) / 4096
table('4,096 IDs in one call (per ID)', [
  ['**flakeid-rs** `nextIds(4096)`', batchNs],
  ['**flakeid-rs** `nextId()` loop', ours]
], batchNs)
console.log(`\nnextIds per ID / nextId(): ${(batchNs / ours).toFixed(3)}x (goal <= 0.1x)`)

// Decode 1M IDs into columns, against a JavaScript loop of BigInt shifts.
const ids = new Generator('snowflake', 5).nextIds(1_000_000)
const decodeNs = perCall(() => decode('snowflake', ids), 3) / ids.length
// The same six columns decode gives for Twitter's layout.
const jsNs = perCall(() => {
  const n = ids.length
  const ticks = new Float64Array(n)
  const unixMs = new Float64Array(n)
  const sequence = new Uint32Array(n)
  const node = new Uint32Array(n)
  const datacenter = new Uint32Array(n)
  const worker = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    const id = ids[i]
    const t = Number(id >> 22n)
    ticks[i] = t
    unixMs[i] = t + TWITTER_EPOCH
    const nd = Number((id >> 12n) & 1023n)
    node[i] = nd
    datacenter[i] = nd >> 5
    worker[i] = nd & 31
    sequence[i] = Number(id & 4095n)
  }
}, 3) / ids.length
// The floor: allocating the six columns and writing each once (`fill`), as decode must.
const allocNs = perCall(() => {
  const n = ids.length
  return [new Float64Array(n), new Float64Array(n), new Uint32Array(n), new Uint32Array(n), new Uint32Array(n), new Uint32Array(n)].map((c) => c.fill(1))
}, 3) / ids.length
table('Decode 1M IDs into typed arrays (per ID; ticks, unixMs, sequence, node, datacenter, worker)', [
  ['**flakeid-rs** `decode()` (SIMD)', decodeNs],
  ['a JavaScript loop of BigInt shifts, the same columns', jsNs],
  ['allocating the six columns and filling them (the floor)', allocNs]
], decodeNs)
console.log(`\ndecode / JavaScript loop: ${(decodeNs / jsNs).toFixed(3)}x (goal <= 0.2x)`)

// The event loop while minting at Twitter's cap (4,096 a ms) off it: 4M IDs, about 1 s,
// one batch of 4,096 in flight at a time, as a service that needs IDs at that rate would.
// The histogram's own floor: its 1 ms sampling timer, idle for a second.
const idle = monitorEventLoopDelay({ resolution: 1 })
idle.enable()
await new Promise((resolve) => setTimeout(resolve, 1000))
idle.disable()
const capped = new Generator('snowflake', 9)
const h = monitorEventLoopDelay({ resolution: 1 })
h.enable()
const t0 = process.hrtime.bigint()
let minted = 0
while (minted < 4194304) minted += (await capped.nextIdsAsync(4096)).length
const seconds = Number(process.hrtime.bigint() - t0) / 1e9
h.disable()
const ms = (v) => (v / 1e6).toFixed(2)
console.log(`\nMinting at the cap with nextIdsAsync: ${minted} IDs in ${seconds.toFixed(2)} s (${(minted / seconds / 4096000 * 100).toFixed(1)}% of the cap); event loop delay (monitorEventLoopDelay, 1 ms sampling) p50 ${ms(h.percentile(50))} ms, p99 ${ms(h.percentile(99))} ms, max ${ms(h.max)} ms; idle: p50 ${ms(idle.percentile(50))} ms, p99 ${ms(idle.percentile(99))} ms; p99 above idle ${ms(h.percentile(99) - idle.percentile(99))} ms (goal: under 1 ms)`)

// Duplicates when asked for more than 4,096 IDs within a millisecond: 100,000 IDs as fast
// as each can, on Twitter's layout.
function duplicates (make) {
  const seen = new Set()
  let dup = 0
  let failed = 0
  for (let i = 0; i < 100000; i++) {
    let id
    try { id = make() } catch { failed++; continue }
    if (seen.has(id)) dup++
    else seen.add(id)
  }
  return { dup, failed }
}
const snow = new Generator('snowflake', 1)
console.log('\n| 100,000 IDs as fast as they come (Twitter\'s layout) | duplicates | refused |')
console.log('|---|---|---|')
for (const [name, make] of [
  ['**flakeid-rs** `nextId()`', () => snow.nextId()],
  ['@sapphire/snowflake `generate()`', () => sapphire.generate()],
  ['nodejs-snowflake `getUniqueID()`', () => wasm.getUniqueID()],
  ['flake-idgen `next()`', () => flake.next().readBigUInt64BE(0)]
]) {
  const { dup, failed } = duplicates(make)
  console.log(`| ${name} | ${dup} | ${failed} |`)
}
