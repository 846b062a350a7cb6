package dev.idem.outbox;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;
import java.util.UUID;

/**
 * The deterministic id of an intent: a name-based UUID (version 8, RFC 9562 section 5.8, built
 * from SHA-256 as in its appendix B.2) of the operation's scope (principal and operation), its
 * idempotency key and the intent's position among the intents the operation recorded (0, 1, ...).
 *
 * <p>The same operation always names its n-th intent the same way, so a replay cannot make a
 * second intent with a new id, a re-publish carries the id the receiver already saw ({@code
 * message-id}, {@code Nats-Msg-Id}, {@code Idempotency-Key}), and two different operations (a
 * different key, or the same key in another scope) never share an id. The input is hashed with a
 * length before each part, so no two different (principal, operation, key, position) tuples give
 * the same bytes to hash. Stateless and thread-safe.
 */
public final class IntentId {

  private static final byte[] DOMAIN = "idem-outbox-intent-v1".getBytes(StandardCharsets.UTF_8);

  private IntentId() {}

  /**
   * @param scope the operation's scope, never {@code null}
   * @param key the operation's idempotency key, never {@code null}
   * @param position the intent's position in the operation, from 0
   * @return the id as a lower-case UUID string of 36 characters, for example {@code
   *     "3f1c0b2e-9a44-8d21-b3e5-0c7a1f2d4e6b"}
   * @throws IllegalArgumentException if {@code position} is negative
   */
  public static String of(Scope scope, IdempotencyKey key, int position) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    if (position < 0) {
      throw new IllegalArgumentException("position must be 0 or more, was " + position);
    }
    MessageDigest sha = sha256();
    part(sha, DOMAIN);
    part(sha, scope.principal().getBytes(StandardCharsets.UTF_8));
    part(sha, scope.operation().getBytes(StandardCharsets.UTF_8));
    part(sha, key.value().getBytes(StandardCharsets.UTF_8));
    sha.update(ByteBuffer.allocate(4).putInt(position).array());
    byte[] h = sha.digest();
    h[6] = (byte) ((h[6] & 0x0f) | 0x80); // version 8
    h[8] = (byte) ((h[8] & 0x3f) | 0x80); // variant 10
    ByteBuffer b = ByteBuffer.wrap(h, 0, 16);
    return new UUID(b.getLong(), b.getLong()).toString();
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  private static void part(MessageDigest sha, byte[] bytes) {
    sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
    sha.update(bytes);
  }
}
