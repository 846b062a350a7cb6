package dev.idem.testkit;

import dev.idem.core.ResponseProtection;

/**
 * The keyrings the response-protection tests of both modes use ({@link ResponseProtectionContract},
 * {@link LeaseContract}): fixed test keys, never secrets. Immutable; thread-safe.
 */
final class TestKeyrings {

  /** Key "a" only, current. */
  static final ResponseProtection KEY_A = ResponseProtection.builder().key("a", testKey(1)).currentKey("a").build();

  /** Keys "a" and "b", "b" current: a rotation. */
  static final ResponseProtection KEYS_A_B_CURRENT_B =
      ResponseProtection.builder().key("a", testKey(1)).key("b", testKey(2)).currentKey("b").build();

  /** Key "b" only: "a" retired. */
  static final ResponseProtection ONLY_KEY_B = ResponseProtection.builder().key("b", testKey(2)).currentKey("b").build();

  private TestKeyrings() {}

  private static byte[] testKey(int seed) {
    byte[] key = new byte[ResponseProtection.KEY_BYTES];
    for (int i = 0; i < key.length; i++) {
      key[i] = (byte) (seed * 37 + i * 11);
    }
    return key;
  }
}
