'use strict'
// The addon's file name for this platform, which `index.js` loads and `install.js` builds:
// `flakeid.<triple>.node`, the triples of napi-rs's platform packages.

const TRIPLES = {
  'linux-x64': 'linux-x64-gnu',
  'linux-arm64': 'linux-arm64-gnu',
  'darwin-x64': 'darwin-x64',
  'darwin-arm64': 'darwin-arm64',
  'win32-x64': 'win32-x64-msvc'
}

const triple = TRIPLES[`${process.platform}-${process.arch}`]

module.exports = { triple, addon: `flakeid.${triple}.node` }
