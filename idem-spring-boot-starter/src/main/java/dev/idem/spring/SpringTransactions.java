package dev.idem.spring;

import java.sql.Connection;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The one place {@link IdempotentMethodInterceptor} touches spring-jdbc and spring-tx; loaded only
 * when both are on the class path. Stateless.
 */
final class SpringTransactions {

  private SpringTransactions() {}

  /**
   * @param dataSource the application's DataSource, never {@code null}
   * @return the connection of the Spring transaction open on this thread, or {@code null} when no
   *     transaction is active
   */
  static Connection connectionOfCurrentTransaction(DataSource dataSource) {
    return TransactionSynchronizationManager.isActualTransactionActive() ? DataSourceUtils.getConnection(dataSource) : null;
  }
}
