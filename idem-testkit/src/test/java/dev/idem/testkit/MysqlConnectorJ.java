package dev.idem.testkit;

import dev.idem.lab.jdbc.JdbcTarget;

/**
 * MySQL Connector/J, the other driver Idem's MySQL dialect names, to a MariaDB test database: the
 * dialect sends MariaDB's statements to a MariaDB server whichever driver carries them, and the
 * two drivers differ in what they accept and report (Connector/J refuses a {@code DELETE ...
 * RETURNING} in {@code executeQuery}; it reports a transaction begun with SQL through another API).
 */
final class MysqlConnectorJ {

  private MysqlConnectorJ() {}

  /**
   * @param db a {@link TestDatabase#mariadb()} extension that has run
   * @return its database through Connector/J: {@code jdbc:mariadb://host:port/db?user=u} as {@code
   *     jdbc:mysql://...}, without TLS (the test server has none)
   */
  static JdbcTarget target(TestDatabase db) {
    String url = db.url().replaceFirst("^jdbc:mariadb:", "jdbc:mysql:");
    return JdbcTarget.of(url + (url.contains("?") ? "&" : "?") + "sslMode=DISABLED");
  }
}
