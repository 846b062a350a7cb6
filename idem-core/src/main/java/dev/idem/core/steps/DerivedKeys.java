package dev.idem.core.steps;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The idempotency key a step sends to a foreign service: {@code "idem-step-"} followed by the 64
 * lowercase hexadecimal digits of SHA-256 over the UTF-8 bytes of {@code principal + "\0" +
 * operation + "\0" + key + "\0" + step} (74 characters, within the key grammar of
 * draft-ietf-httpapi-idempotency-key-header and of {@link IdempotencyKey}).
 *
 * <p>Stable: the same operation and step give the same key on every run and every node, so a
 * foreign service that honours keys acts once. Distinct: another principal, operation, key or step
 * gives another key (the NUL separators keep joined parts from reading alike), so two callers that
 * chose the same key never share a foreign charge. The digest shows the foreign service nothing of
 * the principal or the key. Stateless and thread-safe.
 */
public final class DerivedKeys {

  /** The prefix of every derived key: {@value}. */
  public static final String PREFIX = "idem-step-";

  private static final Pattern STEP_NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  private DerivedKeys() {}

  /**
   * @param scope the operation's scope, never {@code null}
   * @param key the operation's key, never {@code null}
   * @param step the step's name (see {@link Steps}), never {@code null}
   * @return the derived key, never {@code null}
   * @throws IllegalArgumentException if {@code step} is not a valid step name
   */
  public static IdempotencyKey of(Scope scope, IdempotencyKey key, String step) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    checkStepName(step);
    String joined = scope.principal() + '\u0000' + scope.operation() + '\u0000' + key.value() + '\u0000' + step;
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(joined.getBytes(StandardCharsets.UTF_8));
      return IdempotencyKey.of(PREFIX + HexFormat.of().formatHex(digest));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  /**
   * @param step a step name
   * @throws NullPointerException if {@code step} is {@code null}
   * @throws IllegalArgumentException if it is not 1 to 64 characters of {@code A-Z a-z 0-9 . _ -}
   */
  public static void checkStepName(String step) {
    Objects.requireNonNull(step, "step");
    if (!STEP_NAME.matcher(step).matches()) {
      throw new IllegalArgumentException("a step name is 1 to 64 characters of A-Z a-z 0-9 . _ -, was '" + step + "'");
    }
  }
}
