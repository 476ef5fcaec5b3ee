// Types of flakeid-rs (index.js). Every error has a stable `code`; see errors.js.

/** Facts of a layout, all at once. */
export interface LayoutFacts {
  name: string | null
  text: string
  timeBits: number
  sequenceBits: number
  nodeBits: number
  datacenterBits: number
  workerBits: number
  unitMs: number
  epochUnixMs: number
  endUnixMs: number
  lifetimeYears: number
  idsPerSecondPerNode: number
  nodeCount: number
  maxNode: number
  maxSequence: number
  maxId: bigint
  order: 'time|node|sequence' | 'time|sequence|node'
  nodeFields: string[]
  javascriptSafe: boolean
}

/** A whole number: a number up to 2^53 - 1, or a BigInt. */
export type Whole = number | bigint
/** An instant: Unix milliseconds, a Date, or RFC 3339 text. */
export type Instant = number | Date | string

/** The fields `compose` takes: what `decompose` gives, or any part of it that names the ID. */
export interface ComposeFields {
  ticks?: Whole
  unixMs?: Instant
  time?: Instant
  sequence?: Whole
  node?: Whole
  datacenter?: Whole
  worker?: Whole
  process?: Whole
  machine?: Whole
  /** Checked against the ID the fields compose to. */
  id?: bigint
}

/** One ID's fields; a field past 2^53 - 1 is a BigInt. */
export interface Decomposed {
  id: bigint
  ticks: number | bigint
  unixMs: number
  time: Date
  sequence: number | bigint
  node: number | bigint
  datacenter?: number | bigint
  worker?: number | bigint
  process?: number | bigint
  machine?: number | bigint
}

/** The first and last ID of a span of time, both inclusive (`WHERE id BETWEEN first AND last`). */
export interface IdRange {
  first: bigint
  last: bigint
}

/** Decoded columns. */
export interface Columns {
  unixMs: Float64Array
  /** A BigUint64Array where the layout's ticks pass 2^53. */
  ticks: Float64Array | BigUint64Array
  /** A BigUint64Array where the field is wider than 32 bits. */
  sequence: Uint32Array | BigUint64Array
  node: Uint32Array | BigUint64Array
  datacenter?: Uint32Array | BigUint64Array
  worker?: Uint32Array | BigUint64Array
  process?: Uint32Array | BigUint64Array
  machine?: Uint32Array | BigUint64Array
}

export declare class Layout {
  /** A preset's name (`snowflake`, `sonyflake`, `discord`, ...) or a layout string. */
  constructor(spec?: string | Layout)
  static parse(spec: string): Layout
  static presets(): string[]
  static snowflake(): Layout
  static sonyflake(): Layout
  static sonyflakeV1(): Layout
  static discord(): Layout
  static instagram(): Layout
  static mastodon(): Layout
  static jsSafe(): Layout
  facts(): LayoutFacts
  readonly name: string | null
  readonly timeBits: number
  readonly sequenceBits: number
  readonly nodeBits: number
  readonly unitMs: number
  readonly epochUnixMs: number
  readonly endUnixMs: number
  readonly lifetimeYears: number
  readonly idsPerSecondPerNode: number
  readonly nodeCount: number
  readonly maxNode: number
  readonly maxSequence: number
  readonly maxId: bigint
  readonly nodeFields: string[]
  readonly jsSafe: boolean
  msLeft(now?: Instant): number
  endWarning(marginMs?: number, now?: Instant): string | null
  compose(fields: ComposeFields): bigint
  decompose(id: bigint | number | string): Decomposed
  idRange(from: Instant, to?: Instant): IdRange
  decode(ids: BigUint64Array | BigInt64Array | bigint[] | string[]): Columns
  equals(other: Layout): boolean
  toString(): string
  toJSON(): string
}

/** How a generator waits and treats a clock set back. */
export interface MintOptions {
  /** The longest a synchronous call holds the event loop for the next tick (default 2). */
  maxWaitMs?: number
  /** The longest an async call waits in all (default 10000). */
  asyncWaitMs?: number
  clockPolicy?: 'continue' | 'reject' | 'wait'
  /** Warn (process.emitWarning) when the layout ends within this (default a year; 0: never). */
  endWarningMs?: number
}

export declare class Generator {
  constructor(layout: Layout | string | undefined, node: Whole, options?: MintOptions)
  readonly layout: Layout
  readonly node: number
  nextId(): bigint
  tryNextId(): bigint
  nextIdString(): string
  nextIdNumber(): number
  nextIds(n: number): BigUint64Array
  nextIdAsync(): Promise<bigint>
  nextIdsAsync(n: number): Promise<BigUint64Array>
}

/** How a claim is taken. */
export interface ClaimOptions extends MintOptions {
  layout?: Layout | string
  namespace?: string
  /** The pool of node ids: [start, end). */
  nodes?: [Whole, Whole]
  windowMs?: number
  ttlMs?: number
  instance?: string
  poolWaitMs?: number
  /** The password of the URL's `user=` (never in the URL). */
  password?: string
}

export interface ClaimStatus {
  store: string
  namespace: string
  node: number
  instance: string
  state: 'active' | 'renewing' | 'lost' | 'released' | 'stopped' | string
  fenced: boolean
  fenceLeftMs?: number
  renewals: number
  failures: number
  lastError?: string
  released: boolean
}

/** What a claimed generator emits as its claim changes. */
export type ClaimEvent = 'renewing' | 'active' | 'lost' | 'released'

export declare class ClaimedGenerator extends Generator {
  status(): ClaimStatus
  close(): void
  [Symbol.dispose](): void
  /**
   * Listens to the claim's changes, as its renewal thread makes them: `renewing` (a renewal
   * failed; minting goes on to the fence), `active` (a renewal landed again), `lost`
   * (nothing renews it any more: the store gave the id to another, or the renewal stopped;
   * the generator is closed) and `released` (another thread closed the claim it shares).
   */
  on(event: ClaimEvent, listener: (status: ClaimStatus) => void): this
  once(event: ClaimEvent, listener: (status: ClaimStatus) => void): this
  off(event: ClaimEvent, listener: (status: ClaimStatus) => void): this
}

export interface PerProcessOptions extends ClaimOptions {
  /** The directory the processes of this host claim from (default `defaultDir()`). */
  dir?: string
}

export interface ClaimListing {
  node: number
  state: string
  holder?: string
  reservedUntilUnixMs?: number
  problem?: string
}

export declare function claim(url: string, options?: ClaimOptions): ClaimedGenerator
export declare function perProcess(options?: PerProcessOptions): ClaimedGenerator
export declare function claims(url: string, namespace?: string, options?: { password?: string }): ClaimListing[]
export declare function decode(layout: Layout | string, ids: BigUint64Array | BigInt64Array | bigint[] | string[]): Columns
export declare function defaultDir(): string
export declare const version: string

export declare class FlakeidError extends Error {
  code: string
}
export declare class LayoutError extends FlakeidError {}
export declare class MintError extends FlakeidError {
  /** How long to wait before a retry can succeed, or null when waiting cannot help. */
  retryAfterMs: number | null
}
export declare class ClaimError extends FlakeidError {
  kind: 'settings' | 'unavailable' | 'busy' | 'not_owner' | 'access' | 'corrupt' | 'cancelled' | 'released' | 'other'
}
export declare class FlakeidTypeError extends TypeError {
  code: 'FLAKEID_INVALID_TYPE'
}
export declare class FlakeidRangeError extends RangeError {
  code: 'FLAKEID_OUT_OF_RANGE'
}
