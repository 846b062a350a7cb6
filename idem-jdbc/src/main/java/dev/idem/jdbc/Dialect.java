package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import dev.idem.jdbc.dialect.H2Dialect;
import dev.idem.jdbc.dialect.MysqlDialect;
import dev.idem.jdbc.dialect.PostgresqlDialect;
import dev.idem.jdbc.dialect.SqliteDialect;
import dev.idem.jdbc.dialect.KeyTableSql;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A SQL database Idem's JDBC store supports: one class per database ({@link SqliteDialect}, {@link
 * PostgresqlDialect}, {@link MysqlDialect}, {@link H2Dialect}, in the spirit of jdbi's
 * per-database plugins) holds everything that differs between them: the key table's statements and
 * schema, the check that an existing table compares identities byte for byte, how a transaction is
 * begun, how a claim's lock wait is bounded, and the traits that the engines and the test contracts
 * ask instead of comparing dialects.
 *
 * <p>How each one serializes duplicate claims:
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
 *   <li>{@link #H2}: H2 2.x with its default MVStore engine, in its native mode ({@code
 *       MODE=REGULAR}; the compatibility modes are not supported): a plain {@code INSERT}; a
 *       concurrent duplicate waits on the key's row lock until the first transaction ends, and
 *       its duplicate-key error then counts as "not inserted": Idem reads the winner's row under
 *       {@code FOR UPDATE} and replays it, as on MySQL. Table DDL commits implicitly here too.
 * </ul>
 *
 * <p>That is transactional mode ({@link JdbcIdempotency}). Lease mode ({@link JdbcLeaseStore})
 * opens no transaction: each of its writes is one conditional statement that repeats, in its
 * {@code WHERE}, what the plain read before it saw, so the database's row lock on that one
 * statement serializes racers on every dialect alike.
 *
 * <p>The instances are the constants below; they are stateless, immutable and thread-safe, and
 * compare by identity. The methods under "engine hooks" are what Idem's engines call; their types
 * in {@code dev.idem.jdbc.internal} are not public API, so implementing this interface outside Idem
 * is not supported (a new database is a new class in {@code dev.idem.jdbc.dialect}).
 */
public interface Dialect {

  /** SQLite 3.35 or later (upsert, {@code unixepoch('subsec')} needs 3.42), via sqlite-jdbc. */
  Dialect SQLITE = SqliteDialect.INSTANCE;

  /** PostgreSQL 11 or later, via pgjdbc. */
  Dialect POSTGRESQL = PostgresqlDialect.INSTANCE;

  /**
   * MySQL 8 and MariaDB 10.5 or later, InnoDB, via MariaDB Connector/J or MySQL Connector/J. The
   * clock is {@code UTC_TIMESTAMP(3)} counted from the epoch with {@code TIMESTAMPDIFF}, pure
   * arithmetic on a UTC datetime: {@code UNIX_TIMESTAMP(NOW(3))} reads the session's local time
   * back through its time zone, which in the hour a daylight-saving zone repeats each autumn is
   * ambiguous and can come out an hour early or late, enough to take over a lease that still runs.
   */
  Dialect MYSQL = MysqlDialect.INSTANCE;

  /** H2 2.x (2.2 or later), embedded or server, MVStore, native mode; see {@link H2Dialect}. */
  Dialect H2 = H2Dialect.INSTANCE;

  /** @return {@link #SQLITE} */
  static Dialect sqlite() {
    return SQLITE;
  }

  /** @return {@link #POSTGRESQL} */
  static Dialect postgresql() {
    return POSTGRESQL;
  }

  /** @return {@link #MYSQL}, for MySQL and MariaDB */
  static Dialect mysql() {
    return MYSQL;
  }

  /** @return {@link #H2} */
  static Dialect h2() {
    return H2;
  }

  /** @return every supported dialect, in a fixed order; never {@code null}, immutable */
  static List<Dialect> all() {
    return DialectDetection.ALL;
  }

  /**
   * The dialect of that {@link #name()}, as the enum this interface replaced answered it.
   *
   * @param name {@code SQLITE}, {@code POSTGRESQL}, {@code MYSQL} or {@code H2}, never {@code null}
   * @return the dialect, never {@code null}
   * @throws IllegalArgumentException if no dialect has that name
   */
  static Dialect valueOf(String name) {
    for (Dialect d : all()) {
      if (d.name().equals(name)) {
        return d;
      }
    }
    throw new IllegalArgumentException("no dialect named " + name);
  }

  /**
   * The dialect of {@code connection}, decided once per driver connection class: for a connection
   * of a driver a dialect {@linkplain #drivesConnectionClass claims}, or a pool's proxy that
   * unwraps to one ({@link Connection#unwrap}, as HikariCP's does), by the driver's class without
   * asking the connection anything; for any other connection, as {@link #detect(Connection)}.
   * Thread-safe.
   *
   * @param connection an open connection, never {@code null}
   * @return the dialect, never {@code null}
   * @throws IdemStoreException if the database is not supported or its metadata cannot be read
   */
  static Dialect of(Connection connection) {
    return DialectDetection.of(connection);
  }

  /**
   * Detects the dialect from {@link java.sql.DatabaseMetaData#getDatabaseProductName()}, every time
   * it is called ({@link #of(Connection)} decides once per driver class). Thread-safe.
   *
   * @param connection an open connection, never {@code null}
   * @return the dialect, never {@code null}
   * @throws IdemStoreException if the database is not supported or its metadata cannot be read
   */
  static Dialect detect(Connection connection) {
    return DialectDetection.detect(connection);
  }

  // ------------------------------------------------------------------ identity

  /** @return the dialect's constant name: {@code SQLITE}, {@code POSTGRESQL}, {@code MYSQL} or {@code H2} */
  String name();

  /**
   * @param connectionClass the name of a JDBC driver's own {@link Connection} class
   * @return whether that driver speaks to this dialect's database only
   */
  boolean drivesConnectionClass(String connectionClass);

  /**
   * @param product {@link java.sql.DatabaseMetaData#getDatabaseProductName()}, lower case
   * @return whether that product is this dialect's database
   */
  boolean isProduct(String product);

  /**
   * @return the class-path resource of this dialect's schema file, with the table named {@code
   *     idem_keys}; for example {@code /dev/idem/jdbc/schema/postgresql.sql}
   */
  String schemaResource();

  /**
   * @return an SQL expression for the database's current time in milliseconds since the Unix
   *     epoch: the store's clock, the only one Idem uses to judge leases and expiry
   */
  String nowMillis();

  // ------------------------------------------------------------------ errors

  /**
   * Whether {@code e} reports a duplicate key on this database (a primary key or unique constraint
   * violation), decided by SQLState or vendor code, never by message text alone where the server
   * translates it (MySQL's {@code lc_messages}). Thread-safe.
   *
   * @param e a failure of a statement run on this dialect's database, never {@code null}
   * @return {@code true} only for a duplicate key; {@code false} for every other failure,
   *     including other constraint violations
   */
  boolean isDuplicateKey(SQLException e);

  /**
   * @param e a failure, never {@code null}; its causes are searched too
   * @return whether it says a statement gave up waiting for another transaction's row lock past a
   *     bound ({@link #boundsClaimWait}, {@link #sessionLockWait}): PostgreSQL 55P03, MySQL and
   *     MariaDB 1205, H2 50200
   */
  boolean isLockWaitExceeded(SQLException e);

  // ------------------------------------------------------------------ traits

  /**
   * @return whether an SQL error aborts the whole transaction until a rollback (PostgreSQL's
   *     {@code in_failed_sql_transaction}): the engines then set a savepoint before the effect
   */
  boolean abortsTransactionOnError();

  /**
   * @return whether a transaction's reads before its first write may see a snapshot older than the
   *     latest commit, and a write takes the database's single write lock (SQLite): replays are
   *     then read on a connection in auto-commit mode, before any transaction
   */
  boolean readsReplaysOutsideTransactions();

  /** @return whether the database lets one writer at a time write (SQLite): writers queue */
  boolean serializesWriters();

  /**
   * @return whether a server of this dialect may be a node of a Galera cluster (MySQL, MariaDB),
   *     whose session settings {@link GaleraSettings} checks
   */
  boolean mayBeGaleraNode();

  /**
   * @return whether table DDL commits the open transaction (MySQL, MariaDB, H2): the key table is
   *     then never created inside a caller's transaction
   */
  boolean ddlCommitsTransaction();

  /**
   * Whether the connection's session is inside a transaction that its auto-commit flag does not
   * show: one a caller began with SQL ({@code BEGIN}, {@code START TRANSACTION}) on a connection in
   * auto-commit mode. The engines then join it as a caller's transaction instead of beginning their
   * own, which would commit the caller's work (MySQL's {@code START TRANSACTION} commits an open
   * transaction; PostgreSQL's commit would end the caller's block). As the driver knows it from the
   * server's last answer, without a round trip (pgjdbc, MariaDB Connector/J, MySQL Connector/J);
   * the default, for a driver that does not say, is {@code false}.
   *
   * @param connection an open connection in auto-commit mode, never {@code null}
   * @return whether it is known to be inside a transaction
   */
  default boolean inTransactionBegunBySql(java.sql.Connection connection) {
    return false;
  }

  /** @return whether {@code SELECT ... FOR UPDATE} locks rows (not on SQLite) */
  boolean supportsSelectForUpdate();

  /** @return whether a transaction can run at REPEATABLE READ (not on SQLite, serializable only) */
  boolean supportsRepeatableRead();

  /** @return whether {@code INSERT} and {@code UPDATE} take a {@code RETURNING} clause (PostgreSQL, SQLite) */
  boolean supportsReturning();

  /**
   * @return whether a schema ({@code CREATE SCHEMA}) is a separate database (MySQL, MariaDB), so
   *     that dropping it needs no {@code CASCADE}; {@code false} also where there are no schemas
   */
  boolean schemaIsDatabase();

  /** @return whether the database has schemas ({@code CREATE SCHEMA}) at all (not SQLite: one database per file) */
  boolean hasSchemas();

  /**
   * Whether a claim's lock wait can be bounded for that statement alone on the server behind
   * {@code connection} ({@link JdbcIdempotency.Builder#claimLockWait}): PostgreSQL ({@code
   * lock_timeout}), MariaDB ({@code SET STATEMENT}), not MySQL, SQLite or H2.
   *
   * @param connection an open connection, used by the calling thread only
   * @throws SQLException if the server's product cannot be read
   */
  boolean boundsClaimWait(Connection connection) throws SQLException;

  /**
   * @return a query of one row and one column that reads the session's lock wait bound as the
   *     database shows it, or {@code null} where it has none Idem sets
   */
  @Nullable String lockWaitQuery();

  /**
   * @param wait how long a statement of the session may wait for a lock, positive
   * @return the statements that set that bound for the session (SQLite: its {@code busy_timeout};
   *     MySQL: whole seconds, at least one), never {@code null}
   */
  List<String> sessionLockWait(Duration wait);

  /**
   * @param column a plain identifier
   * @return the definition of an auto-generated {@code BIGINT} primary key column of that name
   */
  String identityColumn(String column);

  // ------------------------------------------------------------------ engine hooks

  /**
   * @param table the key table, a plain identifier already validated
   * @return every statement Idem sends to that key table on this database, never {@code null}
   */
  KeyTableSql keyTableSql(String table);

  /**
   * As {@link #keyTableSql(String)}, for a claim whose lock wait is bounded on the server behind
   * {@code connection} (MySQL's dialect on a MariaDB server bounds it with {@code SET STATEMENT}).
   *
   * @throws SQLException if the server's product cannot be read
   */
  KeyTableSql keyTableSql(String table, Connection connection) throws SQLException;

  /**
   * @return the statement that begins a transaction on a connection left in auto-commit mode
   *     (SQLite {@code BEGIN IMMEDIATE}, MySQL {@code START TRANSACTION}), or {@code null} when
   *     Idem turns auto-commit off instead (PostgreSQL, H2)
   */
  @Nullable String beginStatement();

  /**
   * Raises how long the connection's statements wait for the database's write lock to at least
   * {@code least}, where that wait is the connection's to set (SQLite's {@code busy_timeout});
   * nothing elsewhere.
   *
   * @throws SQLException if the setting cannot be read or set
   */
  void raiseWriteLockWait(Connection connection, Duration least) throws SQLException;

  /**
   * Runs statements that create a table and its indexes so that concurrent creators on the same
   * database neither fail nor make an object twice; {@link SchemaCreation} describes what each
   * database does.
   *
   * @param ifMissing the caller found the table missing: where a creator can see, under its lock,
   *     that another made it meanwhile, nothing runs
   * @throws SQLException as {@link SchemaCreation#run}
   */
  void createTables(Connection connection, String table, List<String> statements, boolean ifMissing) throws SQLException;

  /**
   * @return whether the catalog shows {@code table} (a plain identifier) where the connection's
   *     unqualified statements look for it
   * @throws SQLException if the catalog cannot be read
   */
  boolean tableExists(Connection connection, String table) throws SQLException;

  /**
   * @return what makes the existing key table {@code table} compare a record's identity loosely
   *     (a column narrower than the shipped schema's, a collation that ignores trailing spaces),
   *     one sentence each; empty when nothing
   * @throws SQLException if the catalog cannot be read
   */
  List<String> keyTableProblems(Connection connection, String table) throws SQLException;

  /** @return the statement (or instructions) that bring key table {@code table} to the shipped schema */
  String keyTableMigration(String table);

  /**
   * @param table the step table of {@link dev.idem.jdbc.steps.JdbcStepOperations}, a plain identifier
   * @return its {@code CREATE TABLE IF NOT EXISTS} statement
   */
  String stepTableDdl(String table);

  /**
   * @param connection an open connection, used to read the server's version where it matters
   * @return the clause after a {@code SELECT} that locks its rows for the transaction and skips
   *     rows other transactions locked where the server can ({@code " FOR UPDATE SKIP LOCKED"});
   *     {@code ""} where writers are serialized anyway (SQLite)
   * @throws SQLException if the server's version cannot be read
   */
  String lockSkippingLocked(Connection connection) throws SQLException;
}
