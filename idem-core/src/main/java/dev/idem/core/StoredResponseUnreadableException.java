package dev.idem.core;

import org.jspecify.annotations.Nullable;

/**
 * A record's stored response exists but cannot be read back: its authenticated encryption failed
 * (tampered bytes, or a ciphertext that belongs to another record), it was protected under a key id
 * the {@link ResponseProtection} keyring does not hold, it is a plaintext record that the keyring
 * refuses ({@link ResponseProtection.Builder#acceptPlaintextRecords(boolean)}), or its bytes are not
 * a stored response at all.
 *
 * <p>The key is answered, so the effect is <em>not</em> run again, and nothing is replayed: Idem
 * never answers a request with bytes it cannot authenticate. Unlike other {@link
 * IdemStoreException}s, retrying soon does not help; an operator must act (put the missing key back
 * into the keyring, or investigate the tampering). An HTTP integration therefore maps it to 500
 * with an RFC 9457 problem of type {@code stored-response-unreadable}, not to 503, which clients
 * retry automatically. The message never contains the principal, the key or any response bytes.
 *
 * <p>Immutable and thread-safe.
 */
public class StoredResponseUnreadableException extends IdemStoreException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message why the stored response cannot be read, never {@code null}; without the
   *     principal, the idempotency key or response bytes
   * @param cause the underlying failure (for example {@code javax.crypto.AEADBadTagException}), may
   *     be {@code null}
   */
  public StoredResponseUnreadableException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
