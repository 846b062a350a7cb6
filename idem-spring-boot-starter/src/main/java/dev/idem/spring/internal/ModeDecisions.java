package dev.idem.spring.internal;

import dev.idem.core.IdemListener;
import dev.idem.core.InProgressPolicy;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.transaction.IdemTransactionalAutoConfiguration;
import java.util.Arrays;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.ResourceTransactionManager;

/**
 * Decides the filter's {@link ModeDecision} from {@code idem.mode} and the application's beans
 * (see {@link IdemProperties.Mode#AUTO}). Loaded only with spring-jdbc and spring-tx on the class
 * path; without them the mode is lease, or the start-up fails for {@code idem.mode=transactional}.
 * Stateless.
 *
 * <p>Transactional mode is chosen only when the key table and the handler's writes are sure to
 * share one transaction: the DataSource is the unique (or {@code @Primary}) one, and the unique (or
 * {@code @Primary}) transaction manager manages that DataSource ({@link
 * DataSourceTransactionManager}, {@code JdbcTransactionManager}, or JPA's {@code
 * JpaTransactionManager}, read through {@link JpaDataSource}, a bean only with spring-orm). Lease mode would let a handler's committed write survive a failed
 * request and run again on the retry, so {@code auto} falls back to it only where there is no
 * transaction to join at all; where the choice is ambiguous it refuses to start and says what to
 * set.
 */
public final class ModeDecisions {

  public static final String TRANSACTION_MANAGER = "org.springframework.transaction.PlatformTransactionManager";

  public static final String DATA_SOURCE_UTILS = "org.springframework.jdbc.datasource.DataSourceUtils";


  /** Why transactional mode cannot run without spring-jdbc and spring-tx, and what to add. */
  public static final String TRANSACTIONAL_NEEDS_SPRING_JDBC = "transactional runs each request in a Spring transaction on the"
      + " application's DataSource and needs spring-jdbc and spring-tx on the class path: add spring-boot-starter-jdbc"
      + " (it brings both, the DataSource and its transaction manager), or set idem.mode=lease";


  /**
   * The filter's mode without spring-jdbc and spring-tx, that is without a {@link ModeDecision}
   * bean: lease, or a refusal for {@code idem.mode=transactional}.
   *
   * @throws IdemConfigurationException ({@code idem.mode}) for {@code idem.mode=transactional}
   */
  public static ModeDecision withoutSpringJdbc(IdemProperties p) {
    if (p.getMode() == IdemProperties.Mode.TRANSACTIONAL) {
      throw new IdemConfigurationException("idem.mode", TRANSACTIONAL_NEEDS_SPRING_JDBC, null);
    }
    return ModeDecision.lease(p.getMode() == IdemProperties.Mode.LEASE ? "idem.mode=lease"
        : "auto: spring-jdbc and spring-tx are not on the class path, so there is no transaction to join");
  }


  private ModeDecisions() {}

  /**
   * The DataSource of JPA's transaction manager; a bean only with spring-orm on the class path
   * ({@link IdemTransactionalAutoConfiguration}), so that nothing else touches spring-orm's types.
   */
  public interface JpaDataSource {
    /** @return the DataSource {@code tm} runs on if it is JPA's transaction manager, else {@code null} */
    DataSource of(PlatformTransactionManager tm);
  }

  /**
   * @param beans the application's beans, to count DataSources and transaction managers
   * @param p the properties
   * @param own the application's own {@link TransactionalIdempotency} bean, or {@code null}
   * @param keys the key table's engine, or {@code null} when it was not created
   * @param dataSource the unique or primary DataSource, or {@code null}
   * @param transactionManager the unique or primary transaction manager, or {@code null}
   * @param listener told of every result
   * @param inProgress what a duplicate of a running request does ({@code idem.in-progress})
   * @param jpa JPA's transaction manager's DataSource, or {@code null} without spring-orm
   * @return the decision, never {@code null}
   * @throws IdemConfigurationException ({@code idem.mode}) when transactional mode was asked for and
   *     cannot run, or when {@code auto} cannot tell safely which mode fits
   */
  public static ModeDecision decide(ListableBeanFactory beans, IdemProperties p, TransactionalIdempotency own, JdbcIdempotency keys,
      DataSource dataSource, PlatformTransactionManager transactionManager, IdemListener listener, InProgressPolicy inProgress,
      JpaDataSource jpa) {
    IdemProperties.Mode asked = p.getMode() == null ? IdemProperties.Mode.AUTO : p.getMode();
    if (asked == IdemProperties.Mode.LEASE) {
      return ModeDecision.lease("idem.mode=lease");
    }
    boolean auto = asked == IdemProperties.Mode.AUTO;
    if (own != null) {
      return ModeDecision.transactional("the application's TransactionalIdempotency bean", own);
    }
    if (auto && p.getStore() != IdemProperties.StoreType.AUTO && p.getStore() != IdemProperties.StoreType.JDBC) {
      return ModeDecision.lease("auto: idem.store=" + p.getStore().name().toLowerCase(java.util.Locale.ROOT) + " keeps the keys outside the database");
    }
    String[] dataSources = beans.getBeanNamesForType(DataSource.class, true, false);
    String[] managers = beans.getBeanNamesForType(PlatformTransactionManager.class, true, false);
    if (auto && dataSources.length == 0) {
      return ModeDecision.lease("auto: the application has no DataSource");
    }
    if (auto && dataSource != null && managers.length == 0) {
      return ModeDecision.lease("auto: the application has a DataSource but no PlatformTransactionManager, so there is no transaction to join");
    }
    if (dataSource == null || transactionManager == null || keys == null) {
      String why = TransactionalRequirements.missing(beans, dataSource, transactionManager, keys);
      throw new IdemConfigurationException("idem.mode", auto ? "is auto, and the application has " + Arrays.toString(dataSources)
          + " DataSource bean(s) but Idem cannot run it in transactional mode: " + why : why, null);
    }
    DataSource managed = managedDataSource(transactionManager, jpa);
    String tmName = beanName(beans, PlatformTransactionManager.class, transactionManager);
    String dsName = beanName(beans, DataSource.class, dataSource);
    if (managed != null && unwrap(managed) != unwrap(dataSource)) {
      throw new IdemConfigurationException("idem.mode", "transactional mode needs the key table and the handler's writes in one"
          + " transaction, but the transaction manager '" + tmName + "' (" + transactionManager.getClass().getSimpleName()
          + ") manages DataSource '" + beanName(beans, DataSource.class, managed) + "' while the key table is in DataSource '"
          + dsName + "': a request's writes would commit apart from its key. Mark the DataSource of the handlers' writes"
          + " @Primary (and its transaction manager), or set idem.mode=lease" , null);
    }
    if (managed == null && auto) {
      throw new IdemConfigurationException("idem.mode", "is auto, and the transaction manager '" + tmName + "' ("
          + transactionManager.getClass().getName() + ") does not say which DataSource it manages, so Idem cannot tell whether"
          + " the key table in DataSource '" + dsName + "' commits with the handler's writes. Set idem.mode=transactional if"
          + " it does (a JTA transaction manager does), or idem.mode=lease", null);
    }
    String how = (auto ? "auto: " : "idem.mode=transactional: ") + "DataSource '" + dsName + "' with "
        + transactionManager.getClass().getSimpleName() + " '" + tmName + "'";
    return ModeDecision.transactional( how,
        new TransactionalIdempotency(keys, new SpringTransactionRunner(dataSource, () -> transactionManager), listener, inProgress));
  }

  /** @return the DataSource the transaction manager runs its transactions on, or {@code null} when it does not say */
  public static DataSource managedDataSource(PlatformTransactionManager tm, JpaDataSource jpa) {
    if (tm instanceof DataSourceTransactionManager jdbc) {
      return jdbc.getDataSource();
    }
    DataSource ofJpa = jpa == null ? null : jpa.of(tm);
    if (ofJpa != null) {
      return ofJpa;
    }
    if (tm instanceof ResourceTransactionManager resource && resource.getResourceFactory() instanceof DataSource ds) {
      return ds;
    }
    return null;
  }

  public static DataSource unwrap(DataSource ds) {
    DataSource current = ds;
    for (int i = 0; i < 16 && current instanceof DelegatingDataSource delegating && delegating.getTargetDataSource() != null; i++) {
      current = delegating.getTargetDataSource();
    }
    return current;
  }

  private static String beanName(ListableBeanFactory beans, Class<?> type, Object instance) {
    for (String name : beans.getBeanNamesForType(type, true, false)) {
      try {
        if (beans.getBean(name) == instance) {
          return name;
        }
      } catch (RuntimeException ignored) {
        // a bean that cannot be created now is not this one
      }
    }
    return Objects.toString(instance);
  }
}
