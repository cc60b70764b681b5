package dev.quiver.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import java.util.List;
import org.junit.jupiter.api.Test;

class ErrorsTest {
  @Test
  void versionGateComparesMajorAndMinorOnly() {
    assertNull(Errors.checkProtocolVersion("P", "2.0.7", "2.0.0"));
    ErrorReport old = Errors.checkProtocolVersion("P", "1.9.0", "2.0.0");
    assertEquals("protocol_version_mismatch", old.kind());
    assertEquals(ErrorCode.FAILED_PRECONDITION, old.code());
    assertTrue(old.message().contains("client is too old"), old.message());
    assertTrue(Errors.checkProtocolVersion("P", "2.1", "2.0.0").message().contains("malformed"));
    assertTrue(Errors.checkProtocolVersion("P", null, "2.0.0").message().contains("<not declared>"));
  }

  @Test
  void routingNamesWhatIsHosted() {
    assertNull(Errors.checkProtocolName("A", List.of("A")));
    assertEquals("protocol_not_specified", Errors.checkProtocolName(null, List.of("A")).kind());
    ErrorReport unknown = Errors.checkProtocolName("B", List.of("A"));
    assertEquals("This server does not host protocol 'B'. Hosted: ['A'].", unknown.message());
    assertEquals("protocol_not_supported", Errors.checkProtocolName("9bad", List.of("A")).kind());
  }
}
