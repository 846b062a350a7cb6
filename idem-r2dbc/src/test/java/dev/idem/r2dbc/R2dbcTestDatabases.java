package dev.idem.r2dbc;

import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * R2DBC connections to a {@link TestDatabase}'s database (made with a unique name and dropped by
 * the extension, which also skips the class visibly without the server and fails under CI=true),
 * at its {@link TestDatabase#r2dbcUrl()}.
 */
final class R2dbcTestDatabases {

  private R2dbcTestDatabases() {}

  /** @return a factory that opens a new connection per {@code create()} */
  static ConnectionFactory factory(TestDatabase db) {
    String url = db.url();
    if (url.startsWith("jdbc:mariadb:")) {
      driverStartup();
    }
    return ConnectionFactories.get(db.r2dbcUrl());
  }

  /**
   * r2dbc-mariadb reads its version from a properties file in its jar when its first connection
   * starts, on the event loop, in a class initialiser: done here first, on the test's thread, so
   * that BlockHound (which fails any blocking call on an event loop) sees only what runs per
   * operation. Nothing of Idem's blocks.
   */
  private static void driverStartup() {
    try {
      Class.forName("org.mariadb.r2dbc.util.VersionFactory$VersionFactoryHolder", true, R2dbcTestDatabases.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("r2dbc-mariadb changed: " + e.getMessage(), e);
    }
  }

  /** @return a pool of at most {@code maxSize} connections; dispose it when the class ends */
  static ConnectionPool pool(TestDatabase db, int maxSize) {
    return new ConnectionPool(ConnectionPoolConfiguration.builder(factory(db))
        .initialSize(0)
        .maxSize(maxSize)
        .maxAcquireTime(Duration.ofSeconds(30))
        .build());
  }

  /**
   * Opens {@code n} of the pool's connections at once and gives them back, so that a test's
   * concurrent work starts on open connections, at the same moment, rather than one connection
   * set-up apart.
   */
  static void warm(ConnectionPool pool, int n) {
    Flux.range(0, n)
        .flatMap(i -> Mono.from(pool.create()))
        .collectList()
        .flatMap(connections -> Flux.fromIterable(connections).concatMap(c -> Mono.from(c.close())).then())
        .block(Duration.ofSeconds(30));
  }
}
