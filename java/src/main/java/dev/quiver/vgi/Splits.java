package dev.quiver.vgi;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Split scans ({@code table_function_plan}): one page of a function's plan (a cursor is the offset
 * of the next split), and the redemption of a token at {@code init}. A token is VGI's envelope
 * (format 1: version, flags, anchor length, a 16-byte bind fingerprint, anchor, payload); this SDK
 * holds no signing key, so it never seals a payload and refuses a sealed token
 * (crates/quiver-vgi/src/plan.rs and python/quiver/vgi/splits.py are its twins).
 */
final class Splits {
  /** Splits one plan page carries when the engine asks for no fewer. */
  static final int PAGE_SPLITS = 1024;
  private static final int FINGERPRINT = 16;
  private static final int HEADER = 4 + FINGERPRINT;

  private Splits() {}

  /** The 16 bytes binding a token to its bind: function, schema and arguments. */
  static byte[] fingerprint(Map<String, Object> bindCall) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      digest.update("quiver.split_token.v1\0".getBytes(StandardCharsets.UTF_8));
      digest.update(String.valueOf(bindCall.get("function_name")).getBytes(StandardCharsets.UTF_8));
      digest.update((byte) 0);
      digest.update(String.valueOf(bindCall.get("schema_path")).getBytes(StandardCharsets.UTF_8));
      digest.update((byte) 0);
      Object arguments = bindCall.get("arguments");
      if (arguments instanceof byte[] bytes) {
        digest.update(bytes);
      }
      return Arrays.copyOf(digest.digest(), FINGERPRINT);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-256", e);
    }
  }

  static byte[] token(byte[] payload, byte[] fingerprint) {
    ByteBuffer token = ByteBuffer.allocate(HEADER + payload.length).order(ByteOrder.LITTLE_ENDIAN);
    token.put((byte) 1).put((byte) 0).putShort((short) 0).put(fingerprint).put(payload);
    return token.array();
  }

  /** The payload of the one split an init redeems, checked as vgi-python checks it without a key. */
  static byte[] redeem(Function function, Map<String, Object> bindCall, List<?> tokens) {
    if (tokens.size() != 1) {
      throw VgiErrors.invalidArgument(function.name + "(): an init redeems one split, got " + tokens.size() + " tokens");
    }
    byte[] token = (byte[]) tokens.get(0);
    if (token.length < HEADER) {
      throw invalid("split token too short: " + token.length + " bytes, need at least " + HEADER);
    }
    if (token[0] != 1) {
      throw invalid("unsupported split-token format_version " + token[0] + "; this worker speaks 1");
    }
    if ((token[1] & ~1) != 0) {
      throw invalid("split token sets reserved flag bits");
    }
    if ((token[1] & 1) != 0) {
      throw invalid("split token is sealed but this worker holds no signing key; cannot open it");
    }
    int anchor = ByteBuffer.wrap(token, 2, 2).order(ByteOrder.LITTLE_ENDIAN).getShort() & 0xffff;
    if (token.length < HEADER + anchor) {
      throw invalid("split token truncated: anchor_len=" + anchor + " exceeds token length " + token.length);
    }
    if (!Arrays.equals(Arrays.copyOfRange(token, 4, HEADER), fingerprint(bindCall))) {
      throw invalid("split token was minted for a different bind (fingerprint mismatch)");
    }
    return Arrays.copyOfRange(token, HEADER + anchor, token.length);
  }

  private static RuntimeException invalid(String message) {
    return VgiErrors.invalidArgument("[SPLIT_TOKEN_INVALID] " + message);
  }

  /** One page of {@code function}'s plan, from the request's cursor on. */
  static byte[] page(Function function, Args args, Map<String, Object> bindCall, Map<String, Object> request,
      BufferAllocator allocator) {
    Map<String, Object> response = new LinkedHashMap<>();
    response.put("scope", "catalog");
    if (function.splits == null) {
      // Not split-capable: one split standing for the whole scan, as vgi-python answers.
      response.put("splits", List.of(split(new byte[0], new byte[0], allocator)));
      return Rows.row(Dataclasses.PLAN_RESPONSE, response, allocator);
    }
    List<byte[]> payloads = function.splits.payloads(args);
    byte[] cursor = (byte[]) request.get("cursor");
    long start = cursor == null ? 0 : ByteBuffer.wrap(cursor).order(ByteOrder.LITTLE_ENDIAN).getLong();
    if (start < 0 || start > payloads.size() || (cursor != null && cursor.length != 8)) {
      throw VgiErrors.invalidArgument(function.name + "(): a plan cursor outside the plan");
    }
    Object asked = request.get("max_splits_per_response");
    int perPage = asked == null || ((Number) asked).longValue() <= 0
        ? PAGE_SPLITS : (int) Math.min(PAGE_SPLITS, ((Number) asked).longValue());
    int end = (int) Math.min(payloads.size(), start + perPage);
    byte[] print = fingerprint(bindCall);
    List<byte[]> splits = new ArrayList<>();
    for (byte[] payload : payloads.subList((int) start, end)) {
      splits.add(split(payload, token(payload, print), allocator));
    }
    response.put("splits", splits);
    if (end < payloads.size()) {
      response.put("next_cursors",
          List.of(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(end).array()));
    }
    response.put("max_workers", (long) function.maxWorkers);
    response.put("estimated_total_splits", (long) payloads.size());
    return Rows.row(Dataclasses.PLAN_RESPONSE, response, allocator);
  }

  private static byte[] split(byte[] payload, byte[] token, BufferAllocator allocator) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("payload", payload);
    row.put("token", token);
    row.put("rows_exact", false);
    return Rows.row(Dataclasses.SCAN_SPLIT, row, allocator);
  }

  static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }
}
