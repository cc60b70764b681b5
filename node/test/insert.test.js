'use strict'
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { Bool, Field, Float64, Int64, List, Null, Struct, Table, Utf8, tableFromArrays, tableToIPC, vectorFromArray } = require('apache-arrow')
const { spawnServer, table } = require('./support')

let server
let db

before(async () => {
  server = await spawnServer()
  db = await server.connect({ address: server.unixAddress })
})

after(async () => {
  db?.close()
  await server?.stop()
})

function numbers(from, count) {
  const id = new Int32Array(count)
  const value = new Float64Array(count)
  for (let i = 0; i < count; i++) {
    id[i] = from + i
    value[i] = (from + i) / 2
  }
  return tableFromArrays({ id, value })
}

test('ArrowInserter appends Tables, RecordBatches and IPC bytes, visible at finish', async () => {
  const name = table('arrow')
  const inserter = db.arrowInserter(name, { mode: 'create' })
  assert.equal(await inserter.write(numbers(0, 100000)), 100000)
  assert.equal(await inserter.write(numbers(100000, 1000).batches[0]), 101000)
  assert.equal(await inserter.write(tableToIPC(numbers(101000, 10), 'stream')), 101010)
  const other = await server.connect()
  await assert.rejects(other.executeQuery(`SELECT count(*) FROM ${name}`), { code: 'QUIVER_SQL' })
  assert.equal(await inserter.finish(), 101010)
  assert.deepEqual(await other.executeQuery(`SELECT count(*)::INTEGER AS n, sum(id)::BIGINT AS s FROM ${name}`), [
    { n: 101010, s: 5101459545n },
  ])
  other.close()
  await assert.rejects(inserter.finish(), { message: /the insert has ended/ })
})

test('Over shared memory a staged Table, nulls too, arrives whole', async () => {
  const shm = await server.connect({ address: server.unixAddress, shmBytes: 64 * 1024 * 1024 })
  const name = table('staged_in_segment')
  const rows = 300000
  const withNulls = new Table({
    id: vectorFromArray(Array.from({ length: rows }, (_, i) => BigInt(i)), new Int64()),
    x: vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 3 === 0 ? null : i / 2)), new Float64()),
  })
  const inserter = shm.arrowInserter(name, { mode: 'create' })
  assert.equal(await inserter.write(numbers(0, rows)), rows)
  assert.equal(await inserter.finish(), rows)
  const nullsName = table('staged_nulls')
  assert.equal(await shm.insertArrow(nullsName, withNulls, { mode: 'create' }), rows)
  assert.deepEqual(await shm.executeQuery(`SELECT count(*)::INTEGER AS n, sum(id)::BIGINT AS s, sum(value) AS v FROM ${name}`), [
    { n: rows, s: BigInt((rows * (rows - 1)) / 2), v: (rows * (rows - 1)) / 4 },
  ])
  const nulls = await shm.executeQuery(`SELECT count(x)::INTEGER AS n, sum(id)::BIGINT AS s FROM ${nullsName}`)
  assert.deepEqual(nulls, [{ n: rows - rows / 3, s: BigInt((rows * (rows - 1)) / 2) }])
  shm.close()
})

test('ArrowInserter carries strings, booleans, nulls, slices and dictionaries', async () => {
  const name = table('typed')
  const typed = new Table({
    s: vectorFromArray(['a', null, 'ccc', 'dd'], new Utf8()),
    flag: vectorFromArray([true, null, false, true], new Bool()),
    big: vectorFromArray([1n, 2n, null, -4n], new Int64()),
    x: vectorFromArray([0.5, null, 2.5, 3.5], new Float64()),
  })
  assert.equal(await db.insertArrow(name, typed, { mode: 'create' }), 4)
  assert.equal(await db.insertArrow(name, typed.slice(1, 3)), 2)
  // A dictionary column (what tableFromArrays makes of strings) crosses as IPC bytes.
  assert.equal(await db.insertArrow(table('dictionary'), tableFromArrays({ s: ['x', 'y', 'x'] }), { mode: 'create' }), 3)
  assert.deepEqual(await db.executeQuery(`SELECT s, flag, big, x FROM ${name}`), [
    { s: 'a', flag: true, big: 1n, x: 0.5 },
    { s: null, flag: null, big: 2n, x: null },
    { s: 'ccc', flag: false, big: null, x: 2.5 },
    { s: 'dd', flag: true, big: -4n, x: 3.5 },
    { s: null, flag: null, big: 2n, x: null },
    { s: 'ccc', flag: false, big: null, x: 2.5 },
  ])
})

test('insertArrow inserts a Table in one call; abort rolls everything back', async () => {
  const name = table('once')
  assert.equal(await db.insertArrow(name, numbers(0, 5), { mode: 'create' }), 5)
  assert.equal(await db.insertArrow(name, numbers(5, 5)), 5)
  const inserter = db.arrowInserter(name)
  await inserter.write(numbers(10, 1000))
  await inserter.abort()
  assert.deepEqual(await db.executeQuery(`SELECT count(*)::INTEGER AS n FROM ${name}`), [{ n: 10 }])
})

test('an insert the server refuses fails with its message and inserts nothing', async () => {
  const name = table('refused')
  await db.execute(`CREATE TABLE ${name} (id INTEGER, value DOUBLE)`)
  await assert.rejects(db.insertArrow(name, numbers(0, 3), { mode: 'create' }), { code: 'QUIVER_SQL', message: /already exists/ })
  await assert.rejects(db.insertArrow(name, tableFromArrays({ only: ['a'] })), { message: /column|type|Binder|Conversion/i })
  await assert.rejects(db.insertArrow(name, numbers(0, 1), { mode: 'upsert' }), {
    code: 'QUIVER_INVALID_INPUT',
    message: /unknown insert mode 'upsert'/,
  })
  await assert.rejects(db.insertArrow(name, Buffer.from('not arrow')), { message: /Arrow IPC/ })
  assert.throws(() => db.arrowInserter(name).write({}), /Table or RecordBatch/)
  assert.deepEqual(await db.executeQuery(`SELECT count(*)::INTEGER AS n FROM ${name}`), [{ n: 0 }])
})

test('RowInserter checks each value at once and inserts every row at finish', async () => {
  const name = table('rows')
  const columns = [
    { name: 'id', type: 'int64', nullable: false },
    { name: 'small', type: 'int16' },
    { name: 'x', type: 'float64' },
    { name: 's', type: 'utf8' },
    { name: 'flag', type: 'boolean' },
  ]
  const inserter = await db.rowInserter(name, columns, { mode: 'create' })
  const count = 20000
  for (let i = 0; i < count; i++) {
    inserter.addRow([BigInt(i), i % 100, i / 4, i % 3 === 0 ? null : `s${i}`, i % 2 === 0])
  }
  assert.throws(() => inserter.addRow([1, 2, 3]), { code: 'QUIVER_INVALID_INPUT', message: /a row of 3 values/ })
  assert.throws(() => inserter.addRow([null, 1, 1, 'a', true]), { message: /column 'id' is not nullable/ })
  assert.throws(() => inserter.addRow([1, 40000, 1, 'a', true]), { message: /column 'small' is Int16, and 40000 does not fit/ })
  assert.throws(() => inserter.addRow([1.5, 1, 1, 'a', true]), { message: /1\.5 is not an integer/ })
  assert.throws(() => inserter.addRow([1, 1, 'x', 'a', true]), { message: /column 'x' is Float64, not a String value/ })
  assert.equal(inserter.rows, count)
  assert.equal(await inserter.finish(), count)
  assert.deepEqual(
    await db.executeQuery(
      `SELECT count(*)::INTEGER AS n, sum(id)::BIGINT AS ids, count(s)::INTEGER AS texts, sum(flag::INTEGER)::INTEGER AS flags FROM ${name}`,
    ),
    [{ n: count, ids: BigInt((count * (count - 1)) / 2), texts: count - Math.ceil(count / 3), flags: count / 2 }],
  )
  await assert.rejects(inserter.finish(), { message: /the insert has ended/ })
  assert.throws(() => inserter.addRow([1n, 1, 1, 'a', true]), { code: 'QUIVER_INVALID_INPUT', message: /the insert has ended/ })
})

test('an aborted row insert inserts nothing and frees the connection', async () => {
  const name = table('aborted')
  await db.execute(`CREATE TABLE ${name} (a INTEGER)`)
  const inserter = await db.rowInserter(name, [{ name: 'a', type: 'int32' }])
  for (let i = 0; i < 10000; i++) inserter.addRow([i])
  const pending = inserter.finish()
  assert.throws(() => inserter.addRow([1]), /the insert has ended/)
  assert.equal(await pending, 10000)
  const aborted = await db.rowInserter(name, [{ name: 'a', type: 'int32' }])
  for (let i = 0; i < 20000; i++) aborted.addRow([i])
  await aborted.abort()
  assert.throws(() => aborted.addRow([1]), /the insert has ended/)
  assert.deepEqual(await db.executeQuery(`SELECT count(*)::INTEGER AS n FROM ${name}`), [{ n: 10000 }])
})

test('a row insert into a table that is not there fails with the server\'s message', async () => {
  const absent = table('absent')
  const inserter = await db.rowInserter(absent, [{ name: 'a', type: 'int32' }])
  inserter.addRow([1])
  await assert.rejects(inserter.finish(), { code: 'QUIVER_SQL', message: new RegExp(absent) })
  await assert.rejects(db.rowInserter(table('bad'), [{ name: 'a', type: 'decimal' }], { mode: 'create' }), {
    message: /column type 'decimal' is not one of/,
  })
  assert.deepEqual(await db.executeQuery('SELECT 1 AS ok'), [{ ok: 1 }])
})

test('a transaction spans inserts and rolls back', async () => {
  const name = table('tx')
  await db.execute(`CREATE TABLE ${name} (id INTEGER, value DOUBLE)`)
  await db.begin()
  await db.insertArrow(name, numbers(0, 50))
  assert.deepEqual(await db.executeQuery(`SELECT count(*)::INTEGER AS n FROM ${name}`), [{ n: 50 }])
  await db.rollback()
  assert.deepEqual(await db.executeQuery(`SELECT count(*)::INTEGER AS n FROM ${name}`), [{ n: 0 }])
})

test('a stopped server fails calls as a lost connection', async () => {
  const own = await spawnServer()
  const connection = await own.connect()
  await own.stop()
  await assert.rejects(connection.execute('SELECT 1'), { code: 'QUIVER_CONNECTION' })
  await assert.rejects(own.connect(), { code: 'QUIVER_CONNECTION', message: /cannot connect/ })
})

test('insertArrow takes Tables with nested and null columns', async () => {
  const name = table('nested')
  const data = tableFromArrays({
    id: new Int32Array([1, 2]),
    tags: vectorFromArray([['a', 'b'], []], new List(new Field('item', new Utf8(), true))),
    point: vectorFromArray(
      [{ x: 1.5, y: 2 }, { x: -1, y: 0 }],
      new Struct([new Field('x', new Float64(), true), new Field('y', new Float64(), true)]),
    ),
    nothing: vectorFromArray([null, null], new Null()),
  })
  assert.equal(await db.insertArrow(name, data, { mode: 'create' }), 2)
  const rows = await db.executeQuery(`SELECT id, tags::VARCHAR AS tags, point.x AS x, nothing IS NULL AS empty FROM ${name} ORDER BY id`)
  assert.deepEqual(rows, [
    { id: 1, tags: '[a, b]', x: 1.5, empty: true },
    { id: 2, tags: '[]', x: -1, empty: true },
  ])
})
