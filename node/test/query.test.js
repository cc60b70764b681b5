'use strict'
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Table } = require('apache-arrow')
const quiver = require('..')
const { spawnServer } = require('./support')

let server
let db

before(async () => {
  server = await spawnServer()
  db = await server.connect()
  await db.execute(`CREATE TABLE typed AS SELECT * FROM (VALUES
    (1::INTEGER, 10::BIGINT, 0.5::DOUBLE, 'one', true, DATE '2026-01-02'),
    (2, NULL, 1.5, NULL, false, NULL),
    (3, 9007199254740993, NULL, 'three', NULL, DATE '2026-03-04')
  ) v(i, big, x, s, flag, day) ORDER BY i`)
})

after(async () => {
  db?.close()
  await server?.stop()
})

test('connects over TCP with the token and over the Unix socket', async () => {
  assert.match(server.tcpAddress, /^tcp:\/\/127\.0\.0\.1:\d+$/)
  assert.match(server.unixAddress, /^unix:\/\//)
  const tcp = await quiver.connect(server.tcpAddress, { token: server.token })
  const unix = await quiver.connect(server.unixAddress)
  assert.notEqual(tcp.sessionId, unix.sessionId)
  assert.deepEqual(await unix.executeQuery('SELECT 42 AS answer'), [{ answer: 42 }])
  tcp.close()
  unix.close()
  await assert.rejects(tcp.execute('SELECT 1'), { code: 'QUIVER_INVALID_INPUT', message: /closed/ })
})

test('a wrong token is refused with the server\'s answer', async () => {
  await assert.rejects(quiver.connect(server.tcpAddress, { token: 'not-the-token' }), {
    code: 'QUIVER_UNAUTHENTICATED',
    message: /authentication failed/,
  })
})

test('executeQuery gives plain rows with typed values and nulls', async () => {
  const rows = await db.executeQuery('SELECT i, big, x, s, flag, day FROM typed ORDER BY i')
  assert.deepEqual(rows, [
    { i: 1, big: 10n, x: 0.5, s: 'one', flag: true, day: '2026-01-02' },
    { i: 2, big: null, x: 1.5, s: null, flag: false, day: null },
    { i: 3, big: 9007199254740993n, x: null, s: 'three', flag: null, day: '2026-03-04' },
  ])
  assert.deepEqual(await db.executeQuery('SELECT * FROM typed WHERE i > 10'), [])
  const [odd] = await db.executeQuery(`SELECT 1 AS "__proto__", 2 AS "a""b", 3 AS "0"`)
  assert.deepEqual(Object.keys(odd).sort(), ['0', '__proto__', 'a"b'])
  assert.equal(Object.getPrototypeOf(odd), Object.prototype)
  assert.equal(odd['a"b'], 2)
})

test('executeQuery refuses a result beyond maxRows and the connection lives on', async () => {
  await assert.rejects(db.executeQuery('SELECT * FROM range(1000)', { maxRows: 999 }), {
    code: 'QUIVER_INVALID_INPUT',
    message: /more than 999 rows: use executeQueryStream/,
  })
  assert.equal((await db.executeQuery('SELECT * FROM range(1000)', { maxRows: 1000 })).length, 1000)
  await assert.rejects(db.executeQuery('SELECT 1', { maxRows: 0 }), { message: /maxRows must be in 1\.\./ })
  await assert.rejects(db.executeQuery('SELECT 1', { maxRows: quiver.ROWS_MAX + 1 }), {
    message: /maxRows must be in 1\.\./,
  })
  assert.equal(quiver.ROWS_MAX_DEFAULT, 1_000_000)
  await assert.rejects(db.executeQuery(`SELECT * FROM range(${quiver.ROWS_MAX_DEFAULT + 1})`), {
    message: /more than 1000000 rows/,
  })
})

test('executeQueryColumnar gives typed arrays and a null map', async () => {
  const result = await db.executeQueryColumnar('SELECT i, big, x, s, flag FROM typed ORDER BY i')
  assert.equal(result.numRows, 3)
  assert.deepEqual(result.columns.i, Int32Array.from([1, 2, 3]))
  assert.deepEqual(result.columns.big, BigInt64Array.from([10n, 0n, 9007199254740993n]))
  assert.deepEqual(result.columns.x, Float64Array.from([0.5, 1.5, 0]))
  assert.deepEqual(result.columns.s, ['one', null, 'three'])
  assert.deepEqual(result.columns.flag, Uint8Array.from([1, 0, 0]))
  assert.equal(result.nulls.i, undefined)
  assert.deepEqual(result.nulls.big, Uint8Array.from([0, 1, 0]))
  assert.deepEqual(result.nulls.flag, Uint8Array.from([0, 0, 1]))
  const many = await db.executeQueryColumnar('SELECT range AS n FROM range(300000)')
  assert.equal(many.columns.n.length, 300000)
  assert.equal(many.columns.n[299999], 299999n)
})

test('executeQueryToArrow gives a Table, or IPC bytes', async () => {
  const table = await db.executeQueryToArrow('SELECT range AS n, range * 2 AS twice FROM range(250000)')
  assert.ok(table instanceof Table)
  assert.equal(table.numRows, 250000)
  assert.deepEqual(table.schema.fields.map((f) => f.name), ['n', 'twice'])
  assert.equal(table.getChild('twice').get(249999), 499998n)
  const bytes = await db.executeQueryToArrow('SELECT 7 AS seven', { as: 'ipc' })
  assert.ok(Buffer.isBuffer(bytes))
  await assert.rejects(db.executeQueryToArrow('SELECT * FROM range(100000)', { maxBytes: 1000 }), {
    message: /larger than 1000 bytes: use executeQueryStream/,
  })
})

test('executeQueryToArrow and executeQueryStream keep types, nulls and decimals', async () => {
  const sql = 'SELECT i, big, x, s, flag, day, i * 1.5 AS dec FROM typed ORDER BY i'
  const check = (table) => {
    assert.equal(table.numRows, 3)
    const column = (name) => [...table.getChild(name)]
    assert.deepEqual(column('i'), [1, 2, 3])
    assert.deepEqual(column('big'), [10n, null, 9007199254740993n])
    assert.deepEqual(column('x'), [0.5, 1.5, null])
    assert.deepEqual(column('s'), ['one', null, 'three'])
    assert.deepEqual(column('flag'), [true, false, null])
    assert.equal(table.getChild('day').get(1), null)
    assert.equal(new Date(table.getChild('day').get(2)).toISOString().slice(0, 10), '2026-03-04')
    assert.equal(String(table.getChild('dec').get(2)), '45')
  }
  check(await db.executeQueryToArrow(sql))
  const batches = []
  for await (const batch of db.executeQueryStream(sql)) batches.push(batch)
  check(new Table(batches))
  const empty = await db.executeQueryToArrow('SELECT * FROM typed WHERE i > 10')
  assert.equal(empty.numRows, 0)
})

test('executeQueryToArrow shares the client\'s memory: columns of a batch view one ArrayBuffer', async () => {
  // Decimal-free, so every batch crosses as buffers (a decimal column sends the batch as IPC).
  const sql = `SELECT range::INTEGER AS i, CASE WHEN range % 3 = 0 THEN NULL ELSE range * 0.5 END::DOUBLE AS x,
    CASE WHEN range % 5 = 0 THEN NULL ELSE 'v' || range END AS s, range % 2 = 0 AS even
    FROM range(300000) ORDER BY range`
  for (const [address, shmBytes] of [[server.unixAddress, 64 * 1024 * 1024], [server.unixAddress, 0]]) {
    const conn = await server.connect({ address, shmBytes })
    const table = await conn.executeQueryToArrow(sql)
    assert.equal(table.numRows, 300000)
    for (const row of [0, 1, 5, 299999]) {
      const got = table.get(row)
      assert.equal(got.i, row)
      assert.equal(got.x, row % 3 === 0 ? null : row * 0.5)
      assert.equal(got.s, row % 5 === 0 ? null : `v${row}`)
      assert.equal(got.even, row % 2 === 0)
    }
    const [batch] = table.batches
    const memory = new Set(batch.data.children.flatMap((c) => [c.values, c.nullBitmap, c.valueOffsets].filter((b) => b?.byteLength)).map((b) => b.buffer))
    assert.equal(memory.size, 1, `the columns of one batch view ${memory.size} ArrayBuffers`)
    let nulls = 0
    for (const x of table.getChild('x')) if (x === null) nulls += 1
    assert.equal(nulls, 100000)
    conn.close()
  }
})

test('executeQueryStream yields batches and an early break stops the query', async () => {
  let rows = 0
  let sum = 0n
  let batches = 0
  for await (const batch of db.executeQueryStream('SELECT range AS n FROM range(1000000)')) {
    batches += 1
    rows += batch.numRows
    for (const n of batch.getChild('n')) sum += n
  }
  assert.equal(rows, 1000000)
  assert.equal(sum, 499999500000n)
  assert.ok(batches > 1, `one million rows came in ${batches} batch(es)`)
  for await (const batch of db.executeQueryStream('SELECT range AS n FROM range(100000000000)')) {
    assert.ok(batch.numRows > 0)
    break
  }
  assert.deepEqual(await db.executeQuery('SELECT 1 AS still'), [{ still: 1 }])
})

test('a SQL error carries the server\'s message and leaves the connection usable', async () => {
  await assert.rejects(db.execute('SELEC 1'), { code: 'QUIVER_SQL', message: /syntax error at or near "SELEC"/ })
  await assert.rejects(db.executeQuery('SELECT * FROM no_such_table'), { code: 'QUIVER_SQL', message: /no_such_table/ })
  const stream = db.executeQueryStream('SELECT * FROM no_such_table')
  await assert.rejects(stream.next(), { code: 'QUIVER_SQL' })
  assert.equal(await db.execute('CREATE TABLE after_errors (a INTEGER)'), 0)
})

test('cancel interrupts a running statement', async () => {
  const other = await server.connect()
  const running = other.executeQuery('SELECT count(*) FROM range(1000000000000) a WHERE a.range % 7 = 3')
  const outcome = running.then(
    () => 'finished',
    (error) => error,
  )
  let cancelled = false
  const deadline = Date.now() + 60_000
  while (!cancelled && Date.now() < deadline) {
    cancelled = await other.cancel()
    if (!cancelled) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.ok(cancelled, 'the statement was never seen running')
  const error = await outcome
  assert.notEqual(error, 'finished')
  assert.match(error.message, /interrupt|cancel/i)
  other.close()
})

test('errors keep the server\'s type and kind, mid-stream too', async () => {
  await assert.rejects(db.executeQuery('SELEC 1'), { code: 'QUIVER_SQL', errorType: 'ParserException', kind: 'sql' })
  const failing = 'SELECT CASE WHEN range = 9000000 THEN error(\'failed at the end\')::BIGINT ELSE range END AS i FROM range(10000000)'
  let rows = 0
  await assert.rejects(
    (async () => {
      for await (const batch of db.executeQueryStream(failing)) rows += batch.numRows
    })(),
    { code: 'QUIVER_SQL', errorType: 'InvalidInputException', kind: 'sql', message: /failed at the end/ }
  )
  assert.ok(rows > 0, 'batches arrived before the error')
  assert.deepEqual(await db.executeQuery('SELECT 1 AS x'), [{ x: 1 }])
})
