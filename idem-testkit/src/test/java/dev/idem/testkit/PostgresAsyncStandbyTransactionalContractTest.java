package dev.idem.testkit;

import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contract on a PostgreSQL primary with an asynchronous standby (streaming replication,
 * {@code synchronous_standby_names} empty), through a URL that
 * names both servers with {@code targetServerType=primary} ({@link PostgresStandbyTestServers}).
 */
class PostgresAsyncStandbyTransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final PostgresStandbyTestServers PG = PostgresStandbyTestServers.asynchronous();

  @Override
  protected JdbcTarget target() {
    return PG.target();
  }
}
