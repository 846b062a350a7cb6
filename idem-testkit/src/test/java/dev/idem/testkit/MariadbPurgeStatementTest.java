package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.dialect.MysqlDialect;
import dev.idem.lab.jdbc.JdbcTarget;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Regression: MariaDB's purge from the last batch's expiry ({@code KeyTableSql#purgeFrom}) was
 * written but never sent: {@code purgeExpired} took the MySQL dialect's statements without asking
 * the server, and so deleted each batch from the front of the expiry index, on MariaDB too. The
 * purge must send MariaDB's statement, through either driver.
 */
class MariadbPurgeStatementTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Test
  void thePurgeSendsMariadbsStatementFromTheLastBatchsExpiry() throws Exception {
    assertPurgeSendsMariadbsStatement(DB.target());
  }

  @Test
  void thePurgeSendsMariadbsStatementThroughMysqlConnectorJ() throws Exception {
    assertPurgeSendsMariadbsStatement(MysqlConnectorJ.target(DB));
  }

  private static void assertPurgeSendsMariadbsStatement(JdbcTarget target) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().build();
    List<String> prepared = new CopyOnWriteArrayList<>();
    try (Connection real = target.open()) {
      idem.createSchema(real);
      Connection recording = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> {
            if (method.getName().equals("prepareStatement")) {
              prepared.add((String) args[0]);
            }
            try {
              return method.invoke(real, args);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          });
      assertThat(idem.purgeExpired(recording, 10)).isZero();
    }
    String mariadbs = MysqlDialect.INSTANCE.mariadbKeyTableSql(idem.table()).purgeFrom;
    assertThat(mariadbs).contains("RETURNING");
    assertThat(prepared).contains(mariadbs);
  }
}
