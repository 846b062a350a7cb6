package dev.idem.r2dbc;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Predicate;
import reactor.core.publisher.Mono;

/**
 * Where {@link R2dbcTransactionalIdempotency#execute} gets each attempt's transaction: a new
 * transaction, the connection it runs on, and its end. {@link #of(ConnectionFactory)} opens its
 * own on a {@link ConnectionFactory}; an application whose writes go through a framework's
 * transaction management gives that framework's instead, so that its own writes and the key's
 * record share the transaction. With Spring (spring-r2dbc), for example, as idem-spring-boot-starter
 * does:
 *
 * <pre>{@code
 * R2dbcTransactions spring = new R2dbcTransactions() {
 *   public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
 *     return operator.execute(status -> ConnectionFactoryUtils.getConnection(factory)
 *             .flatMap(work)
 *             .doOnNext(value -> { if (!commit.test(value)) status.setRollbackOnly(); }))
 *         .singleOrEmpty();
 *   }
 * };
 * }</pre>
 *
 * <p>An implementation must be thread-safe, and must not block.
 */
public interface R2dbcTransactions {

  /**
   * Runs {@code work} in a new transaction and ends it: commits when {@code commit} says so of the
   * work's value, rolls back otherwise, and when the work fails or the subscriber cancels.
   *
   * @param work what to run, given the transaction's connection, never {@code null}; its writes
   *     are the transaction's
   * @param commit whether to commit, given the work's value, never {@code null}
   * @param <T> the work's value
   * @return the work's value, once the transaction has ended; or an error: the work's, the
   *     failure to begin, or the failure to end the transaction (after a commit's failure the
   *     caller cannot know whether it committed)
   */
  <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit);

  /**
   * Idem's own transactions: each on a new connection of {@code factory} (a pool is recommended),
   * begun with the connection's default isolation level and closed when the transaction ends, on
   * success, failure and cancellation.
   *
   * @param factory where connections come from, never {@code null}
   * @return the transactions, thread-safe
   * @throws NullPointerException if {@code factory} is {@code null}
   */
  static R2dbcTransactions of(ConnectionFactory factory) {
    Objects.requireNonNull(factory, "factory");
    return new R2dbcTransactions() {
      @Override
      public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
        return Mono.usingWhen(
            Mono.defer(() -> Mono.from(factory.create())),
            c -> Mono.from(c.beginTransaction())
                .then(Mono.defer(() -> work.apply(c)))
                .flatMap(value -> Mono.from(commit.test(value) ? c.commitTransaction() : c.rollbackTransaction()).thenReturn(value)),
            Connection::close,
            (c, error) -> rollbackAndClose(c),
            this::rollbackAndClose);
      }

      /** A rollback that fails (the connection is broken, say) leaves nothing committed either. */
      private Mono<Void> rollbackAndClose(Connection c) {
        return Mono.from(c.rollbackTransaction()).onErrorResume(ignored -> Mono.empty()).then(Mono.from(c.close()));
      }

      @Override
      public String toString() {
        return "R2dbcTransactions.of(" + factory.getMetadata().getName() + ")";
      }
    };
  }
}
