package dev.idem.testkit;

import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contract on a PostgreSQL primary whose standby acknowledges every commit
 * ({@code synchronous_commit = on}, {@code synchronous_standby_names = '*'}), through a URL that
 * names both servers with {@code targetServerType=primary} ({@link PostgresStandbyTestServers}).
 */
class PostgresSyncStandbyTransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final PostgresStandbyTestServers PG = PostgresStandbyTestServers.synchronous();

  @Override
  protected JdbcTarget target() {
    return PG.target();
  }
}
