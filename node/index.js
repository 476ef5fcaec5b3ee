'use strict'
// flakeid for Node.js: the API over the addon (src/, napi-rs). The addon does the work;
// this file checks arguments, turns the addon's errors into the package's (errors.js),
// and releases claims at exit.

const { EventEmitter } = require('node:events')
const os = require('node:os')
const path = require('node:path')
const { isMainThread } = require('node:worker_threads')
const errors = require('./errors.js')

const { convert, FlakeidTypeError, FlakeidRangeError, LayoutError } = errors

// The addon for this platform: the one built here (`npm run build`), else the platform
// package a release publishes beside this one (`flakeid-rs-linux-x64-gnu`, ...).
function load () {
  const { triple, addon } = require('./platform.js')
  const tried = []
  for (const candidate of [path.join(__dirname, addon), `flakeid-rs-${triple}`]) {
    try {
      return require(candidate)
    } catch (e) {
      tried.push(`${candidate}: ${e.message.split('\n')[0]}`)
    }
  }
  throw new Error(`flakeid-rs has no addon for ${process.platform}-${process.arch} here (tried ${tried.join('; ')}): build it with \`npm run build\` in the package (needs Rust), or install on a platform a release is built for`)
}

const native = load()

// `f()`, its errors as the package's.
function call (f) {
  try {
    return f()
  } catch (e) {
    throw convert(e)
  }
}

// The promise `f` returns, every error of it (thrown or rejected) a rejection.
function promise (f) {
  try {
    return f().catch((e) => { throw convert(e) })
  } catch (e) {
    return Promise.reject(convert(e))
  }
}

function typeError (message) {
  return new FlakeidTypeError(message)
}

// A whole number (number or BigInt) for a field or node id.
function wholeArg (what, v) {
  if (typeof v === 'number' || typeof v === 'bigint') return v
  throw typeError(`${what} must be a number or a BigInt, not ${describe(v)}`)
}

function describe (v) {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  return typeof v === 'object' ? `a ${v.constructor?.name ?? 'object'}` : `${typeof v} ${String(v).slice(0, 40)}`
}

// An instant as Unix milliseconds: a number, a Date, or RFC 3339 text.
function instantMs (what, v) {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new FlakeidRangeError(`${what} ${v} is not a time: give Unix milliseconds, a Date or RFC 3339 text`)
    return v
  }
  if (v instanceof Date) {
    const ms = v.getTime()
    if (Number.isNaN(ms)) throw new FlakeidRangeError(`${what} is an invalid Date`)
    return ms
  }
  if (typeof v === 'string') {
    const ms = Date.parse(v)
    if (Number.isNaN(ms)) throw new LayoutError(`${what} ${JSON.stringify(v.slice(0, 40))} is not a time: give RFC 3339 text such as 2026-01-01T00:00:00Z`, 'FLAKEID_LAYOUT')
    return ms
  }
  throw typeError(`${what} must be Unix milliseconds (a number), a Date or RFC 3339 text, not ${describe(v)}`)
}

function countArg (n) {
  if (typeof n !== 'number') throw typeError(`n must be a number (a count of IDs), not ${describe(n)}`)
  return n
}

// An options object, with none but the `known` names (a misspelt option is an error,
// not a default taken in silence).
function optionsArg (what, o, known) {
  if (o === undefined || o === null) return {}
  if (typeof o !== 'object' || Array.isArray(o)) throw typeError(`${what} must be an object, not ${describe(o)}`)
  if (known !== undefined) {
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) throw typeError(`${what} has no option ${JSON.stringify(k)}: the options are ${known.join(', ')}`)
    }
  }
  return o
}

const MINT_OPTIONS = ['maxWaitMs', 'asyncWaitMs', 'clockPolicy', 'endWarningMs']
const CLAIM_OPTIONS = ['layout', 'namespace', 'nodes', 'windowMs', 'ttlMs', 'instance', 'poolWaitMs', 'password', ...MINT_OPTIONS]

const YEAR_MS = 365.25 * 86400000
// The fields `compose` takes: whole numbers, and the others (times, and the ID itself).
const WHOLE_FIELDS = ['ticks', 'sequence', 'node', 'datacenter', 'worker', 'process', 'machine']
const OTHER_FIELDS = ['unixMs', 'time', 'id']

/** A bit layout: a preset's name or a layout string (`time=41,seq=12,node=10,...`). */
class Layout {
  constructor (spec = 'snowflake') {
    if (spec instanceof Layout) {
      this._native = spec._native
    } else if (typeof spec === 'string') {
      this._native = call(() => native.NativeLayout.parse(spec))
    } else if (spec instanceof native.NativeLayout) {
      this._native = spec
    } else {
      throw typeError(`a layout is a preset's name or a layout string, not ${describe(spec)}`)
    }
    this._facts = null
    this._plan = null
  }

  static parse (spec) { return new Layout(spec) }
  static presets () { return native.NativeLayout.presets() }
  static snowflake () { return new Layout('snowflake') }
  static sonyflake () { return new Layout('sonyflake') }
  static sonyflakeV1 () { return new Layout('sonyflake-v1') }
  static discord () { return new Layout('discord') }
  static instagram () { return new Layout('instagram') }
  static mastodon () { return new Layout('mastodon') }
  static jsSafe () { return new Layout('js-safe') }

  /** Every fact of the layout (bits, tick, epoch, end, IDs per second, nodes, ...). */
  facts () {
    if (this._facts === null) this._facts = Object.freeze(this._native.facts())
    return this._facts
  }

  get name () { return this.facts().name ?? null }
  get timeBits () { return this.facts().timeBits }
  get sequenceBits () { return this.facts().sequenceBits }
  get nodeBits () { return this.facts().nodeBits }
  get unitMs () { return this.facts().unitMs }
  get epochUnixMs () { return this.facts().epochUnixMs }
  get endUnixMs () { return this.facts().endUnixMs }
  get lifetimeYears () { return this.facts().lifetimeYears }
  get idsPerSecondPerNode () { return this.facts().idsPerSecondPerNode }
  get nodeCount () { return this.facts().nodeCount }
  get maxNode () { return this.facts().maxNode }
  get maxSequence () { return this.facts().maxSequence }
  get maxId () { return this.facts().maxId }
  get nodeFields () { return this.facts().nodeFields }
  get jsSafe () { return this.facts().javascriptSafe }

  /** Milliseconds until the layout runs out (0 once it has). */
  msLeft (now = Date.now()) {
    return call(() => this._native.msLeft(instantMs('now', now)))
  }

  /** A warning when the layout ends within `marginMs` (a year by default), else null. */
  endWarning (marginMs = YEAR_MS, now = Date.now()) {
    const left = this.msLeft(now)
    if (left > marginMs) return null
    const end = new Date(this.endUnixMs).toISOString()
    return left === 0
      ? `layout ${this} ran out at ${end}: it mints no more IDs (its IDs still decode); move to a layout with a later epoch or more time bits`
      : `layout ${this} runs out at ${end}, in ${(left / 86400000).toFixed(1)} days: move to a layout with a later epoch or more time bits before then`
  }

  /**
   * The ID of `fields`: the tick as `ticks`, `unixMs` or `time` (a Date or RFC 3339
   * text), `sequence`, and the node by any name `decompose` gives it (`node`,
   * `datacenter` and `worker`, Discord's `worker` and `process`, Sonyflake's `machine`).
   */
  compose (fields) {
    const f = optionsArg('fields', fields)
    const given = {}
    for (const k of Object.keys(f)) {
      if (WHOLE_FIELDS.includes(k)) {
        if (f[k] !== undefined) given[k] = wholeArg(k, f[k])
      } else if (!OTHER_FIELDS.includes(k)) {
        throw new LayoutError(`${k} is not a field of an ID: give ticks, unixMs or time, sequence, and node or its parts (${this.nodeFields.join(', ')})`, 'FLAKEID_LAYOUT')
      }
    }
    if (f.unixMs !== undefined) given.unixMs = instantMs('unixMs', f.unixMs)
    if (f.time !== undefined) {
      const ms = instantMs('time', f.time)
      if (given.unixMs !== undefined && given.unixMs !== ms) {
        throw new LayoutError(`time ${new Date(ms).toISOString()} and unixMs ${given.unixMs} disagree: give one of them, or both as decompose gives them`, 'FLAKEID_LAYOUT')
      }
      given.unixMs = ms
    }
    const id = call(() => this._native.compose(given))
    if (f.id !== undefined && f.id !== id) {
      throw new LayoutError(`the fields compose to ID ${id}, not the id ${f.id} given with them`, 'FLAKEID_LAYOUT')
    }
    return id
  }

  /** One ID's fields (a BigInt, a safe whole number or decimal text), with its `time`. */
  decompose (id) {
    if (typeof id !== 'bigint' && typeof id !== 'number' && typeof id !== 'string') {
      throw typeError(`an ID is a BigInt, a number or decimal text, not ${describe(id)}`)
    }
    const d = call(() => this._native.decompose(id))
    d.time = new Date(d.unixMs)
    return d
  }

  /**
   * The first and last ID of the span from `from` (inclusive) to `to` (exclusive; now by
   * default), both inclusive, for `WHERE id BETWEEN first AND last`.
   */
  idRange (from, to = Date.now()) {
    const f = instantMs('from', from)
    const t = instantMs('to', to)
    return call(() => this._native.idRange(f, t))
  }

  /** Columns of `ids` (a BigUint64Array, an array of BigInts, or decimal strings). */
  decode (ids) {
    return decode(this, ids)
  }

  equals (other) { return other instanceof Layout && this._native.equals(other._native) }
  toString () { return this._native.text() }
  toJSON () { return this.toString() }
}

function layoutOf (l) {
  if (l === undefined || l === null) return Layout.snowflake()
  return l instanceof Layout ? l : new Layout(l)
}

/** A generator of IDs of one layout on one node id. */
const NONE = new BigUint64Array(0)
// The most IDs `nextId` takes from the addon at once (all of one tick).
const MOST_AT_ONCE = 256

class Generator {
  constructor (layout, node, options) {
    // The IDs of the tick now that `nextId` hands out, until `_until` (Unix ms): a call
    // into the addon costs about 250 ns, more than the BigInt it returns, so `nextId`
    // takes a few of one tick at a time (one at first, twice as many each time a tick's
    // batch runs out before the tick ends) and drops what its tick did not use.
    this._ids = NONE
    this._at = 0
    this._until = 0
    this._want = 1
    if (layout instanceof native.NativeGenerator) {
      this._native = layout
      this.layout = node
      return
    }
    const l = layoutOf(layout)
    const o = optionsArg('options', options, MINT_OPTIONS)
    this._native = call(() => new native.NativeGenerator(l._native, wholeArg('node', node), mintOptions(o)))
    this.layout = l
    warnIfEnding(l, o)
  }

  get node () { return this._native.node }

  /**
   * The next ID (a BigInt), of the tick now; waits for the next tick at most `maxWaitMs`.
   * IDs from one generator object strictly increase, whichever call mints them.
   */
  nextId () {
    if (this._at < this._ids.length && Date.now() < this._until) return this._ids[this._at++]
    return this._next()
  }

  _next () {
    if (this._ids.length > 0) {
      // Used up within its tick: take more at once; outlived by its tick: fewer.
      if (this._at === this._ids.length) this._want = Math.min(this._want * 2, MOST_AT_ONCE)
      else this._want = Math.max(1, this._want >> 1)
    }
    let batch
    try { batch = this._native.nextIdsInTick(this._want) } catch (e) { throw convert(e) }
    this._ids = batch.ids
    this._until = batch.untilMs
    this._at = 1
    return this._ids[0]
  }

  // Any other way of minting comes after what `nextId` holds: that is dropped.
  _drop () {
    this._ids = NONE
    this._at = 0
  }

  /** The next ID without waiting (a MintError FLAKEID_WOULD_BLOCK where it would). */
  tryNextId () {
    this._drop()
    try { return this._native.tryNextId() } catch (e) { throw convert(e) }
  }

  /** The next ID as decimal text (for JSON). */
  nextIdString () {
    return String(this.nextId())
  }

  /** The next ID as a number: for a layout of 53 bits or fewer (`Layout.jsSafe()`). */
  nextIdNumber () {
    this._drop()
    try { return this._native.nextIdNumber() } catch (e) { throw convert(e) }
  }

  /** `n` IDs in a BigUint64Array. */
  nextIds (n) {
    countArg(n)
    this._drop()
    try { return this._native.nextIds(n) } catch (e) { throw convert(e) }
  }

  /** The next ID, waiting off the event loop. */
  nextIdAsync () {
    this._drop()
    return promise(() => this._native.nextIdAsync())
  }

  /** `n` IDs in a BigUint64Array, minted off the event loop. */
  nextIdsAsync (n) {
    this._drop()
    return promise(() => this._native.nextIdsAsync(countArg(n)))
  }
}

function mintOptions (o) {
  return {
    maxWaitMs: o.maxWaitMs,
    asyncWaitMs: o.asyncWaitMs,
    clockPolicy: o.clockPolicy
  }
}

function claimOptions (o) {
  return {
    namespace: o.namespace,
    nodes: o.nodes,
    windowMs: o.windowMs,
    ttlMs: o.ttlMs,
    instance: o.instance,
    poolWaitMs: o.poolWaitMs,
    password: o.password
  }
}

function warnIfEnding (layout, o) {
  if (o.endWarningMs === 0) return
  const w = layout.endWarning(o.endWarningMs ?? YEAR_MS)
  if (w !== null) process.emitWarning(w, { code: 'FLAKEID_LAYOUT_ENDING' })
}

const live = new Set()
let exitHook = false

function track (g) {
  live.add(new WeakRef(g))
  if (!exitHook) {
    exitHook = true
    process.on('exit', () => {
      for (const ref of live) ref.deref()?.close()
    })
  }
}

/**
 * A generator on a node id claimed from a store and fenced by its window: it emits
 * `renewing`, `active`, `lost` and `released` (with its status) as its claim changes,
 * told by the claim's renewal thread as it happens; `close()` (or the end of the process)
 * releases the claim.
 */
class ClaimedGenerator extends Generator {
  constructor (nativeGenerator, layout) {
    super(nativeGenerator, layout)
    this._events = new EventEmitter()
    this._watching = 0
  }

  /** The claim's state: store, namespace, node, state, fence, renewals, failures. */
  status () { return this._native.status() }

  /** Releases the claim; minting on it after is a ClaimError of kind `released`. */
  close () {
    this._unwatch()
    this._drop()
    this._native.close()
  }

  [Symbol.dispose] () { this.close() }

  on (event, listener) {
    this._events.on(event, listener)
    this._watch()
    return this
  }

  once (event, listener) {
    this._events.once(event, listener)
    this._watch()
    return this
  }

  off (event, listener) {
    this._events.off(event, listener)
    return this
  }

  // The claim's changes, from its renewal thread: `lost` when nothing renews it any more
  // (the store gave the id to another, or the renewal stopped), `released` when another
  // thread of the process closed a claim shared with it.
  _watch () {
    if (this._watching !== 0) return
    this._watching = this._native.watch((state) => {
      if (this._watching === 0) return
      const event = state === 'active' || state === 'renewing' || state === 'released' ? state : 'lost'
      this._events.emit(event, this._native.status())
      if (event === 'lost' || event === 'released') this.close()
    })
  }

  _unwatch () {
    if (this._watching === 0) return
    this._native.unwatch(this._watching)
    this._watching = 0
  }
}

/**
 * A generator on a node id claimed from the store at `url` (`file:DIR`,
 * `etcd://HOST:PORT`, `zookeeper://HOST:PORT`, `postgres://ROLE@HOST/DB`).
 */
function claim (url, options) {
  if (typeof url !== 'string') throw typeError(`the store is a URL string, not ${describe(url)}`)
  const o = optionsArg('options', options, CLAIM_OPTIONS)
  const l = layoutOf(o.layout)
  const n = call(() => native.claim(url, l._native, claimOptions(o), mintOptions(o)))
  const g = new ClaimedGenerator(n, l)
  track(g)
  warnIfEnding(l, o)
  return g
}

/** The directory `perProcess` claims from by default: one per user, in the temp dir. */
function defaultDir () {
  const who = typeof process.getuid === 'function' ? process.getuid() : os.userInfo().username
  return path.join(os.tmpdir(), `flakeid-${who}`)
}

/**
 * This process's generator: a node id of its own among the processes of this host
 * (`cluster`, PM2, `child_process.fork`), claimed from a directory with no coordinator,
 * the same one in every `worker_thread`, released when the process ends.
 */
function perProcess (options) {
  const o = optionsArg('options', options, [...CLAIM_OPTIONS, 'dir'])
  const dir = o.dir ?? defaultDir()
  if (typeof dir !== 'string') throw typeError(`dir must be a directory's path, not ${describe(dir)}`)
  const l = layoutOf(o.layout)
  const n = call(() => native.perProcess(dir, l._native, claimOptions(o), mintOptions(o)))
  const g = new ClaimedGenerator(n, l)
  // Worker threads leave it to the process; the main thread's end is the process's.
  if (isMainThread) track(g)
  warnIfEnding(l, o)
  return g
}

/** What the store at `url` holds for `namespace`: each node id's state and holder. */
function claims (url, namespace = 'default', options) {
  if (typeof url !== 'string') throw typeError(`the store is a URL string, not ${describe(url)}`)
  const o = optionsArg('options', options, ['password'])
  return call(() => native.claimsOf(url, namespace, claimOptions(o)))
}

/** Columns of `ids`: `unixMs`, `ticks`, `sequence`, `node` and the node's named parts. */
function decode (layout, ids) {
  const l = layoutOf(layout)
  if (ids instanceof BigUint64Array) return columns(l, ids)
  if (ids instanceof BigInt64Array) return columns(l, new BigUint64Array(ids.buffer, ids.byteOffset, ids.length))
  if (!Array.isArray(ids)) throw typeError(`ids must be a BigUint64Array, an array of BigInts or an array of decimal strings, not ${describe(ids)}`)
  const out = new BigUint64Array(ids.length)
  if (ids.length > 0 && typeof ids[0] === 'string') {
    for (let i = 0; i < ids.length; i++) {
      if (typeof ids[i] !== 'string') throw typeError(`ids[${i}] is ${describe(ids[i])}, in an array of decimal strings`)
    }
    call(() => native.parseIds(ids, out))
    return columns(l, out)
  }
  for (let i = 0; i < ids.length; i++) {
    const v = ids[i]
    if (typeof v === 'bigint') {
      if (v < 0n || v > 0xffffffffffffffffn) throw new FlakeidRangeError(`ids[${i}] ${v} is not 64 bits: give an ID from 0 to 2^64 - 1`)
      out[i] = v
    } else if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) {
      out[i] = BigInt(v)
    } else {
      throw typeError(`ids[${i}] is ${describe(v)}: give BigInts (or safe whole numbers)`)
    }
  }
  return columns(l, out)
}

// The columns of a BigUint64Array of IDs: allocated here, each its own typed array of
// the width the layout needs, and filled by the addon in place.
function columns (l, ids) {
  const p = l._plan ?? (l._plan = call(() => native.columnPlan(l._native)))
  const n = ids.length
  const whole = (wide) => wide ? new BigUint64Array(n) : new Uint32Array(n)
  const c = {
    unixMs: new Float64Array(n),
    ticks: p.ticksWide ? new BigUint64Array(n) : new Float64Array(n),
    sequence: whole(p.sequenceWide),
    node: whole(p.nodeWide)
  }
  const high = p.high ? whole(p.highWide) : undefined
  const low = p.low ? whole(p.lowWide) : undefined
  call(() => native.decodeInto(l._native, ids, c.unixMs, c.ticks, c.sequence, c.node, high, low))
  if (p.high) {
    c[p.high] = high
    c[p.low] = low
  }
  if (p.machine) c.machine = c.node.slice()
  return c
}

module.exports = {
  Layout,
  Generator,
  ClaimedGenerator,
  claim,
  perProcess,
  claims,
  decode,
  defaultDir,
  version: native.version(),
  ...errors,
  // The tests' check that a panic in the addon is an exception: not part of the API.
  _panicForTests: () => call(() => native.__panicForTests())
}
delete module.exports.convert
