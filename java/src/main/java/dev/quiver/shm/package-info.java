/**
 * The {@code VGIS} shared-memory segment a client creates and a worker attaches: its layout, its
 * allocation table, and the settings read from the environment (crates/quiver-shm,
 * python/quiver/shm). Mapping a segment needs {@code java.lang.foreign} (JDK 22+): the classes
 * that do it live under {@code META-INF/versions/22} of the jar, and on an older JDK
 * {@link dev.quiver.shm.SharedMemory#available()} is false, so the worker declines shared memory
 * and every batch travels inline, with no change to worker code.
 */
package dev.quiver.shm;
