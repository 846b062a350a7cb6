package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;

/**
 * The SQL databases Idem's JDBC store supports, and how each one serializes duplicate claims.
 *
 * <ul>
 *   <li>{@link #SQLITE}: one writer at a time. Idem opens its own transactions with {@code BEGIN
 *       IMMEDIATE}, so the write lock is taken before the claim is read, and a duplicate waits on
 *       the connection's {@code busy_timeout}. Use WAL ({@code journal_mode=WAL}) so readers do not
 *       block the writer.
 *   <li>{@link #POSTGRESQL}: {@code INSERT ... ON CONFLICT} on the primary key (principal,
 *       operation, key). A concurrent duplicate blocks on the unique index until the first
 *       transaction ends, then sees its committed row and replays it (or, if it rolled back,
 *       claims the key itself). Run at READ COMMITTED, PostgreSQL's default.
 *   <li>{@link #MYSQL}: an {@code INSERT IGNORE} on the primary key. InnoDB makes a concurrent
 *       duplicate wait on the key's lock until the first transaction ends; it then inserts no row
 *       (a note, not an error: MariaDB Connector/J logs every server error at WARN, and a
 *       duplicate-key error's text holds the principal and the key), and Idem reads the winner's
 *       row with a locking read ({@code LOCK IN SHARE MODE}) and replays it. An expired row is
 *       taken over with a conditional {@code UPDATE}. Table DDL commits implicitly on MySQL, so
 *       inside a caller's transaction the table must already exist.
 * </ul>
 *
 * <p>That is transactional mode ({@link JdbcIdempotency}). Lease mode ({@link JdbcLeaseStore})
 * opens no transaction: each of its writes is one conditional statement that repeats, in its
 * {@code WHERE}, what the plain read before it saw, so the database's row lock on that one
 * statement serializes racers on every dialect alike.
 *
 * <p>Stateless and thread-safe.
 */
public enum Dialect {
  /** SQLite 3.35 or later (upsert, {@code unixepoch('subsec')} needs 3.42), via sqlite-jdbc. */
  SQLITE("sqlite.sql", "CAST(unixepoch('subsec') * 1000 AS INTEGER)"),
  /** PostgreSQL 11 or later, via pgjdbc. */
  POSTGRESQL("postgresql.sql", "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"),
  /**
   * MySQL 8 and MariaDB 10.5 or later, InnoDB, via MariaDB Connector/J or MySQL Connector/J. The
   * clock is {@code UTC_TIMESTAMP(3)} counted from the epoch with {@code TIMESTAMPDIFF}, pure
   * arithmetic on a UTC datetime: {@code UNIX_TIMESTAMP(NOW(3))} reads the session's local time
   * back through its time zone, which in the hour a daylight-saving zone repeats each autumn is
   * ambiguous and can come out an hour early or late, enough to take over a lease that still runs.
   */
  MYSQL("mysql.sql", "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)");

  private final String schemaResource;
  private final String nowMillis;

  Dialect(String schemaFile, String nowMillis) {
    this.schemaResource = "/dev/idem/jdbc/schema/" + schemaFile;
    this.nowMillis = nowMillis;
  }

  /**
   * The dialects of the JDBC drivers' own connection classes, decided once per class by its
   * package: a driver's connection class speaks to one kind of database.
   */
  private static final ClassValue<Dialect> BY_DRIVER_CLASS = new ClassValue<>() {
    @Override
    protected Dialect computeValue(Class<?> type) {
      String name = type.getName();
      if (name.startsWith("org.sqlite.")) {
        return SQLITE;
      }
      if (name.startsWith("org.postgresql.")) {
        return POSTGRESQL;
      }
      if (name.startsWith("org.mariadb.jdbc.") || name.startsWith("com.mysql.")) {
        return MYSQL;
      }
      return null;
    }
  };

  /**
   * The dialect of {@code connection}, decided once per driver connection class: for a connection
   * of sqlite-jdbc, pgjdbc, MariaDB Connector/J or MySQL Connector/J, or a pool's proxy that
   * unwraps to one ({@link Connection#unwrap}, as HikariCP's does), by the driver's class without
   * asking the connection anything; for any other connection, as {@link #detect(Connection)}.
   *
   * @param connection an open connection, never {@code null}
   * @return the dialect
   * @throws IdemStoreException if the database is not supported or its metadata cannot be read
   */
  public static Dialect of(Connection connection) {
    Dialect known = BY_DRIVER_CLASS.get(connection.getClass());
    if (known != null) {
      return known;
    }
    try {
      if (connection.isWrapperFor(Connection.class)) {
        Connection inner = connection.unwrap(Connection.class);
        if (inner != null && inner != connection) {
          known = BY_DRIVER_CLASS.get(inner.getClass());
          if (known != null) {
            return known;
          }
        }
      }
    } catch (SQLException e) {
      // not unwrappable: ask the connection itself
    }
    return detect(connection);
  }

  /**
   * Detects the dialect from {@link java.sql.DatabaseMetaData#getDatabaseProductName()}, every time
   * it is called ({@link #of(Connection)} decides once per driver class).
   *
   * @param connection an open connection, never {@code null}
   * @return the dialect
   * @throws IdemStoreException if the database is not supported or its metadata cannot be read
   */
  public static Dialect detect(Connection connection) {
    String product;
    try {
      product = connection.getMetaData().getDatabaseProductName();
    } catch (SQLException e) {
      throw new IdemStoreException("cannot read the database product name: " + e.getMessage(), e);
    }
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    if (p.contains("sqlite")) {
      return SQLITE;
    }
    if (p.contains("postgresql")) {
      return POSTGRESQL;
    }
    if (p.contains("mysql") || p.contains("mariadb")) {
      return MYSQL;
    }
    throw new IdemStoreException(
        "unsupported database '" + product + "': Idem's JDBC store supports SQLite, PostgreSQL, MySQL and MariaDB", null);
  }

  /**
   * @return the class-path resource of this dialect's schema file, with the table named {@code
   *     idem_keys}; for example {@code /dev/idem/jdbc/schema/postgresql.sql}
   */
  public String schemaResource() {
    return schemaResource;
  }

  /**
   * @return an SQL expression for the database's current time in milliseconds since the Unix
   *     epoch: the store's clock, the only one Idem uses to judge leases and expiry
   */
  public String nowMillis() {
    return nowMillis;
  }

  /**
   * Whether {@code e} reports a duplicate key on this database (a primary key or unique constraint
   * violation), decided by SQLState or vendor code, never by message text alone, which servers
   * translate (MySQL's {@code lc_messages}):
   *
   * <ul>
   *   <li>SQLite: {@code SQLITE_CONSTRAINT_PRIMARYKEY} (1555) or {@code SQLITE_CONSTRAINT_UNIQUE}
   *       (2067). sqlite-jdbc reports the primary code, 19, for every constraint (a NOT NULL too)
   *       unless extended result codes are on; the extended code is then the name that starts its
   *       message (SQLite's messages are never translated).
   *   <li>PostgreSQL: SQLState {@code 23505} ({@code unique_violation}).
   *   <li>MySQL and MariaDB: {@code ER_DUP_ENTRY} (1062), {@code ER_DUP_ENTRY_WITH_KEY_NAME} (1586)
   *       or {@code ER_DUP_KEY} (1022). Their SQLState, 23000, is shared with every other integrity
   *       violation (a NULL into NOT NULL is 1048, a foreign key 1452).
   * </ul>
   *
   * @param e a failure of a statement run on this dialect's database, never {@code null}
   * @return {@code true} only for a duplicate key; {@code false} for every other failure,
   *     including other constraint violations. Thread-safe.
   */
  public boolean isDuplicateKey(SQLException e) {
    switch (this) {
      case SQLITE: {
        int code = e.getErrorCode();
        String message = String.valueOf(e.getMessage());
        return code == 1555 || code == 2067
            || message.startsWith("[SQLITE_CONSTRAINT_PRIMARYKEY]") || message.startsWith("[SQLITE_CONSTRAINT_UNIQUE]");
      }
      case POSTGRESQL:
        return "23505".equals(e.getSQLState());
      case MYSQL: {
        int code = e.getErrorCode();
        return code == 1062 || code == 1586 || code == 1022;
      }
      default:
        throw new AssertionError(this);
    }
  }
}
