package dev.idem.testkit;

import dev.idem.core.StoredResponse;
import java.util.Random;

/**
 * Large stored responses for the contracts: bodies that stress a store's value size and its
 * driver's encoding of binary data. Stateless and thread-safe.
 */
final class LargeResponses {

  /**
   * 4 MiB (4 194 304 bytes), the HTTP filter's default {@code maxResponseBytes}: the largest body
   * an application with the default settings stores.
   */
  static final int DEFAULT_LIMIT = 4 * 1024 * 1024;

  /** Bytes a SQL text protocol escapes (NUL, quotes, backslash, CR, LF, Ctrl-Z), and 0xFF. */
  private static final byte[] ESCAPED = {0, '\'', '"', '\\', '\r', '\n', 0x1A, (byte) 0xFF};

  private LargeResponses() {}

  /**
   * A 201 with {@code Content-Type}, {@code Location} and {@code ETag} whose body is {@code bytes}
   * long: three in four bytes are ones a text protocol must escape, the rest are random (seeded by
   * the length, so a given size always gives the same body).
   *
   * @param bytes the body length, 0 or more
   * @return the response
   */
  static StoredResponse of(int bytes) {
    Random random = new Random(bytes);
    byte[] body = new byte[bytes];
    for (int i = 0; i < bytes; i++) {
      body[i] = i % 4 == 3 ? (byte) random.nextInt(256) : ESCAPED[random.nextInt(ESCAPED.length)];
    }
    return StoredResponse.builder(201)
        .header("Content-Type", "application/octet-stream")
        .header("Location", "/files/" + bytes)
        .header("ETag", "\"" + bytes + "\"")
        .body(body)
        .build();
  }
}
