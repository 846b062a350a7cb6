package dev.idem.servlet;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.InProgressPolicy;
import dev.idem.jdbc.DataSourceTransactionRunner;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Transactional mode for {@link dev.idem.testkit.conformance.AnyonceConformance} as the Spring Boot starter builds it by default
 * ({@code IdemTransactionalAutoConfiguration}): the key table created at start-up, a claim that waits
 * 10 ms for a concurrent attempt's row ({@code claimLockWait}), the key-last strategy, fail-fast
 * duplicates, retention 24 h; for a vector that requires {@code short-ttl}, the shortest retention
 * the engine accepts, 1 s.
 */
final class TransactionalConformance implements ServletConformance.Engines {

  /** The starter's {@code IdemTransactionalAutoConfiguration.CLAIM_LOCK_WAIT}. */
  static final Duration CLAIM_LOCK_WAIT = Duration.ofMillis(10);

  private final DataSource dataSource;

  TransactionalConformance(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  @Override
  public IdempotencyEngine engine(Set<String> requires) {
    JdbcIdempotency.Builder b = JdbcIdempotency.builder().createSchema(true).claimLockWait(CLAIM_LOCK_WAIT)
        .strategy(JdbcIdempotency.Strategy.KEY_LAST);
    if (requires.contains("short-ttl")) {
      b.retention(Duration.ofSeconds(1));
    }
    JdbcIdempotency keys = b.build();
    try (Connection c = dataSource.getConnection()) {
      keys.createSchema(c);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create the key table", e);
    }
    return new TransactionalIdempotency(keys, new DataSourceTransactionRunner(dataSource), IdemListener.NONE,
        InProgressPolicy.failFast());
  }
}
