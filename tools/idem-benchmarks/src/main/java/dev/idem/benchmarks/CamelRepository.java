package dev.idem.benchmarks;

import java.sql.Connection;
import java.sql.SQLException;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;

/**
 * The peer: Apache Camel's JdbcMessageIdRepository (camel-sql), as Camel's idempotent consumer
 * uses it: {@code add(key)} (its own transaction: SELECT COUNT, INSERT if absent, commit) and, if
 * the key was new, the same effect INSERT in auto-commit afterwards. Camel's own table DDL.
 */
final class CamelRepository extends EffectRows {
  private static final String TABLE = "bench_camel";

  CamelRepository(SqlBackend db) {
    super(db, Workloads.CAMEL, "bench_camel_fx");
  }

  @Override
  public void setUp() throws SQLException {
    effects.recreate(false);
    db.execute("DROP TABLE IF EXISTS " + TABLE);
    db.execute(new JdbcMessageIdRepository().getCreateString().replace("CAMEL_MESSAGEPROCESSED", TABLE));
  }

  @Override
  public Client client() throws SQLException {
    Connection c = db.openForCamel();
    JdbcMessageIdRepository repository = new JdbcMessageIdRepository(new OneConnectionDataSource(c), "bench");
    repository.setTableName(TABLE);
    repository.setCreateTableIfNotExists(false);
    repository.start();
    return new SqlClient(c) {
      @Override
      public void run(String key) throws SQLException {
        if (repository.add(key)) {
          effects.insert(connection, key);
        }
      }

      @Override
      public void close() throws SQLException {
        try {
          repository.stop();
        } finally {
          super.close();
        }
      }
    };
  }
}
