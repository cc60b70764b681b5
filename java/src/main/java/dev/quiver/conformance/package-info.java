/**
 * vgi-rpc's {@code ConformanceService} 2.0.0 in Java, so vgi-rpc's own suite ({@code vgi-rpc-test})
 * can check this spine against the reference (tests/test_java_conformance.py runs it). The Rust
 * twin is crates/quiver-conformance.
 */
package dev.quiver.conformance;
