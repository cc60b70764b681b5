'use strict'
// The Node package as a client of tests/test_type_matrix.py: one request per stdin line (JSON),
// one answer per stdout line. Results go through apache-arrow as a JS user gets them (a Table from
// executeQueryToArrow, re-encoded as IPC for the test); inserts arrive as IPC, become an apache-arrow
// Table and go through insertArrow. Errors answer with their code, errorType and message.
//
//   node node/test/arrow_relay.js <address>     {"op": "query", "sql": "..."}
//                                               {"op": "execute", "sql": "..."}
//                                               {"op": "insert", "table": "...", "ipc": "<base64>"}

const readline = require('node:readline')
const { tableFromIPC, tableToIPC } = require('apache-arrow')
const quiver = require('..')

async function answer(db, request) {
  switch (request.op) {
    case 'query': {
      const table = await db.executeQueryToArrow(request.sql)
      return { ipc: Buffer.from(tableToIPC(table, 'stream')).toString('base64') }
    }
    case 'execute':
      return { rows: Number(await db.execute(request.sql)) }
    case 'insert': {
      const table = tableFromIPC(Buffer.from(request.ipc, 'base64'))
      return { rows: Number(await db.insertArrow(request.table, table, { mode: 'create' })) }
    }
    default:
      throw new Error(`unknown op ${request.op}`)
  }
}

async function main() {
  const db = await quiver.connect(process.argv[2])
  const lines = readline.createInterface({ input: process.stdin })
  for await (const line of lines) {
    let reply
    try {
      reply = await answer(db, JSON.parse(line))
    } catch (error) {
      reply = { error: { code: error.code ?? null, errorType: error.errorType ?? error.name, message: String(error.message) } }
    }
    process.stdout.write(JSON.stringify(reply) + '\n')
  }
  db.close()
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`)
  process.exit(1)
})
