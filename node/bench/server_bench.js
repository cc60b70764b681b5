'use strict'
// The Node package's side of `./quiver bench server` (driven by bench/peers/server/node.py):
// seed 002's Node table on the suite's schema and rows (bench/peers/server/rows.py) against a
// server this script starts, over the transports the Rust client's bench uses. It prints the
// suite's JSON lines (an info line, then one record per case, each with the checksum of what it
// inserted or received for the driver to check) on stdout and progress on stderr.
//
//   node server_bench.js [--rows N] [--warmup W] [--measured M] [--transports tcp,unix,unix+shm]

const os = require('node:os')
const path = require('node:path')
const { Table, tableFromArrays } = require('apache-arrow')
const quiver = require('..')

const PROTOCOL = 'quiver.bench.server.v1'
const PEER = 'quiver node'
const TRANSPORTS = ['tcp', 'unix', 'unix+shm']
const BATCH_ROWS = 100_000
const BYTES_PER_ROW = 24
const TIMESTAMP_BASE = 1_700_000_000_000n
// The eager paths (row objects in, row objects out) run at most this many rows, as seed 002's
// Node table did: a row object per row is what they measure, and 10M of them would only measure
// V8's heap.
const EAGER_ROWS = 1_000_000
const SHM_BYTES = 256 * 1024 * 1024
const FULL_SCAN = 'SELECT id, sensor_id, value, timestamp FROM '
const CHECKSUM = (table) =>
  `SELECT count(*)::BIGINT AS n, sum(CAST(id AS BIGINT))::BIGINT AS id, sum(CAST(sensor_id AS BIGINT))::BIGINT AS sensor, ` +
  `sum(timestamp - ${TIMESTAMP_BASE})::HUGEINT::VARCHAR AS ts, sum(value) AS value FROM ${table}`

function parseArgs() {
  const args = { rows: 10_000_000, warmup: 1, measured: 5, transports: TRANSPORTS }
  const words = process.argv.slice(2)
  for (let i = 0; i < words.length; i += 2) {
    const [flag, value] = [words[i], words[i + 1]]
    if (value === undefined) throw new Error(`${flag} needs a value`)
    if (flag === '--transports') args.transports = value.split(',')
    else if (['--rows', '--warmup', '--measured', '--workers'].includes(flag)) args[flag.slice(2)] = Number(value)
    else throw new Error(`unknown argument ${flag}`)
  }
  if (!(args.rows >= 1 && args.rows <= 100_000_000)) throw new Error('--rows must be in 1..100000000')
  if (!(args.measured >= 1)) throw new Error('--measured must be at least 1')
  args.warmup = Math.max(args.warmup, 1) // the first run checks the rows and is never measured
  for (const t of args.transports) if (!TRANSPORTS.includes(t)) throw new Error(`unknown transport ${t}`)
  return args
}

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const progress = (msg) => process.stderr.write(`[quiver node] ${msg}\n`)

/** The suite's rows from `start`: id, id % 10, id * 0.1, base + id * 1000, in batches. */
function measurements(rows, start = 0) {
  const tables = []
  for (let first = start; first < start + rows; first += BATCH_ROWS) {
    const count = Math.min(BATCH_ROWS, start + rows - first)
    const id = new Int32Array(count)
    const sensor = new Int32Array(count)
    const value = new Float64Array(count)
    const timestamp = new BigInt64Array(count)
    for (let i = 0; i < count; i++) {
      const n = first + i
      id[i] = n
      sensor[i] = n % 10
      value[i] = n * 0.1
      timestamp[i] = TIMESTAMP_BASE + BigInt(n) * 1000n
    }
    tables.push(tableFromArrays({ id, sensor_id: sensor, value, timestamp }))
  }
  return new Table(tables.flatMap((t) => t.batches))
}

/** Sums of received columns (id, sensor_id, value as numbers; timestamp as BigInt). */
class Sums {
  constructor() {
    Object.assign(this, { count: 0, id: 0, sensor: 0, ts: 0n, value: 0 })
  }

  addColumns(id, sensor, value, timestamp) {
    this.count += id.length
    for (let i = 0; i < id.length; i++) {
      this.id += Number(id[i])
      this.sensor += Number(sensor[i])
      this.value += value[i]
      this.ts += BigInt(timestamp[i]) - TIMESTAMP_BASE
    }
  }

  addBatch(batch) {
    const column = (name) => batch.getChild(name).toArray()
    this.addColumns(column('id'), column('sensor_id'), column('value'), column('timestamp'))
  }

  json() {
    return {
      count: this.count,
      sum_id: this.id,
      sum_sensor_id: this.sensor,
      sum_timestamp_offset: this.ts.toString(),
      sum_value: this.value,
    }
  }
}

async function held(db, table) {
  const [row] = await db.executeQuery(CHECKSUM(table))
  return {
    count: Number(row.n),
    sum_id: Number(row.id),
    sum_sensor_id: Number(row.sensor),
    sum_timestamp_offset: row.ts,
    sum_value: row.value,
  }
}

/**
 * Collects garbage so the previous run's result is gone, shared-memory regions included, as the
 * Rust and Python clients' drops make it: V8 frees an external ArrayBuffer's memory only in a
 * collection after the one that finds it dead, and Node runs the finalizer on a later turn of
 * the loop, hence two collections with a turn after each. Untimed; skipped without --expose-gc.
 */
async function released() {
  if (!global.gc) return
  for (let i = 0; i < 2; i++) {
    global.gc()
    await new Promise((resolve) => setTimeout(resolve, 0))
  }
}

/** One timed run; the result stays in this frame, so nothing holds it once `check` has read it. */
async function once(run, check) {
  const started = process.hrtime.bigint()
  const result = await run()
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9
  return { elapsed, checked: check(result) }
}

/** Times `run` (after `prepare`, each repetition); `check` reads the first run's result. */
async function timed(args, prepare, run, check = () => undefined) {
  const times = []
  let checked
  for (let rep = 0; rep < args.warmup + args.measured; rep++) {
    await released()
    if (prepare) await prepare()
    const one = await once(run, rep === 0 ? check : () => undefined)
    if (rep === 0) checked = one.checked
    if (rep >= args.warmup) times.push(one.elapsed)
  }
  return { times, checked }
}

function record(c, transport, times, checksum) {
  const sorted = [...times].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
  const bytes = c.rows * BYTES_PER_ROW
  return {
    kind: 'record',
    peer: PEER,
    workload: c.workload,
    variant: c.variant,
    flavor: 'async',
    transport,
    api: c.api,
    connections: 1,
    database: 'memory',
    rows: c.rows,
    table_rows: c.tableRows,
    bytes,
    median_s: median,
    min_s: sorted[0],
    max_s: sorted[sorted.length - 1],
    times_s: times,
    rows_per_s: c.rows / median,
    mb_per_s: bytes / median / 1e6,
    checked: true,
    checksum,
    note: c.note ?? '',
  }
}

async function recreate(db, table) {
  await db.execute(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (id INT NOT NULL, sensor_id INT, value DOUBLE, timestamp BIGINT)`)
}

async function inserts(args, db, data, eagerData, transport) {
  const out = []
  const table = 'bench_node_insert'
  const eager = eagerData.numRows
  let run = await timed(args, () => recreate(db, table), async () => {
    const inserter = await db.rowInserter(table, [
      { name: 'id', type: 'int32', nullable: false },
      { name: 'sensor_id', type: 'int32' },
      { name: 'value', type: 'float64' },
      { name: 'timestamp', type: 'int64' },
    ])
    for (const batch of eagerData.batches) {
      const [id, sensor, value, ts] = ['id', 'sensor_id', 'value', 'timestamp'].map((n) => batch.getChild(n).toArray())
      for (let i = 0; i < id.length; i++) inserter.addRow([id[i], sensor[i], value[i], ts[i]])
    }
    return inserter.finish()
  })
  const rowNote = eager < args.rows ? `${eager.toLocaleString('en')} rows (the eager cap)` : ''
  out.push(record({ workload: 'insert.bulk', variant: 'row API, 1 connection', api: 'RowInserter', rows: eager, tableRows: eager, note: rowNote }, transport, run.times, await held(db, table)))
  run = await timed(args, () => recreate(db, table), () => db.insertArrow(table, data))
  out.push(record({ workload: 'insert.bulk', variant: 'Arrow, 1 connection', api: 'ArrowInserter (apache-arrow Table)', rows: args.rows, tableRows: args.rows }, transport, run.times, await held(db, table)))
  return out
}

async function queries(args, db, eager, transport) {
  const out = []
  const full = { workload: 'query.full_scan', variant: '1 connection', rows: args.rows, tableRows: args.rows }
  const columnSums = (columns) => {
    const sums = new Sums()
    sums.addColumns(...['id', 'sensor_id', 'value', 'timestamp'].map((n) => columns(n)))
    return sums.json()
  }
  let run = await timed(args, null, () => db.executeQuery(FULL_SCAN + 'bench_node_eager'), (rows) => columnSums((n) => rows.map((row) => row[n])))
  const eagerNote = eager < args.rows ? `${eager.toLocaleString('en')} rows (the eager cap)` : ''
  out.push(record({ ...full, api: 'executeQuery (row objects)', rows: eager, tableRows: eager, note: eagerNote }, transport, run.times, run.checked))

  run = await timed(args, null, async () => {
    let rows = 0
    for await (const batch of db.executeQueryStream(FULL_SCAN + 'bench_m')) rows += batch.numRows
    return { rows }
  }, (result) => result.rows)
  if (run.checked !== args.rows) throw new Error(`executeQueryStream: ${run.checked} rows`)
  // The checksum comes from one more, untimed, pass: summing inside the timed loop would
  // measure the sums.
  const sums = new Sums()
  for await (const batch of db.executeQueryStream(FULL_SCAN + 'bench_m')) sums.addBatch(batch)
  out.push(record({ ...full, api: 'executeQueryStream (RecordBatch)' }, transport, run.times, sums.json()))

  run = await timed(args, null, () => db.executeQueryColumnar(FULL_SCAN + 'bench_m'), (result) => columnSums((n) => result.columns[n]))
  out.push(record({ ...full, api: 'executeQueryColumnar (typed arrays)' }, transport, run.times, run.checked))

  run = await timed(args, null, () => db.executeQueryToArrow(FULL_SCAN + 'bench_m'), (table) => {
    const tableSums = new Sums()
    for (const batch of table.batches) tableSums.addBatch(batch)
    return tableSums.json()
  })
  out.push(record({ ...full, api: 'executeQueryToArrow (Table)' }, transport, run.times, run.checked))
  return out
}

async function main() {
  const args = parseArgs()
  const socket = path.join(os.tmpdir(), `quiver-node-bench-${process.pid}.sock`)
  const server = await quiver.ServerProcess.spawn({ listen: ['tcp://127.0.0.1:0', `unix://${socket}`] })
  try {
    const loader = await server.connect()
    const [info] = await loader.executeQuery('SELECT version() AS duckdb')
    emit({
      kind: 'info',
      protocol: PROTOCOL,
      peer: PEER,
      versions: { node: process.version, duckdb: info.duckdb, 'apache-arrow': require('../package.json').dependencies['apache-arrow'] },
      notes: [
        `server pid ${server.pid}, one server for every transport; eager paths (RowInserter, executeQuery) at ` +
          `${Math.min(args.rows, EAGER_ROWS).toLocaleString('en')} rows`,
        `each run starts with the previous result collected (${global.gc ? 'global.gc() twice, untimed' : 'not: run without --expose-gc'})`,
      ],
    })
    let started = Date.now()
    const data = measurements(args.rows)
    const eagerData = args.rows <= EAGER_ROWS ? data : measurements(EAGER_ROWS)
    progress(`${args.rows} rows generated in ${(Date.now() - started) / 1000} s`)
    await recreate(loader, 'bench_m')
    await loader.insertArrow('bench_m', data)
    await recreate(loader, 'bench_node_eager')
    await loader.insertArrow('bench_node_eager', eagerData)
    loader.close()
    for (const transport of args.transports) {
      const address = transport === 'tcp' ? server.tcpAddress : server.unixAddress
      const db = await server.connect({ address, shmBytes: transport === 'unix+shm' ? SHM_BYTES : 0 })
      started = Date.now()
      const records = [...(await inserts(args, db, data, eagerData, transport)), ...(await queries(args, db, eagerData.numRows, transport))]
      for (const r of records) {
        progress(`${transport} ${r.workload} · ${r.api}: ${(r.median_s * 1e3).toFixed(1)} ms  ${(r.rows_per_s / 1e6).toFixed(2)} Mrows/s`)
        emit(r)
      }
      db.close()
    }
  } finally {
    await server.stop()
  }
}

main().catch((error) => {
  progress(`FAILED: ${error.stack ?? error}`)
  emit({ kind: 'error', peer: PEER, message: String(error.message ?? error).slice(0, 2000) })
  process.exitCode = 1
})
