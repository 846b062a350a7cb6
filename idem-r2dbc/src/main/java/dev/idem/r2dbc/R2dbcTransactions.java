package dev.idem.r2dbc;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Result;
import io.r2dbc.spi.Wrapped;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Predicate;
import reactor.core.publisher.Flux;
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
 * <p>That sketch leaves one thing out: a cancellation (a client that went away) arrives on another
 * thread than the work's, which may be sending its next statement; a rollback sent then can reach
 * the database first, and that statement then commits on its own. An implementation closes the
 * transaction's connection for good on cancellation (the physical one under a pool's handle)
 * before it rolls back, as {@link #of} and idem-spring-boot-starter's do.
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
   * success, failure and cancellation. A cancelled transaction's connection is closed for good (the
   * one underneath a pool's handle too), not rolled back and reused: the work may be sending a
   * statement at the moment of the cancellation, which must not run after the transaction ended.
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
            this::discard);
      }

      /**
       * A cancelled transaction: the connection is closed for good, never rolled back and reused.
       * The cancellation comes on another thread than the work's, which may be sending its next
       * statement at that moment; a {@code ROLLBACK} could reach the database before that
       * statement, which would then run and commit on its own, outside any transaction (a claim
       * or an effect's write without the other). Closed, the session ends and the database rolls
       * back whatever it still held, statements sent later fail, and a commit already sent is
       * answered first. Behind a pool ({@link Wrapped}), the pooled connection underneath is
       * closed, and its handle goes back to the pool, which validates it before handing it out.
       */
      private Mono<Void> discard(Connection c) {
        Connection physical = c;
        for (int i = 0; i < 8 && physical instanceof Wrapped<?> wrapped && wrapped.unwrap() instanceof Connection inner
            && inner != physical; i++) {
          physical = inner;
        }
        if (physical == c) {
          return Mono.from(c.close()).onErrorResume(ignored -> Mono.empty());
        }
        return Mono.from(physical.close()).onErrorResume(ignored -> Mono.empty())
            .then(Mono.from(c.close()).onErrorResume(ignored -> Mono.empty()));
      }

      /**
       * A {@code ROLLBACK} statement, sent whatever the driver believes of the transaction, then the
       * close. The drivers' {@code rollbackTransaction()} skips the rollback when they last saw no
       * transaction; after a cancellation their {@code BEGIN} may still be on its way, and the
       * connection went back to its pool inside that transaction, where the next attempt's begin
       * was skipped in turn and its claim committed apart from its effect. The statement queues
       * behind whatever the connection still runs. A rollback that fails (the connection is
       * broken, say) leaves nothing committed either.
       */
      private Mono<Void> rollbackAndClose(Connection c) {
        return Flux.from(c.createStatement("ROLLBACK").execute())
            .concatMap(Result::getRowsUpdated)
            .then()
            .onErrorResume(ignored -> Mono.empty())
            .then(Mono.from(c.close()));
      }

      @Override
      public String toString() {
        return "R2dbcTransactions.of(" + factory.getMetadata().getName() + ")";
      }
    };
  }
}
