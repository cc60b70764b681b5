// Types of quiver's Node package (node/index.js over the native module crates/quiver-node).
import type { RecordBatch, Table } from 'apache-arrow'

/** Arrow data to insert: an apache-arrow Table or RecordBatch, or Arrow IPC stream bytes. */
export type ArrowData = Table | RecordBatch | Uint8Array

/** How a client error is sorted, in `error.code`. */
export type QuiverErrorCode =
  | 'QUIVER_SQL'
  | 'QUIVER_UNAUTHENTICATED'
  | 'QUIVER_SERVER'
  | 'QUIVER_CONNECTION'
  | 'QUIVER_PROTOCOL'
  | 'QUIVER_INVALID_INPUT'
  | 'QUIVER_SPAWN'

/** What this package throws: an Error with its sort and, for an error the server answered with, its type and kind. */
export interface QuiverError extends Error {
  code: QuiverErrorCode
  /** The server's name for the error: DuckDB's exception name for SQL errors, `LimitExceededError`, ... */
  errorType?: string
  /** The protocol's kind token: `sql`, `limit_exceeded`, `unauthenticated`, ... */
  kind?: string | null
}

/** Insert modes: append to a table, create it, create it unless it exists, or replace it. */
export type InsertMode = 'append' | 'create' | 'create_append' | 'replace'

export interface ConnectOptions {
  /** The token TCP listeners require. */
  token?: string
  /** Bytes of the shared-memory segment (Unix sockets only); 0 turns it off. */
  shmBytes?: number
  /** A name for the server's log. */
  clientName?: string
  /** Rows per result batch the client asks for. */
  batchRows?: number
}

/**
 * A cell as `executeQuery` gives it: integers of up to 32 bits and floats as numbers, 64-bit
 * integers as bigint, text, booleans, null; any other type as its text (dates, timestamps,
 * decimals).
 */
export type Cell = number | bigint | string | boolean | null
export type Row = Record<string, Cell>

export type ColumnValues =
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Float32Array
  | Float64Array
  | Cell[]

export interface ColumnarResult {
  numRows: number
  /** Numeric columns as typed arrays (booleans as Uint8Array 0/1), others as arrays of cells. */
  columns: Record<string, ColumnValues>
  /** For each column with a null: 1 where the value is null (its typed array holds 0 there). */
  nulls: Record<string, Uint8Array>
}

export interface ColumnSpec {
  name: string
  type: 'boolean' | 'int16' | 'int32' | 'int64' | 'float32' | 'float64' | 'utf8'
  /** Default true. */
  nullable?: boolean
}

/** Rows `executeQuery` returns unless `maxRows` says otherwise (1,000,000). */
export declare const ROWS_MAX_DEFAULT: number
/** The most rows `executeQuery` may be allowed (10,000,000). */
export declare const ROWS_MAX: number

export declare function connect(address: string, options?: ConnectOptions): Promise<Connection>

export declare class Connection {
  readonly sessionId: string
  /** Runs SQL; resolves to the rows changed. */
  execute(sql: string): Promise<number>
  /** The result as row objects; more than `maxRows` rows is an error (nothing is kept). */
  executeQuery(sql: string, options?: { maxRows?: number }): Promise<Row[]>
  /** The result column by column; more than `maxRows` (default 50,000,000) is an error. */
  executeQueryColumnar(sql: string, options?: { maxRows?: number }): Promise<ColumnarResult>
  /** The result as an apache-arrow Table; more than `maxBytes` (default 2 GiB) is an error. */
  executeQueryToArrow(sql: string, options?: { as?: 'table'; maxBytes?: number }): Promise<Table>
  /** The result as Arrow IPC stream bytes. */
  executeQueryToArrow(sql: string, options: { as: 'ipc'; maxBytes?: number }): Promise<Buffer>
  /** The result batch by batch, in constant memory; leaving the loop early stops the query. */
  executeQueryStream(sql: string): AsyncGenerator<RecordBatch, void, undefined>
  arrowInserter(table: string, options?: { mode?: InsertMode }): ArrowInserter
  /** Inserts `data` all or nothing; resolves to the rows inserted. */
  insertArrow(table: string, data: ArrowData, options?: { mode?: InsertMode }): Promise<number>
  rowInserter(table: string, columns: ColumnSpec[], options?: { mode?: InsertMode }): Promise<RowInserter>
  begin(): Promise<void>
  commit(): Promise<void>
  rollback(): Promise<void>
  /** Interrupts the running statement; resolves to whether one was running. */
  cancel(): Promise<boolean>
  /** Closes the connection once the calls made on it end. */
  close(): void
}

/** An insert of Arrow data into one table, all or nothing: nothing is visible before `finish`. */
export declare class ArrowInserter {
  /** Appends; resolves to the rows written so far. The first write fixes the schema. */
  write(data: ArrowData): Promise<number>
  /** Commits; resolves to the rows this insert appended. */
  finish(): Promise<number>
  /** Rolls back every row written. */
  abort(): Promise<void>
}

/** An insert of rows, all or nothing; `addRow` blocks only while the server is behind. */
export declare class RowInserter {
  /** Adds a row, one value per column; a wrong value throws at once and adds nothing. */
  addRow(values: Cell[]): void
  readonly rows: number
  /** Sends what is left and commits; resolves to the rows inserted. */
  finish(): Promise<number>
  /**
   * Inserts nothing. An inserter neither finished nor aborted holds its connection (calls on
   * it wait) until it is garbage-collected.
   */
  abort(): Promise<void>
}

export interface ServerOptions {
  /** The program and arguments before the server's flags (default: `$QUIVER_SERVER_COMMAND`, else `$QUIVER_SERVER_PYTHON -m quiver.serve`, else `quiver-server` on PATH, else the nearest `.venv`'s Python `-m quiver.serve`). */
  command?: string[]
  /** The database file (default: in memory). */
  database?: string
  /** Listeners, `tcp://127.0.0.1:0` (a free port) and/or `unix:///path`. */
  listen?: string[]
  token?: string
  noAuth?: boolean
  extension?: string
  threads?: number
  memoryLimit?: string
  maxConnections?: number
  extraArgs?: string[]
}

/** A server this process starts; it stops on `stop()` or when this process exits. */
export declare class ServerProcess {
  static spawn(options?: ServerOptions): Promise<ServerProcess>
  readonly addresses: string[]
  readonly tcpAddress: string | null
  readonly unixAddress: string | null
  readonly token: string | null
  readonly pid: number
  /** Connects to the first listener (or `address`) with the server's token. */
  connect(options?: ConnectOptions & { address?: string }): Promise<Connection>
  stderrTail(): string
  stop(): Promise<void>
}
