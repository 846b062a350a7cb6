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
   * @throws OutcomeUnknownException if the handler ran and the commit's acknowledgement was lost
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
   * The handler ran, but the transaction that held its writes did not commit (a statement after the
   * handler failed, the commit was refused, or a rollback was forced): nothing of the request is
   * kept, and the handler's answer is not sent, since it would describe writes that did not
   * happen.
   *
   * <p>When {@link #retryCanSucceed()}, the cause was the store's (a lost connection, a deadlock, a
   * database short of resources): the filter answers 503 and the client retries with the same key.
   * Otherwise the request itself failed (the database refused its data, or the handler answered
   * success after an error that rolled its transaction back): the filter answers 500 with the
   * {@code request-failed} problem, since the same request would fail the same way.
   */
  final class RolledBackException extends IdemStoreException {
    private static final long serialVersionUID = 1L;

    private final boolean retryCanSucceed;

    /**
     * A transient failure: a retry with the same key can succeed.
     *
     * @param message what failed, never {@code null}
     * @param cause the database's failure, or {@code null}
     */
    public RolledBackException(String message, Throwable cause) {
      this(message, cause, true);
    }

    /**
     * @param message what failed, never {@code null}
     * @param cause the database's failure, or {@code null}
     * @param retryCanSucceed whether the same request can succeed later (a store failure) or
     *     fails the same way (the request's own failure)
     */
    public RolledBackException(String message, Throwable cause, boolean retryCanSucceed) {
      super(message, cause);
      this.retryCanSucceed = retryCanSucceed;
    }

    /** @return whether a retry with the same key can succeed (503) or not (500) */
    public boolean retryCanSucceed() {
      return retryCanSucceed;
    }
  }

  /**
   * The handler ran and its transaction's commit was sent, but no acknowledgement came back (the
   * connection broke during the commit): the writes and the stored response may or may not have
   * committed, together. A retry with the same key is safe either way: it replays the stored
   * response if the commit took effect, and runs the request once if it did not. The filter
   * answers 503 saying so.
   */
  final class OutcomeUnknownException extends IdemStoreException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what failed, never {@code null}
     * @param cause the database's failure, or {@code null}
     */
    public OutcomeUnknownException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
