package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contracts on a PostgreSQL primary whose standby acknowledges every commit
 * ({@code synchronous_commit = on}, {@code synchronous_standby_names = '*'}), through a URL that
 * names both servers with {@code targetServerType=primary} ({@link PostgresStandbyTestServers}).
 */
class PostgresSyncStandbyTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final PostgresStandbyTestServers PG = PostgresStandbyTestServers.synchronous();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(PG.target());
  }
}
