package dev.quiver.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ShmStatsTest {
  @Test
  void summaryLinesAreTheRustSpinesWordForWord() {
    ShmStats stats = new ShmStats();
    stats.outboundTotal = 4;
    stats.outboundShm = 1;
    stats.inboundTotal = 3;
    stats.inboundShm = 3;
    stats.fallbacks = 2;
    stats.resolveNanos = 1_000_000;
    stats.processNanos = 2_000_000;
    stats.emitNanos = 1_000_000;
    stats.waitingNanos = 12_000_000;
    assertEquals("[quiver-shm] conn closed stdio: outbound shm=1/4 batches (25.0%), inbound shm=3/3 batches "
        + "(100.0%), fallbacks=2\n[quiver-shm] timeline stdio: worker-busy=4.0 ms (resolve=1.0 process=2.0 "
        + "emit=1.0), waiting=12.0 ms, worker 25% / peer 75%", stats.summary("stdio", "worker"));
  }
}
