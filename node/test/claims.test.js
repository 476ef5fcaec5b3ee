'use strict'
// Claims: fenced generators on a real file store, and on the etcd and PostgreSQL the
// harness starts (FLAKEID_TEST_ETCD, FLAKEID_TEST_POSTGRES; under FLAKEID_REQUIRE_SERVERS
// a missing one fails instead of skipping); status, events, release, listings.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { claim, claims, perProcess, ClaimError, Layout } = require('..')

function tempDir (name) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `flakeid-node-${name}-`))
}

function server (name) {
  const url = process.env[`FLAKEID_TEST_${name}`]
  if (url === undefined && process.env.FLAKEID_REQUIRE_SERVERS !== undefined) {
    throw new Error(`FLAKEID_TEST_${name} is not set and FLAKEID_REQUIRE_SERVERS is: run the suite through cargo test -p flakeid-node-tests, which starts the servers`)
  }
  return url
}

function stores () {
  const dir = tempDir('file')
  return [
    ['file', `file:${dir}`],
    ['etcd', server('ETCD')],
    ['postgres', server('POSTGRES')],
    ['zookeeper', server('ZOOKEEPER')]
  ]
}

for (const [name, url] of stores()) {
  test(`claims on ${name}: distinct node ids, listed, released on close`, { skip: url === undefined && `no ${name} (FLAKEID_TEST_${name.toUpperCase()})` }, () => {
    const namespace = `node-${process.pid}-${name}`
    const a = claim(url, { namespace, nodes: [0, 4], windowMs: 2000 })
    const b = claim(url, { namespace, nodes: [0, 4], windowMs: 2000 })
    assert.notEqual(a.node, b.node)
    const ids = new Set()
    for (const g of [a, b]) {
      for (const id of g.nextIds(5000)) ids.add(id)
      assert.equal(Layout.snowflake().decompose(g.nextId()).node, g.node)
      const s = g.status()
      assert.equal(s.state, 'active')
      assert.equal(s.namespace, namespace)
      assert.equal(s.node, g.node)
    }
    assert.equal(ids.size, 10000)
    const held = claims(url, namespace).filter((c) => c.state === 'held').map((c) => c.node).sort()
    assert.deepEqual(held, [a.node, b.node].sort())
    a.close()
    assert.throws(() => a.nextId(), (e) => e instanceof ClaimError && e.kind === 'released' && e.code === 'FLAKEID_RELEASED')
    assert.equal(a.status().state, 'released')
    // The released id is taken again, above the IDs minted on it before.
    const last = b.nextId()
    const c = claim(url, { namespace, nodes: [a.node, a.node + 1], windowMs: 2000, poolWaitMs: 5000 })
    assert.equal(c.node, a.node)
    c.close()
    b.close()
    assert.ok(last > 0n)
  })
}

test('a pool that is full says so, with what to do', () => {
  const url = `file:${tempDir('full')}`
  const a = claim(url, { nodes: [3, 4] })
  assert.throws(() => claim(url, { nodes: [3, 4], poolWaitMs: 0 }), (e) => e instanceof ClaimError && e.kind === 'busy' && /pool/.test(e.message))
  a.close()
  assert.throws(() => claim('nope://x'), (e) => e instanceof ClaimError && e.kind === 'settings')
  assert.throws(() => claim(`file:${tempDir('pw')}`, { nodes: [5, 2] }), (e) => e instanceof ClaimError && e.kind === 'settings')
  assert.throws(() => claim('postgres://u:secret@127.0.0.1:1/db'), (e) => e instanceof ClaimError && !e.message.includes('secret'))
})

test('a lost claim is an event and a typed error at the fence', async () => {
  const dir = tempDir('lost')
  const g = claim(`file:${dir}`, { namespace: 'lost', nodes: [0, 1], windowMs: 300, maxWaitMs: 0 })
  const lost = new Promise((resolve) => g.on('lost', resolve))
  // Another holder takes the id (its lock file removed under the holder: the state file
  // stays, so the renewal finds the id is not this holder's).
  for (const f of fs.readdirSync(path.join(dir, 'lost'))) {
    if (f.endsWith('.lock')) fs.rmSync(path.join(dir, 'lost', f))
  }
  const other = claim(`file:${dir}`, { namespace: 'lost', nodes: [0, 1], poolWaitMs: 3000 })
  const status = await Promise.race([lost, new Promise((resolve) => setTimeout(() => resolve(null), 5000))])
  other.close()
  assert.ok(status !== null, 'no lost event within 5 s')
  assert.equal(status.state, 'lost')
  assert.throws(() => { for (;;) g.nextId() }, (e) => e instanceof ClaimError || e.code === 'FLAKEID_CLAIM_LOST' || e.code === 'FLAKEID_AT_FENCE' || e.code === 'FLAKEID_RELEASED')
})

// An event of `g`, or null after `ms` (the bound of every wait here).
function next (g, event, ms = 5000) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { g.off(event, done); resolve(null) }, ms)
    function done (status) { clearTimeout(timer); resolve(status) }
    g.once(event, done)
  })
}

test('a renewal that fails is a renewing event, the next that lands an active one, as they happen', async () => {
  const dir = tempDir('events')
  // Renewed every 200 ms; the events come from the renewal thread, not a poll.
  const g = claim(`file:${dir}`, { namespace: 'ev', windowMs: 600 })
  const seen = []
  for (const e of ['renewing', 'active', 'lost', 'released']) g.on(e, (s) => seen.push([e, s.state]))
  // The state file swapped for one the store cannot read, and back, each by an atomic
  // rename (the file is never missing, which the store would take for a loss): a
  // failure, not a loss.
  const state = path.join(dir, 'ev', `node-${g.node}.state`)
  const renewing = next(g, 'renewing')
  fs.copyFileSync(state, `${state}.kept`)
  fs.writeFileSync(`${state}.bad`, 'not a claim\n')
  fs.renameSync(`${state}.bad`, state)
  const failed = await renewing
  assert.ok(failed !== null, 'no renewing event within 5 s')
  assert.equal(failed.state, 'renewing')
  assert.match(failed.lastError, /cannot read/)
  const active = next(g, 'active')
  fs.renameSync(`${state}.kept`, state)
  assert.ok((await active) !== null, 'no active event within 5 s')
  g.close()
  // Each change once, in order; the generator's own close() is not an event.
  assert.deepEqual(seen, [['renewing', 'renewing'], ['active', 'active']])
})

test('a claim shared with a generator that closes it is a released event', async () => {
  const dir = tempDir('shared-events')
  const a = perProcess({ dir, namespace: 'ev' })
  const b = perProcess({ dir, namespace: 'ev' })
  const released = next(a, 'released')
  b.close()
  const status = await released
  assert.ok(status !== null, 'no released event within 5 s')
  assert.equal(status.state, 'released')
  assert.throws(() => a.nextId(), (e) => e instanceof ClaimError && e.kind === 'released')
})

test('a listener keeps no process alive, and a misspelt option is a TypeError', () => {
  const dir = tempDir('exit')
  // A process that listens to its claim and never closes it ends by itself; its exit
  // releases the claim.
  const script = `const g = require(${JSON.stringify(path.join(__dirname, '..'))}).claim('file:${dir}', { namespace: 'exit' }); g.on('lost', () => {}); g.nextId()`
  const r = require('node:child_process').spawnSync(process.execPath, ['-e', script], { timeout: 20000, encoding: 'utf8' })
  assert.equal(r.signal, null, `killed after 20 s: a listener kept the process alive (${r.stderr})`)
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(claims(`file:${dir}`, 'exit').map((c) => c.state), ['released'])
  assert.throws(() => claim(`file:${dir}`, { windowMS: 300 }), (e) => e instanceof TypeError && e.code === 'FLAKEID_INVALID_TYPE' && /windowMS.*windowMs/.test(e.message))
  assert.throws(() => perProcess({ dir, namspace: 'x' }), (e) => e instanceof TypeError && /namspace/.test(e.message))
})

test('perProcess gives this process one node id, the same on every call', () => {
  const dir = tempDir('per')
  const a = perProcess({ dir })
  const b = perProcess({ dir })
  assert.equal(a.node, b.node)
  const x = a.nextId()
  const y = b.nextId()
  assert.ok(x < y)
  a.close()
  assert.throws(() => b.nextId(), (e) => e instanceof ClaimError && e.kind === 'released')
})
