package dev.idem.webflux;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BiFunction;
import reactor.core.publisher.Mono;

/**
 * Transactional mode for {@link IdempotencyWebFilter}: runs the handler, the key's record and its
 * stored answer in one reactive transaction, which the handler's own writes join (Spring's
 * {@code DatabaseClient} or Spring Data R2DBC repositories, through the transaction in the Reactor
 * context). idem-r2dbc's {@code R2dbcTransactionalIdempotency} with Spring's transactions is one;
 * idem-spring-boot-starter makes it beside an R2DBC {@code ConnectionFactory}:
 *
 * <pre>{@code
 * TransactionalEngine engine = TransactionalEngine.of(
 *     (request, handler) -> idem.execute(springTransactions, request, connection -> handler), idem.listener());
 * }</pre>
 *
 * <p>Implementations are thread-safe and never block.
 */
public interface TransactionalEngine {

  /**
   * Runs one attempt: subscribes to {@code handler} at most once, inside the transaction, when the
   * key is this request's; commits its writes with the stored answer, or rolls them back. The
   * {@code Mono} returned is subscribed with the request's Reactor context, which the handler's
   * subscription must keep (the transaction joins it there); cancelling it rolls the transaction
   * back unless the commit was already sent.
   *
   * @param request scope, key and fingerprint, never {@code null}
   * @param handler the handler's run, which completes with its captured answer, never {@code null}
   * @return the result: {@link AttemptResult.Kind#EXECUTED} (committed), {@link
   *     AttemptResult.Kind#RELEASED} (rolled back with the handler's writes), a replay, a refusal or
   *     a failure as a result; or the handler's error, after the rollback
   */
  Mono<AttemptResult> attempt(IdempotentRequest request, Mono<StoredResponse> handler);

  /** @return the listener the filter tells of its refusals before the engine, never {@code null} */
  IdemListener listener();

  /**
   * How long the engine keeps a completed key, for what publishes the expiry policy (the starter's
   * OpenAPI document); the engine keeps it whatever this says.
   *
   * @return the retention, or empty when the engine does not say (the default); never {@code null}
   */
  default Optional<Duration> retention() {
    return Optional.empty();
  }

  /**
   * @param attempt what {@link #attempt} does, never {@code null}
   * @param listener what {@link #listener} returns, never {@code null}
   * @return an engine of the two
   * @throws NullPointerException if an argument is {@code null}
   */
  static TransactionalEngine of(BiFunction<IdempotentRequest, Mono<StoredResponse>, Mono<AttemptResult>> attempt,
      IdemListener listener) {
    return of(attempt, listener, Optional.empty());
  }

  /**
   * @param attempt what {@link #attempt} does, never {@code null}
   * @param listener what {@link #listener} returns, never {@code null}
   * @param retention what {@link #retention} returns: how long {@code attempt}'s engine keeps a
   *     completed key; never {@code null}
   * @return an engine of the three
   * @throws NullPointerException if an argument is {@code null}
   */
  static TransactionalEngine of(BiFunction<IdempotentRequest, Mono<StoredResponse>, Mono<AttemptResult>> attempt,
      IdemListener listener, Duration retention) {
    return of(attempt, listener, Optional.of(Objects.requireNonNull(retention, "retention")));
  }

  private static TransactionalEngine of(BiFunction<IdempotentRequest, Mono<StoredResponse>, Mono<AttemptResult>> attempt,
      IdemListener listener, Optional<Duration> retention) {
    Objects.requireNonNull(attempt, "attempt");
    Objects.requireNonNull(listener, "listener");
    return new TransactionalEngine() {
      @Override
      public Optional<Duration> retention() {
        return retention;
      }

      @Override
      public Mono<AttemptResult> attempt(IdempotentRequest request, Mono<StoredResponse> handler) {
        return attempt.apply(request, handler);
      }

      @Override
      public IdemListener listener() {
        return listener;
      }
    };
  }
}
