package dev.idem.spring.internal;

import dev.idem.core.IdemListener;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.spring.Idempotent;
import java.sql.Connection;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The one place {@code IdempotentMethodInterceptor} touches spring-jdbc and spring-tx; loaded only
 * when both are on the class path. Stateless.
 */
public final class SpringTransactions {

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
  public static TransactionalIdempotency engine(JdbcIdempotency keys, DataSource dataSource, BeanFactory beans, IdemListener listener) {
    return new TransactionalIdempotency(keys, new SpringTransactionRunner(dataSource, () -> beans.getBean(PlatformTransactionManager.class)),
        listener);
  }

  /**
   * The transactional engine of an idempotent consumer: each message one transaction of the
   * application's unique transaction manager on {@code dataSource}, so that the handler's writes
   * through Spring's beans join the transaction that records the message's key. Duplicates of a
   * message being handled are answered in progress at once (the broker redelivers). Its attempts
   * are told to the application's unique {@link IdemListener} bean (observations and counters).
   *
   * @param consumer the consumer's name, for the messages
   * @param keys the key table's engine, never {@code null}
   * @param dataSource the application's DataSource, never {@code null}
   * @param beans where the transaction manager is found, never {@code null}
   * @throws IllegalStateException if there is no single transaction manager, or it runs its
   *     transactions on another DataSource (the handler's writes would commit apart from the key)
   */
  public static TransactionalIdempotency consumerEngine(String consumer, JdbcIdempotency keys, DataSource dataSource,
      ListableBeanFactory beans) {
    PlatformTransactionManager tm = beans.getBeanProvider(PlatformTransactionManager.class).getIfUnique();
    if (tm == null) {
      throw new IllegalStateException("the transactional idempotent consumer '" + consumer + "' runs each message in a Spring"
          + " transaction, and the application has no single PlatformTransactionManager: add spring-boot-starter-jdbc (or"
          + " mark one transaction manager @Primary), or use a lease-mode consumer");
    }
    DataSource managed = ModeDecisions.managedDataSource(tm, beans.getBeanProvider(ModeDecisions.JpaDataSource.class).getIfAvailable());
    if (managed != null && ModeDecisions.unwrap(managed) != ModeDecisions.unwrap(dataSource)) {
      throw new IllegalStateException("the transactional idempotent consumer '" + consumer + "' records its keys in the"
          + " application's DataSource, but the transaction manager " + tm.getClass().getSimpleName() + " runs on another"
          + " DataSource: the handler's writes through Spring would commit apart from the message's key. Mark the DataSource"
          + " of the handler's writes and its transaction manager @Primary, or use a lease-mode consumer");
    }
    // the application's listener (observations, counters), as every other engine of the starter has
    IdemListener listener = beans.getBeanProvider(IdemListener.class).getIfUnique(() -> IdemListener.NONE);
    return new TransactionalIdempotency(keys, new SpringTransactionRunner(dataSource, () -> tm), listener);
  }

  /** @return whether a Spring transaction is open on this thread */
  public static boolean active() {
    return TransactionSynchronizationManager.isActualTransactionActive();
  }

  /**
   * @param dataSource the application's DataSource, never {@code null}
   * @return the connection of the Spring transaction open on this thread, or {@code null} when no
   *     transaction is active
   */
  public static Connection connectionOfCurrentTransaction(DataSource dataSource) {
    return TransactionSynchronizationManager.isActualTransactionActive() ? DataSourceUtils.getConnection(dataSource) : null;
  }
}
