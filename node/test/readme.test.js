'use strict'
// Every JavaScript example of the README runs as it is, against this build.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8')
const examples = readme.split('```js\n').slice(1).map((block) => block.split('```')[0])

test('the README has its examples', () => {
  assert.ok(examples.length >= 4, `${examples.length} examples`)
})

for (const [i, code] of examples.entries()) {
  test(`README example ${i + 1} runs`, () => {
    // The package by its name, as a user writes it.
    const source = code.replaceAll("require('flakeid-rs')", `require(${JSON.stringify(path.join(__dirname, '..'))})`)
    execFileSync(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 30000 })
  })
}
