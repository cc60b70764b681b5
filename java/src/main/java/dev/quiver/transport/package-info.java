/**
 * Byte transports a worker serves on: its own stdio and a Unix-domain socket listener. No Arrow
 * here (crates/quiver-transport and python/quiver/transport own the same concept).
 */
package dev.quiver.transport;
