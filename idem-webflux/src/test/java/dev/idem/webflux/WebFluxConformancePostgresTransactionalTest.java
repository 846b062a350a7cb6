package dev.idem.webflux;

import dev.idem.r2dbc.R2dbcTransactionalIdempotency;
import dev.idem.r2dbc.R2dbcTransactions;
import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The conformance vectors in transactional mode on R2DBC (PostgreSQL, a database of its own), as
 * the starter builds it with only {@code idem.principal} set: fail-fast duplicates, retention 24 h;
 * {@code short-ttl}: retention 1 s. Idem's own transactions ({@link R2dbcTransactions#of}): the
 * fixture's handlers write nothing, so the Spring transaction the starter uses would add nothing
 * here (the starter's tests run it).
 */
class WebFluxConformancePostgresTransactionalTest extends WebFluxConformanceContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  private static ConnectionPool pool;

  @BeforeAll
  static void open() {
    pool = new ConnectionPool(ConnectionPoolConfiguration.builder(ConnectionFactories.get(DB.r2dbcUrl()))
        .initialSize(4).maxSize(10).maxAcquireTime(Duration.ofSeconds(30)).build());
  }

  @AfterAll
  static void close() {
    if (pool != null) {
      pool.dispose();
    }
  }

  @Override
  protected IdempotencyWebFilterConfig.Builder config(Set<String> requires) {
    R2dbcTransactionalIdempotency.Builder b = R2dbcTransactionalIdempotency.builder(pool);
    if (requires.contains("short-ttl")) {
      b.retention(Duration.ofSeconds(1));
    }
    R2dbcTransactionalIdempotency engine = b.build();
    // as at an application's start-up: the first request does not pay for the table (a vector that
    // races two requests expects the first sent to claim first)
    engine.createSchema().block(Duration.ofSeconds(30));
    R2dbcTransactions transactions = R2dbcTransactions.of(pool);
    return IdempotencyWebFilterConfig.builder(TransactionalEngine.of(
        (request, handler) -> engine.execute(transactions, request, connection -> handler), engine.listener()));
  }
}
