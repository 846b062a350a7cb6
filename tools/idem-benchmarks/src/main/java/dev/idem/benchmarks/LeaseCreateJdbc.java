package dev.idem.benchmarks;

import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import java.sql.Connection;
import java.sql.SQLException;

/** Idem lease mode over JdbcLeaseStore: claim, effect (an in-memory counter), complete. */
final class LeaseCreateJdbc implements Workload {
  private final SqlBackend db;
  private final Counter counter = new Counter();

  LeaseCreateJdbc(SqlBackend db) {
    this.db = db;
  }

  @Override
  public String id() {
    return Workloads.LEASE_CREATE;
  }

  @Override
  public void setUp() throws SQLException {
    Workloads.recreateKeyTable(db, "bench_lease");
    counter.clear();
  }

  @Override
  public Client client() throws SQLException {
    Connection c = db.open();
    JdbcLeaseStore store = JdbcLeaseStore.builder(new OneConnectionDataSource(c))
        .table("bench_lease")
        .createSchema(false)
        .build();
    LeaseIdempotency engine = LeaseIdempotency.builder(store).inProgress(InProgressPolicy.waitUpTo(Workloads.LEASE_WAIT)).build();
    return new SqlClient(c) {
      @Override
      public void run(String key) {
        engine.execute(Requests.request(key), ctx -> counter.effect(key));
      }
    };
  }

  @Override
  public long[] effects() {
    return counter.count();
  }
}
