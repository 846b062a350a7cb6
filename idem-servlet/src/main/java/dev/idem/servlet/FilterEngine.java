package dev.idem.servlet;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseContext;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.util.Objects;

/**
 * What {@link IdempotencyFilter} runs a matched request through: it runs the handler at most once
 * per scope and key and returns the outcome, or throws one of Idem's exceptions, which the filter
 * turns into problem details.
 *
 * <ul>
 *   <li>{@link #lease(LeaseIdempotency)}, the default: lease mode. The claim commits before the
 *       handler runs, so the handler may call anything (a payment API, a message broker); a
 *       concurrent duplicate gets 409 at once or waits, as the engine's {@link
 *       dev.idem.core.InProgressPolicy} says.
 *   <li>A transactional engine (the Spring Boot starter's, {@code idem.mode=transactional}): the
 *       claim, the handler's database writes and the stored response commit in one transaction of
 *       the handler's own database, so a create costs one write transaction instead of three;
 *       concurrent duplicates wait on the key's row and replay.
 * </ul>
 *
 * <p>Implementations must be thread-safe: one instance serves every request.
 */
@FunctionalInterface
public interface FilterEngine {

  /**
   * Runs {@code handler} at most once for the request's scope and key, or answers from the store.
   *
   * @param request the scope, key and fingerprint, never {@code null}
   * @param handler the filter chain; a lease engine passes the claim's {@link LeaseContext}, a
   *     transactional engine passes {@code null}. When its answer was too long to hold, it has
   *     already reached the client and the handler returns a record without the body ({@link
   *     StoredResponse#bodyStored()} {@code false}), which the engine stores or releases by its
   *     response policy like any answer, so that the key is never run twice.
   * @return the outcome, never {@code null}
   * @throws dev.idem.core.IdempotencyKeyReusedException if the key was used with another request
   * @throws dev.idem.core.RequestInProgressException if a first attempt is still running
   * @throws RolledBackException if the handler ran but its transaction rolled back, so nothing of
   *     it is kept
   * @throws dev.idem.core.CompletionUnknownException if (lease mode) the handler ran but its answer
   *     could not be stored within the lease; the filter answers 503 outcome-unknown
   * @throws dev.idem.core.IdemException if the store failed
   * @throws RuntimeException whatever the handler threw, as it is
   */
  Outcome execute(IdempotentRequest request, Handler handler);

  /**
   * @param engine the lease-mode engine, never {@code null}
   * @return an engine that runs requests in lease mode
   * @throws NullPointerException if {@code engine} is {@code null}
   */
  static FilterEngine lease(LeaseIdempotency engine) {
    Objects.requireNonNull(engine, "engine");
    return engine::execute;
  }

  /** The filter chain as an engine sees it. */
  @FunctionalInterface
  interface Handler extends dev.idem.core.LeaseEffect {
    /**
     * @param context the claim's lease context in lease mode; {@code null} in a transactional engine
     * @return the response to store, never {@code null}: the whole answer, or, for an answer
     *     longer than {@link IdempotencyFilterConfig#maxResponseBytes()} that already streamed to
     *     the client, its record without the body ({@link StoredResponse#bodyStored()} {@code
     *     false}). The engine treats both alike: stored (the key stays completed) or released, as
     *     its response policy says for the status.
     * @throws Exception whatever the handler threw
     */
    @Override
    StoredResponse run(LeaseContext context) throws Exception;
  }

  /**
   * The handler ran, but the transaction that held its writes did not commit (the commit failed, or
   * a rollback was forced): nothing of the request is kept, and the client should retry with the
   * same key. The filter answers 503.
   */
  final class RolledBackException extends IdemStoreException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what failed, never {@code null}
     * @param cause the database's failure, or {@code null}
     */
    public RolledBackException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
