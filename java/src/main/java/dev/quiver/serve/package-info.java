/**
 * How a worker program serves: stdio by default, {@code --unix PATH} (prints {@code UNIX:<path>}),
 * and {@code --idle-timeout SECONDS} to exit when no client has been connected that long
 * (crates/quiver-rpc/src/serve.rs behaves the same).
 */
package dev.quiver.serve;
