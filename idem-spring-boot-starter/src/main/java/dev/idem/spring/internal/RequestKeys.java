package dev.idem.spring.internal;

import dev.idem.core.IdempotencyKey;
import dev.idem.spring.Idempotent;
import org.jspecify.annotations.Nullable;

/**
 * Where the request the Idempotency-Key filter protects on this thread is read: the web concern
 * makes the bean, the {@link Idempotent} method interceptor asks it whether a call is covered by the
 * request's own record. Implementations are called on the request's thread.
 */
@FunctionalInterface
public interface RequestKeys {

  /**
   * The request the Idempotency-Key filter protects on this thread in transactional mode.
   *
   * @param key the request's idempotency key
   * @param connection the connection of the request's transaction, where its key is recorded
   */
  record ProtectedRequest(IdempotencyKey key, Object connection) {}

  /**
   * @return the request, or {@code null} outside a request the filter protects with a key in
   *     transactional mode
   */
  @Nullable ProtectedRequest current();
}
