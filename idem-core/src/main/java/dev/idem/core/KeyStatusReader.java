package dev.idem.core;

/**
 * Reads the {@link KeyStatus} of one (scope, idempotency key) from a store, without changing
 * anything: no claim, no renewal, no lock held after the call. Implemented by every store Idem
 * ships: {@link InMemoryLeaseStore}, {@code dev.idem.jdbc.JdbcLeaseStore} and {@code
 * dev.idem.jdbc.JdbcIdempotency} (the key table of both modes), {@code
 * dev.idem.redis.RedisLeaseStore}.
 *
 * <p>The answer is for the key's own principal: callers take the scope from authentication and
 * routing exactly as the engine does, never from a field the client controls, and show nothing of
 * another principal's keys (the HTTP endpoint answers 404 for them as for an unknown key).
 *
 * <p>Implementations are thread-safe.
 */
@FunctionalInterface
public interface KeyStatusReader {

  /**
   * @param scope principal and operation, never {@code null}
   * @param key the idempotency key, never {@code null}
   * @return what the store knows of the key at the time of the read (its own clock), never {@code
   *     null}; {@link KeyStatus.Absent} for an unknown, released or expired key
   * @throws NullPointerException if an argument is {@code null}
   * @throws StoredResponseUnreadableException if the key is completed and its stored response,
   *     protected at rest, cannot be opened to read its status
   * @throws IdemStoreException if the store fails or cannot be reached
   */
  KeyStatus status(Scope scope, IdempotencyKey key);
}
