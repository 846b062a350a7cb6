package dev.idem.spring;

import dev.idem.core.IdemListener;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import java.sql.Connection;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The one place {@link IdempotentMethodInterceptor} touches spring-jdbc and spring-tx; loaded only
 * when both are on the class path. Stateless.
 */
final class SpringTransactions {

  private SpringTransactions() {}

  /**
   * The transactional engine for {@link Idempotent} methods, which join the caller's transaction
   * ({@link TransactionalIdempotency#attemptIn}); its own transactions, if ever asked for, run on the
   * application's unique transaction manager, looked up then.
   *
   * @param keys the key table's engine, never {@code null}
   * @param dataSource the application's DataSource, never {@code null}
   * @param beans where the transaction manager is looked up, never {@code null}
   * @param listener told of every result, never {@code null}
   */
  static TransactionalIdempotency engine(JdbcIdempotency keys, DataSource dataSource, BeanFactory beans, IdemListener listener) {
    return new TransactionalIdempotency(keys, new SpringTransactionRunner(dataSource, () -> beans.getBean(PlatformTransactionManager.class)),
        listener);
  }

  /**
   * @param dataSource the application's DataSource, never {@code null}
   * @return the connection of the Spring transaction open on this thread, or {@code null} when no
   *     transaction is active
   */
  static Connection connectionOfCurrentTransaction(DataSource dataSource) {
    return TransactionSynchronizationManager.isActualTransactionActive() ? DataSourceUtils.getConnection(dataSource) : null;
  }
}
