package dev.idem.spring.internal;

import dev.idem.jdbc.JdbcIdempotency;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Why {@code idem.mode=transactional} cannot start: names only the beans that are missing or
 * ambiguous, never one that is there. Loaded only with spring-jdbc and spring-tx.
 */
public final class TransactionalRequirements {

  private TransactionalRequirements() {}

  /**
   * @param beans the application's beans
   * @param dataSource the unique DataSource, or {@code null}
   * @param transactionManager the unique transaction manager, or {@code null}
   * @param engine the unique JdbcIdempotency, or {@code null}
   * @return the message: what transactional mode needs, and each missing or ambiguous bean
   */
  public static String missing(ListableBeanFactory beans, DataSource dataSource,
      PlatformTransactionManager transactionManager, JdbcIdempotency engine) {
    List<String> problems = new ArrayList<>();
    if (dataSource == null) {
      problems.add(absentOrAmbiguous(beans, DataSource.class,
          "there is no DataSource bean (spring-boot-starter-jdbc configures one from spring.datasource.url and a JDBC driver)"));
    }
    if (transactionManager == null) {
      problems.add(absentOrAmbiguous(beans, PlatformTransactionManager.class,
          "there is no PlatformTransactionManager bean (spring-boot-starter-jdbc configures a DataSourceTransactionManager"
              + " for a single DataSource when the application declares none)"));
    }
    if (engine == null && dataSource != null) {
      problems.add(absentOrAmbiguous(beans, JdbcIdempotency.class,
          "the JdbcIdempotency bean could not be created because no DataSource bean was defined yet when Idem's"
              + " auto-configuration ran: the DataSource comes from a configuration ordered after"
              + " dev.idem.spring.IdemAutoConfiguration; declare it in one of the application's @Configuration classes, or"
              + " order that auto-configuration before Idem's"));
    }
    return "transactional runs each request in a transaction of the application's DataSource, and "
        + String.join("; ", problems) + " (or set idem.mode=lease)";
  }

  private static String absentOrAmbiguous(ListableBeanFactory beans, Class<?> type, String absent) {
    String[] names = beans.getBeanNamesForType(type, true, false);
    if (names.length <= 1) {
      return absent;
    }
    return "there are " + names.length + " " + type.getSimpleName() + " beans " + Arrays.toString(names)
        + " and none is @Primary: mark the one for the idempotency table @Primary";
  }
}
