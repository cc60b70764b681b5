'use strict'
// quiver's Node package: the Rust client (crates/quiver-node over crates/quiver-client) with
// Arrow in and out through apache-arrow. The native module does the waiting off the JS thread;
// this file turns its IPC bytes into apache-arrow objects and its errors into coded JS errors.

const fs = require('node:fs')
const path = require('node:path')
const { makeData, RecordBatch, Struct, Table, tableFromIPC, tableToIPC } = require('apache-arrow')

// napi-rs's layout: the module built in this tree sits beside this file; an installed package finds
// it in its platform package (@quiver/node-<platform>, an optional dependency npm installs only on
// a matching machine).
function loadNative() {
  const abi = process.platform === 'linux' ? '-gnu' : ''
  const platform = `${process.platform}-${process.arch}${abi}`
  const local = path.join(__dirname, `quiver.${platform}.node`)
  if (fs.existsSync(local)) {
    try {
      return require(local)
    } catch (error) {
      throw new Error(`quiver's native module ${local} did not load (tools/setup.sh builds it): ${error.message}`)
    }
  }
  const name = `@quiver/node-${platform}`
  try {
    return require(name)
  } catch (error) {
    throw new Error(
      `quiver's native module for ${platform} did not load: install ${name} beside @quiver/node ` +
        `(npm installs it as an optional dependency; a build from source puts ${local} there): ${error.message}`,
    )
  }
}

const native = loadNative()
const CODE = /^\[(QUIVER_[A-Z_]+)(?:\|([^|\]]*)\|([^\]]*))?\] /

/**
 * The native error's sort, in brackets before its message, becomes `error.code`; a server's error
 * also brings its type (`errorType`, DuckDB's name for a SQL error) and `kind` (`sql`, `limit_exceeded`, ...).
 */
function coded(error) {
  const match = error && typeof error.message === 'string' ? CODE.exec(error.message) : null
  if (match) {
    error.code = match[1]
    if (match[2] !== undefined) {
      error.errorType = match[2]
      error.kind = match[3] || null
    }
    error.message = error.message.slice(match[0].length)
  }
  return error
}

async function call(promise) {
  try {
    return await promise
  } catch (error) {
    throw coded(error)
  }
}

function callSync(fn) {
  try {
    return fn()
  } catch (error) {
    throw coded(error)
  }
}

/** Arrow IPC stream bytes of a Table, a RecordBatch, or bytes already. */
function toIpc(data) {
  if (data instanceof Uint8Array) return data
  if (data instanceof Table) return tableToIPC(data, 'stream')
  if (data instanceof RecordBatch) return tableToIPC(new Table(data), 'stream')
  throw new TypeError('Arrow data is an apache-arrow Table or RecordBatch, or Arrow IPC stream bytes')
}

/** `bytes` (a Uint8Array) as an `ArrayType` view of the same memory. */
function viewAs(ArrayType, bytes) {
  return new ArrayType(bytes.buffer, bytes.byteOffset, Math.floor(bytes.byteLength / ArrayType.BYTES_PER_ELEMENT))
}

/** A column over the native module's buffers, each a Uint8Array (crates/quiver-node/src/batches.rs). */
function columnData(type, column) {
  return makeData({
    type,
    offset: column.offset,
    length: column.length,
    nullCount: column.nullCount,
    nullBitmap: column.validity ?? undefined,
    data: viewAs(type.ArrayType, column.values),
    valueOffsets: column.offsets ? viewAs(type.OffsetArrayType, column.offsets) : undefined,
  })
}

/** apache-arrow RecordBatches of a native `{ schema, batches }`; no bytes are copied. */
function recordBatches(result, known = null) {
  const schema = known ?? tableFromIPC(result.schema).schema
  const struct = new Struct(schema.fields)
  return result.batches.flatMap((batch) => {
    if (batch.ipc) return tableFromIPC(batch.ipc).batches
    const children = batch.columns.map((column, index) => columnData(schema.fields[index].type, column))
    return [new RecordBatch(schema, makeData({ type: struct, length: batch.numRows, nullCount: 0, children }))]
  })
}

function asBuffer(bytes) {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * Row objects from the native module's columns: a function made for the result's columns
 * builds every row as one object literal (one shape, no call across the boundary per value).
 * Keys are string literals (JSON.stringify), so any column name is safe.
 */
function rowObjects(result) {
  const { names, booleans, columns, nulls, numRows } = result
  const declarations = names.map((_, k) => `const c${k} = columns[${k}], n${k} = nulls[${k}];`)
  const properties = names.map((name, k) => {
    const value = booleans[k] ? `c${k}[i] === 1` : `c${k}[i]`
    // A computed key, for `__proto__` alone: a literal one would set the prototype.
    const key = name === '__proto__' ? `[${JSON.stringify(name)}]` : JSON.stringify(name)
    return `${key}: ${nulls[k] ? `n${k}[i] ? null : ${value}` : value}`
  })
  const build = new Function(
    'columns',
    'nulls',
    'rows',
    `${declarations.join(' ')} const out = new Array(rows); ` +
      `for (let i = 0; i < rows; i++) out[i] = { ${properties.join(', ')} }; return out`,
  )
  return build(columns, nulls, numRows)
}

function bytesOf(view) {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
}

/** A batch's columns as their buffers' bytes (crates/quiver-node/src/staged.rs). */
function columnBuffers(batch) {
  return batch.data.children.map((data) => ({
    offset: data.offset,
    length: data.length,
    nullCount: data.nullCount,
    validity: data.nullCount > 0 && data.nullBitmap ? bytesOf(data.nullBitmap) : undefined,
    values: bytesOf(data.values),
    offsets: data.valueOffsets ? bytesOf(data.valueOffsets) : undefined,
  }))
}

class ArrowInserter {
  constructor(inner) {
    this._inner = inner
  }

  /** Appends a Table, a RecordBatch or IPC stream bytes; resolves to the rows written so far. */
  write(data) {
    if (data instanceof Table || data instanceof RecordBatch) {
      // The batches' own buffers, copied once by the native module; IPC bytes only for types
      // it does not take.
      const batches = data instanceof Table ? data.batches : [data]
      // A slice's buffers start at different offsets (its bitmap at the slice, its values
      // already cut): IPC bytes.
      const sliced = batches.some((batch) => batch.data.children.some((child) => child.offset !== 0))
      // Nested columns (lists, structs, maps, unions) and the null type have no flat values
      // buffer to lend: IPC bytes.
      const flat = batches.every((batch) => batch.data.children.every((child) => child.values && child.children.length === 0))
      const schema = asBuffer(tableToIPC(new Table(data.schema), 'stream'))
      const stage = (batch) => callSync(() => this._inner.stage(schema, batch.numRows, columnBuffers(batch)))
      if (!sliced && flat && batches.length > 0 && stage(batches[0])) {
        for (const batch of batches.slice(1)) stage(batch)
        return call(this._inner.writeStaged())
      }
    }
    return call(this._inner.write(asBuffer(toIpc(data))))
  }

  /** Commits; resolves to the rows inserted. */
  finish() {
    return call(this._inner.finish())
  }

  /** Rolls back everything written. */
  abort() {
    return call(this._inner.abort())
  }
}

class RowInserter {
  constructor(inner) {
    this._inner = inner
    // Set by finish: the native finish holds the inserter while it runs, so nothing else may
    // reach it afterwards.
    this._ended = false
  }

  /** Adds one row (an array, one value per column); throws at once on a wrong value. */
  addRow(values) {
    if (this._ended) throw Object.assign(new Error('the insert has ended'), { code: 'QUIVER_INVALID_INPUT' })
    callSync(() => this._inner.addRow(values))
  }

  get rows() {
    return this._inner.rows
  }

  /** Sends what is left and commits; resolves to the rows inserted. */
  finish() {
    if (this._ended) return Promise.reject(Object.assign(new Error('the insert has ended'), { code: 'QUIVER_INVALID_INPUT' }))
    this._ended = true
    return call(this._inner.finish())
  }

  /** Inserts nothing; the connection is free again when this resolves. */
  abort() {
    if (this._ended) return Promise.resolve()
    this._ended = true
    return call(this._inner.abort())
  }
}

class Connection {
  constructor(inner) {
    this._inner = inner
  }

  get sessionId() {
    return this._inner.sessionId
  }

  /** Runs SQL; resolves to the rows changed. */
  execute(sql) {
    return call(this._inner.execute(sql))
  }

  /** The result as plain row objects; more than `maxRows` (default 1,000,000) is an error. */
  async executeQuery(sql, options = {}) {
    return rowObjects(await call(this._inner.queryColumns(sql, options.maxRows, true)))
  }

  /** The result as `{ numRows, columns, nulls }`, numeric columns as typed arrays. */
  async executeQueryColumnar(sql, options = {}) {
    const result = await call(this._inner.queryColumns(sql, options.maxRows, false))
    const columns = {}
    const nulls = {}
    result.names.forEach((name, index) => {
      columns[name] = result.columns[index]
      if (result.nulls[index]) nulls[name] = result.nulls[index]
    })
    return { numRows: result.numRows, columns, nulls }
  }

  /** The result as an apache-arrow Table, or with `{ as: 'ipc' }` as Arrow IPC stream bytes. */
  async executeQueryToArrow(sql, options = {}) {
    if (options.as === 'ipc') return call(this._inner.queryIpc(sql, options.maxBytes))
    const result = await call(this._inner.queryArrow(sql, options.maxBytes))
    const batches = recordBatches(result)
    return batches.length ? new Table(batches) : new Table(tableFromIPC(result.schema).schema)
  }

  /** The result as an async iterator of apache-arrow RecordBatches, one batch in memory. */
  async *executeQueryStream(sql) {
    const stream = await call(this._inner.queryStream(sql))
    let schema = null // every batch of a query has the first one's schema
    try {
      for (;;) {
        const result = await call(stream.next())
        if (result === null) return
        schema ??= tableFromIPC(result.schema).schema
        yield* recordBatches(result, schema)
      }
    } finally {
      // An early `break` stops the statement on the server.
      await call(stream.close())
    }
  }

  /** An insert into `table` (`mode`: append, create, create_append, replace); see ArrowInserter. */
  arrowInserter(table, options = {}) {
    return new ArrowInserter(callSync(() => this._inner.arrowInserter(table, options.mode)))
  }

  /** Inserts a Table, a RecordBatch or IPC bytes in one all-or-nothing call; resolves to rows. */
  async insertArrow(table, data, options = {}) {
    const inserter = this.arrowInserter(table, options)
    try {
      await inserter.write(data)
    } catch (error) {
      await inserter.abort()
      throw error
    }
    return inserter.finish()
  }

  /** A row insert into `table` with `columns` ({ name, type, nullable }); see RowInserter. */
  async rowInserter(table, columns, options = {}) {
    return new RowInserter(await call(this._inner.rowInserter(table, columns, options.mode)))
  }

  begin() {
    return call(this._inner.begin())
  }

  commit() {
    return call(this._inner.commit())
  }

  rollback() {
    return call(this._inner.rollback())
  }

  /** Interrupts the running statement from elsewhere; resolves to whether one was running. */
  cancel() {
    return call(this._inner.cancel())
  }

  close() {
    callSync(() => this._inner.close())
  }
}

/** Connects to `tcp://host:port` or `unix:///path` ({ token, shmBytes, clientName, batchRows }). */
async function connect(address, options) {
  return new Connection(await call(native.connect(address, options)))
}

class ServerProcess {
  constructor(inner) {
    this._inner = inner
  }

  /** Starts `python -m quiver.serve` (or `$QUIVER_SERVER_COMMAND`) and waits for READY. */
  static async spawn(options) {
    return new ServerProcess(await call(native.spawnServer(options)))
  }

  get addresses() {
    return this._inner.addresses
  }

  get tcpAddress() {
    return this.addresses.find((address) => address.startsWith('tcp://')) ?? null
  }

  get unixAddress() {
    return this.addresses.find((address) => address.startsWith('unix://')) ?? null
  }

  get token() {
    return this._inner.token
  }

  get pid() {
    return this._inner.pid
  }

  /** Connects to the first listener (or `options.address`) with the server's token. */
  connect(options = {}) {
    const { address = this.addresses[0], ...rest } = options
    return connect(address, { token: this.token ?? undefined, ...rest })
  }

  stderrTail() {
    return this._inner.stderrTail()
  }

  stop() {
    return call(this._inner.stop())
  }
}

module.exports = {
  connect,
  Connection,
  ArrowInserter,
  RowInserter,
  ServerProcess,
  /** Rows `executeQuery` returns unless `maxRows` says otherwise, and the most it may say. */
  ROWS_MAX_DEFAULT: native.ROWS_MAX_DEFAULT,
  ROWS_MAX: native.ROWS_MAX,
}
