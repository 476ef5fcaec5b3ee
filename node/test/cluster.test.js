'use strict'
// Per-process IDs with no coordinator: 8 `cluster` workers with 4 `worker_threads` each
// mint on `perProcess` for FLAKEID_NODE_CLUSTER_SECONDS (10 by default): the workers'
// node ids are distinct, the threads of a worker share one, no ID repeats, and a worker
// killed with SIGKILL has its node id taken by its replacement above its last ID.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Layout } = require('..')

const SECONDS = Number(process.env.FLAKEID_NODE_CLUSTER_SECONDS ?? 10)

test(`8 cluster workers x 4 worker_threads for ${SECONDS} s: no duplicate, a killed worker's id taken above its last ID`, { timeout: (SECONDS + 60) * 1000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flakeid-node-cluster-'))
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'flakeid-node-cluster-out-'))
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures/cluster.js'), dir, String(SECONDS), out], { stdio: ['ignore', 'inherit', 'inherit'] })
  const code = await new Promise((resolve) => child.on('exit', resolve))
  assert.equal(code, 0)
  const summary = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'))
  assert.deepEqual(summary.errors, [])
  // Every worker its own node id; the replacement has the dead one's, above its last ID.
  const said = JSON.stringify(summary)
  const byPid = summary.nodes
  const first = Object.entries(byPid).filter(([pid]) => Number(pid) !== summary.replacement.pid)
  assert.equal(first.length, 8, said)
  assert.equal(new Set(first.map(([, node]) => node)).size, 8, said)
  assert.equal(summary.replacement.node, summary.killed.node, said)
  assert.ok(BigInt(summary.replacement.first) > BigInt(summary.killed.last), said)
  // No ID twice, across every thread of every worker; each decodes to its worker's node.
  const layout = Layout.snowflake()
  const all = []
  for (const f of fs.readdirSync(out).filter((f) => f.endsWith('.bin'))) {
    const pid = f.split('-')[0]
    const buf = fs.readFileSync(path.join(out, f))
    const ids = new BigUint64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length))
    if (ids.length > 0) assert.equal(layout.decompose(ids[0]).node, byPid[pid], f)
    all.push(ids)
  }
  assert.ok(all.length >= 32, `${all.length} threads wrote IDs`)
  const merged = new BigUint64Array(all.reduce((n, a) => n + a.length, 0))
  let at = 0
  for (const a of all) { merged.set(a, at); at += a.length }
  merged.sort()
  let duplicates = 0
  for (let i = 1; i < merged.length; i++) if (merged[i] === merged[i - 1]) duplicates++
  console.log(`${merged.length} IDs kept from ${all.length} threads, ${duplicates} duplicates`)
  assert.equal(duplicates, 0)
  fs.rmSync(out, { recursive: true })
  fs.rmSync(dir, { recursive: true })
})
