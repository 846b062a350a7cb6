package dev.idem.jdbc.internal;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * How exception messages (which end up in logs) name a record without revealing its principal or
 * its idempotency key: {@code record #} and the first 8 hexadecimal digits of SHA-256 over the
 * scope's principal, the operation and the key, each UTF-8 encoded and preceded by its length in
 * bytes (4 bytes, big-endian), so that no two records share an input. Eight digits tell records
 * apart in a log; they do not identify one for anyone without the key. Stateless and thread-safe.
 * Not public API.
 */
public final class LogRef {

  private LogRef() {}

  /** @return {@code "record #"} and 8 lowercase hexadecimal digits, never {@code null} */
  public static String of(Scope scope, IdempotencyKey key) {
    MessageDigest sha256;
    try {
      sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
    for (String part : new String[] {scope.principal(), scope.operation(), key.value()}) {
      byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
      sha256.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
      sha256.update(bytes);
    }
    return "record #" + HexFormat.of().formatHex(sha256.digest(), 0, 4);
  }
}
