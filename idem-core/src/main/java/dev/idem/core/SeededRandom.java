package dev.idem.core;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;

/**
 * The random generators of the paths that must not block (owner tokens of {@link
 * AsyncLeaseIdempotency}, the nonces of {@link ResponseProtection}): a deterministic random bit
 * generator (NIST SP 800-90A), seeded once from the operating system when it is made; after that,
 * making bytes is computation only. The default {@link SecureRandom} ({@code NativePRNG} on Linux,
 * which {@link java.util.UUID#randomUUID()} uses) reads {@code /dev/urandom} as it goes, a blocking
 * call on an event loop. Stateless.
 */
final class SeededRandom {

  private SeededRandom() {}

  /** @return a new generator, seeded now (on the calling thread); thread-safe */
  static SecureRandom create() {
    SecureRandom random;
    try {
      random = SecureRandom.getInstance("DRBG");
    } catch (NoSuchAlgorithmException e) {
      random = new SecureRandom();
    }
    random.nextBytes(new byte[16]); // seeds it now, on the thread that first uses this class
    return random;
  }
}
