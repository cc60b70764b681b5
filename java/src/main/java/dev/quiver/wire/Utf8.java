package dev.quiver.wire;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Metadata text as it arrived. Valid UTF-8 decodes as usual; each byte of an invalid sequence
 * becomes a lone surrogate (U+DC80 + byte, Python's {@code surrogateescape}), so a peer's bad
 * bytes are kept visible and refused by name instead of being silently replaced.
 */
public final class Utf8 {
  private Utf8() {}

  public static String decode(ByteBuffer bytes) {
    CharsetDecoder strict = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    try {
      return strict.decode(bytes.duplicate()).toString();
    } catch (CharacterCodingException e) {
      return escape(bytes.duplicate());
    }
  }

  /** Whether {@code text} came from valid UTF-8 (holds no escaped byte). */
  public static boolean isValid(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(text.charAt(i - 1)))) {
        return false;
      }
    }
    return true;
  }

  private static String escape(ByteBuffer bytes) {
    StringBuilder out = new StringBuilder();
    CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    CharBuffer chars = CharBuffer.allocate(bytes.remaining() + 1);
    while (bytes.hasRemaining()) {
      var result = decoder.decode(bytes, chars, true);
      chars.flip();
      out.append(chars);
      chars.clear();
      if (result.isError()) {
        for (int i = 0; i < result.length(); i++) {
          out.append((char) (0xDC00 + (bytes.get() & 0xFF)));
        }
      }
    }
    return out.toString();
  }
}
