package dev.quiver.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ShmConfigTest {
  @Test
  void defaultsWhenNothingIsSet() {
    ShmConfig config = ShmConfig.fromEnv(Map.of());
    assertEquals(ShmConfig.DEFAULT, config);
    assertFalse(config.wantsShmFor(10, ShmConfig.MIN_BATCH_BYTES_DEFAULT - 1));
    assertTrue(config.wantsShmFor(10, ShmConfig.MIN_BATCH_BYTES_DEFAULT));
    assertFalse(config.wantsShmFor(0, 1L << 30), "an empty batch never goes through the segment");
  }

  @Test
  void readsTheSameVariablesAsTheOtherSpines() {
    ShmConfig config = ShmConfig.fromEnv(Map.of("VGI_RPC_SHM_DISABLE", "yes", "VGI_RPC_SHM_DEBUG", " On ",
        "VGI_RPC_SHM_MIN_BATCH_BYTES", "1"));
    assertTrue(config.disabled());
    assertTrue(config.debug());
    assertEquals(1, config.minBatchBytes());
    assertFalse(config.wantsShmFor(10, 1L << 20), "disabled wins over the threshold");
  }

  @Test
  void aMalformedVariableIsAnErrorNamingIt() {
    var flag = assertThrows(IllegalArgumentException.class,
        () -> ShmConfig.fromEnv(Map.of("VGI_RPC_SHM_DEBUG", "maybe")));
    assertTrue(flag.getMessage().startsWith("VGI_RPC_SHM_DEBUG='maybe' is invalid"), flag.getMessage());
    for (String bad : new String[] {"-1", "128k", "1e6", "99999999999999999999"}) {
      var threshold = assertThrows(IllegalArgumentException.class,
          () -> ShmConfig.fromEnv(Map.of("VGI_RPC_SHM_MIN_BATCH_BYTES", bad)));
      assertTrue(threshold.getMessage().startsWith("VGI_RPC_SHM_MIN_BATCH_BYTES='" + bad + "'"), threshold.getMessage());
    }
  }

  @Test
  void layoutNumbersAreTheWireFormat() {
    assertEquals(4094, Layout.ALLOCATIONS_MAX);
    assertEquals(0x53494756, Layout.MAGIC, "\"VGIS\" little-endian");
    assertEquals(65536 + 64, Layout.align(65537));
    assertEquals(65536, Layout.align(65536));
    assertThrows(ShmException.class, () -> Layout.checkName("a/b"));
    assertThrows(ShmException.class, () -> Layout.checkSize(Layout.HEADER_BYTES));
  }

  @Test
  void jdk17DeclinesSharedMemory() {
    // Surefire runs on the default JDK (17): the jar's base class is the one loaded here.
    if (Runtime.version().feature() < 22) {
      assertFalse(SharedMemory.available());
      var refused = assertThrows(ShmException.class, () -> SharedMemory.attach("psm_x"));
      assertTrue(refused.getMessage().contains("JDK 22"), refused.getMessage());
    }
  }
}
