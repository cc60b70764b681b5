package dev.quiver.rpc;

import java.util.Locale;

/**
 * What one connection moved through shared memory, and where its busy time went; the two
 * summary lines are crates/quiver-rpc/src/stats.rs's, word for word.
 */
final class ShmStats {
  long outboundTotal;
  long outboundShm;
  long inboundTotal;
  long inboundShm;
  long fallbacks;
  long resolveNanos;
  long processNanos;
  long emitNanos;
  long waitingNanos;

  String summary(String connection, String side) {
    long busy = resolveNanos + processNanos + emitNanos;
    long total = busy + waitingNanos;
    return String.format(Locale.ROOT,
        "[quiver-shm] conn closed %s: outbound shm=%d/%d batches (%.1f%%), inbound shm=%d/%d batches (%.1f%%), fallbacks=%d\n"
            + "[quiver-shm] timeline %s: %s-busy=%.1f ms (resolve=%.1f process=%.1f emit=%.1f), waiting=%.1f ms, %s %.0f%% / peer %.0f%%",
        connection, outboundShm, outboundTotal, percent(outboundShm, outboundTotal), inboundShm, inboundTotal,
        percent(inboundShm, inboundTotal), fallbacks, connection, side, ms(busy), ms(resolveNanos), ms(processNanos),
        ms(emitNanos), ms(waitingNanos), side, percent(busy, total), percent(waitingNanos, total));
  }

  private static double percent(long part, long whole) {
    return whole == 0 ? 0.0 : 100.0 * part / whole;
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }
}
