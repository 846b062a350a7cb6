package dev.idem.testkit;

import dev.idem.jdbc.Dialect;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Key tables as a user or an earlier version could have made them, whose {@code idem_key} compares
 * loosely, for {@link TransactionalContract}'s check that Idem refuses them. Data of the test, not
 * of the library: the library only checks tables, it never makes a loose one. Stateless and
 * thread-safe.
 */
final class LooseKeyTables {

  /** Per dialect ({@link Dialect#name()}); {@code #TABLE#} stands for the table's name. */
  private static final Map<String, String> BY_DIALECT = Map.of(
      // the schema shipped before keys compared byte for byte
      "MYSQL", "CREATE TABLE #TABLE# (principal VARCHAR(200) NOT NULL, operation VARCHAR(200) NOT NULL,"
          + " idem_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,"
          + " fingerprint CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, state VARCHAR(16) NOT NULL,"
          + " owner_token VARCHAR(64), lease_until BIGINT, status INT, response LONGBLOB, created_at BIGINT NOT NULL,"
          + " expires_at BIGINT NOT NULL, PRIMARY KEY (principal, operation, idem_key))"
          + " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
      "POSTGRESQL", "CREATE TABLE #TABLE# (principal VARCHAR(200) NOT NULL, operation VARCHAR(200) NOT NULL,"
          + " idem_key CHAR(255) NOT NULL, fingerprint CHAR(64) NOT NULL, state VARCHAR(16) NOT NULL, owner_token VARCHAR(64),"
          + " lease_until BIGINT, status INTEGER, response BYTEA, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,"
          + " PRIMARY KEY (principal, operation, idem_key))",
      "SQLITE", "CREATE TABLE #TABLE# (principal TEXT NOT NULL, operation TEXT NOT NULL,"
          + " idem_key TEXT COLLATE RTRIM NOT NULL, fingerprint TEXT NOT NULL, state TEXT NOT NULL, owner_token TEXT,"
          + " lease_until INTEGER, status INTEGER, response BLOB, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,"
          + " PRIMARY KEY (principal, operation, idem_key)) WITHOUT ROWID",
      "H2", "CREATE TABLE #TABLE# (principal VARCHAR(200) NOT NULL, operation VARCHAR(200) NOT NULL,"
          + " idem_key VARCHAR_IGNORECASE(255) NOT NULL, fingerprint CHAR(64) NOT NULL, state VARCHAR(16) NOT NULL,"
          + " owner_token VARCHAR(64), lease_until BIGINT, status INTEGER, response VARBINARY, created_at BIGINT NOT NULL,"
          + " expires_at BIGINT NOT NULL, PRIMARY KEY (principal, operation, idem_key))");

  private LooseKeyTables() {}

  /**
   * @param dialect the database
   * @return its loose key table's {@code CREATE TABLE}, with {@code #TABLE#} for the table's name,
   *     or {@code null} when none is known for that database
   */
  static @Nullable String of(Dialect dialect) {
    return BY_DIALECT.get(dialect.name());
  }
}
