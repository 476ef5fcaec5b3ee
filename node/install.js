'use strict'
// `npm install` of this package from a clone (`npm install /path/to/flakeid/node`, or
// `npm ci` here): builds the addon for this machine with cargo where there is none yet.
// A package from `npm pack` or a release carries its addon, and this does nothing.
// FLAKEID_NODE_PROFILE=dev builds the debug addon (the tests' build); CARGO_TARGET_DIR is
// cargo's as usual.

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const platform = require('./platform.js')
const triple = platform.triple
const addon = path.join(__dirname, platform.addon)

if (fs.existsSync(addon)) process.exit(0)
// A packed package without the addon: a release's platform package brings it (index.js
// says what is missing when it is not there).
if (!fs.existsSync(path.join(__dirname, 'Cargo.toml'))) process.exit(0)
// The addon builds in the repository's cargo workspace, one level up.
if (!fs.existsSync(path.join(__dirname, '..', 'Cargo.toml'))) {
  console.error(`flakeid-rs: ${__dirname} is not in a clone of the flakeid repository (no ../Cargo.toml): the addon builds in its workspace, so install from a whole clone (npm install /path/to/flakeid/node), or build a package there with npm pack`)
  process.exit(1)
}
const profile = process.env.FLAKEID_NODE_PROFILE === 'dev' ? 'dev' : 'release'
console.error(`flakeid-rs: building the addon for ${triple} with cargo (${profile} profile; a minute or two)`)
const built = spawnSync('cargo', ['build', '--profile', profile, '-p', 'flakeid-node', '--manifest-path', path.join(__dirname, 'Cargo.toml'), '--message-format=json-render-diagnostics'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  encoding: 'utf8',
  maxBuffer: 256 * 1024 * 1024
})
if (built.error || built.status !== 0) {
  console.error(`flakeid-rs: the build failed${built.error ? ` (${built.error.message}: is Rust's cargo installed? https://rustup.rs)` : ''}`)
  process.exit(1)
}
// The library cargo made, by its own account.
let library = null
for (const line of built.stdout.split('\n')) {
  if (!line.startsWith('{')) continue
  const m = JSON.parse(line)
  if (m.reason === 'compiler-artifact' && m.target?.name === 'flakeid_node') {
    library = m.filenames.find((f) => /\.(so|dylib|dll)$/.test(f)) ?? library
  }
}
if (library === null) {
  console.error('flakeid-rs: cargo built no library for flakeid-node')
  process.exit(1)
}
fs.copyFileSync(library, addon)
console.error(`flakeid-rs: ${path.basename(addon)} built`)
