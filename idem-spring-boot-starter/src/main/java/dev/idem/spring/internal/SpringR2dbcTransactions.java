package dev.idem.spring.internal;

import dev.idem.r2dbc.R2dbcTransactions;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Wrapped;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.springframework.r2dbc.connection.ConnectionFactoryUtils;
import org.springframework.transaction.ReactiveTransactionManager;
import org.springframework.transaction.reactive.TransactionalOperator;
import reactor.core.publisher.Mono;

/**
 * {@link R2dbcTransactions} on Spring's reactive transactions: each attempt runs in a new
 * transaction of the application's {@link ReactiveTransactionManager} (an {@code
 * R2dbcTransactionManager} on the same {@link ConnectionFactory}), on the connection bound to it,
 * so that the handler's writes through {@code DatabaseClient} or Spring Data R2DBC repositories,
 * which find the transaction in the Reactor context, share it with the key's record. A value the
 * predicate refuses marks the transaction rollback-only; a failure, or a cancelled subscription,
 * rolls it back (Spring's {@code TransactionalOperator}). Thread-safe; never blocks.
 */
public final class SpringR2dbcTransactions implements R2dbcTransactions {

  private final TransactionalOperator operator;
  private final ConnectionFactory factory;

  /**
   * @param transactions the application's reactive transaction manager on {@code factory}, never {@code null}
   * @param factory the connection factory of the key table and of the handlers' writes, never {@code null}
   */
  public SpringR2dbcTransactions(ReactiveTransactionManager transactions, ConnectionFactory factory) {
    this.operator = TransactionalOperator.create(Objects.requireNonNull(transactions, "transactions"));
    this.factory = Objects.requireNonNull(factory, "factory");
  }

  /**
   * {@inheritDoc}
   *
   * <p>A cancellation (a client that went away) first closes the transaction's connection for
   * good (the physical one under a pool's handle), then lets Spring roll back and release it. The
   * cancellation arrives on another thread than the work's, which may be sending its next
   * statement at that moment; Spring's rollback could reach the database before that statement,
   * which would then run and commit on its own, outside the transaction (a handler's row without
   * its key, which the retry writes again). Closed, the session ends, the database rolls back what
   * it held, later statements fail, and the pool validates the handle before reusing it.
   */
  @Override
  public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
    return Mono.defer(() -> {
      AtomicReference<@Nullable Connection> bound = new AtomicReference<>();
      return operator.execute(status -> ConnectionFactoryUtils.getConnection(factory)
              .doOnNext(bound::set)
              .flatMap(work)
              .doOnNext(value -> {
                if (!commit.test(value)) {
                  status.setRollbackOnly();
                }
              }))
          .singleOrEmpty()
          .doOnCancel(() -> {
            Connection connection = bound.get();
            if (connection != null) {
              Mono.from(physical(connection).close()).onErrorResume(ignored -> Mono.empty()).subscribe();
            }
          });
    });
  }

  /** @return the connection under a pool's handles ({@link Wrapped}), or {@code connection} itself */
  private static Connection physical(Connection connection) {
    Connection current = connection;
    for (int i = 0; i < 8 && current instanceof Wrapped<?> wrapped && wrapped.unwrap() instanceof Connection inner
        && inner != current; i++) {
      current = inner;
    }
    return current;
  }
}
