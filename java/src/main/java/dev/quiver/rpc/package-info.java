/**
 * The RPC server: hosted protocols and their methods (unary, producer and exchange streams with
 * optional headers), request checks, logs and errors, cancel. A {@link dev.quiver.rpc.Session}
 * serves one connection; crates/quiver-rpc and python/quiver/rpc own the same concepts.
 */
package dev.quiver.rpc;
