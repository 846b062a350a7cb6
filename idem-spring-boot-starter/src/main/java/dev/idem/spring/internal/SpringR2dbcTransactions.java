package dev.idem.spring.internal;

import dev.idem.r2dbc.R2dbcTransactions;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Predicate;
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

  @Override
  public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
    return operator.execute(status -> ConnectionFactoryUtils.getConnection(factory)
            .flatMap(work)
            .doOnNext(value -> {
              if (!commit.test(value)) {
                status.setRollbackOnly();
              }
            }))
        .singleOrEmpty();
  }
}
