'use strict'
// The real server the tests of one file share: `python -m quiver.serve` (or
// $QUIVER_SERVER_COMMAND) started through ServerProcess on TCP loopback and a Unix socket.

const os = require('node:os')
const path = require('node:path')
const { ServerProcess } = require('..')

let next = 0

/** A Unix socket path no other test uses. */
function socketPath() {
  next += 1
  return path.join(os.tmpdir(), `quiver-node-test-${process.pid}-${next}.sock`)
}

/** Starts a server; a failure says how to get one. */
async function spawnServer() {
  try {
    return await ServerProcess.spawn({ listen: ['tcp://127.0.0.1:0', `unix://${socketPath()}`] })
  } catch (error) {
    error.message = `the quiver server did not start (./quiver test runs tools/setup.sh): ${error.message}`
    throw error
  }
}

/** A table name no other test uses. */
function table(prefix) {
  next += 1
  return `${prefix}_${process.pid}_${next}`
}

/** Polls `condition` until it holds or `timeoutMs` passes (a loaded machine is slow, not wrong). */
async function eventually(condition, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await condition()) return
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

module.exports = { spawnServer, table, eventually }
