package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contracts on a PostgreSQL primary with an asynchronous standby (streaming replication,
 * {@code synchronous_standby_names} empty), through a URL that
 * names both servers with {@code targetServerType=primary} ({@link PostgresStandbyTestServers}).
 */
class PostgresAsyncStandbyTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final PostgresStandbyTestServers PG = PostgresStandbyTestServers.asynchronous();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(PG.target());
  }
}
