/**
 * The vgi-rpc v1 wire: back-to-back Arrow IPC streams whose framework keys travel in each
 * record batch's custom metadata (never the schema's), log and error records, batch roles and
 * decode limits. Mirrors crates/quiver-wire and python/quiver/wire; no transport, no RPC.
 */
package dev.quiver.wire;
