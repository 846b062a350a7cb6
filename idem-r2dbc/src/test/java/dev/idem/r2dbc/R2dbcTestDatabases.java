package dev.idem.r2dbc;

import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;

/**
 * R2DBC connections to a {@link TestDatabase}'s database (made with a unique name and dropped by
 * the extension, which also skips the class visibly without the server and fails under CI=true):
 * its JDBC URL, {@code jdbc:postgresql://host:port/name?user=...} or {@code jdbc:mariadb://...},
 * read as the R2DBC URL {@code r2dbc:postgresql://host:port/name?user=...}.
 */
final class R2dbcTestDatabases {

  private R2dbcTestDatabases() {}

  /** @return a factory that opens a new connection per {@code create()} */
  static ConnectionFactory factory(TestDatabase db) {
    String url = db.url();
    if (url.startsWith("jdbc:mariadb:")) {
      driverStartup();
    }
    if (!url.startsWith("jdbc:")) {
      throw new IllegalStateException("not a JDBC URL: " + url);
    }
    // R2DBC takes the user and password in the authority, not in the query string
    String rest = url.substring("jdbc:".length());
    int query = rest.indexOf('?');
    String base = query < 0 ? rest : rest.substring(0, query);
    String user = "";
    String password = "";
    StringBuilder options = new StringBuilder();
    if (query >= 0) {
      for (String pair : rest.substring(query + 1).split("&")) {
        if (pair.startsWith("user=")) {
          user = pair.substring("user=".length());
        } else if (pair.startsWith("password=")) {
          password = pair.substring("password=".length());
        } else if (!pair.isEmpty()) {
          options.append(options.length() == 0 ? "?" : "&").append(pair);
        }
      }
    }
    String credentials = user.isEmpty() ? "" : user + (password.isEmpty() ? "" : ":" + password) + "@";
    int hostStart = base.indexOf("//") + 2;
    return ConnectionFactories.get("r2dbc:" + base.substring(0, hostStart) + credentials + base.substring(hostStart) + options);
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
}
