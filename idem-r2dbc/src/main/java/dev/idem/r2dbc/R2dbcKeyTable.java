package dev.idem.r2dbc;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.SchemaCreation;
import dev.idem.jdbc.dialect.KeyTableSql;
import dev.idem.jdbc.dialect.MysqlDialect;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.Result;
import io.r2dbc.spi.Statement;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One key table over R2DBC, for both of this module's engines ({@link R2dbcLeaseStore} and {@link
 * R2dbcTransactionalIdempotency}): idem-jdbc's statements for its dialect ({@link KeyTableSql},
 * PostgreSQL's {@code ?} placeholders numbered), the schema created once, the reads and writes,
 * and how a database failure is told apart. Thread-safe; immutable but for the one-time "table
 * ready" mark.
 */
final class R2dbcKeyTable {

  /** How long a PostgreSQL creator waits for the table's schema lock: idem-jdbc's wait. */
  static final Duration SCHEMA_LOCK_WAIT = SchemaCreation.LOCK_WAIT;

  /** Transactions in all of one PostgreSQL creation that meets duplicate-object errors: idem-jdbc's count. */
  static final int SCHEMA_ATTEMPTS = 3;

  final String table;
  final Dialect dialect;
  final String read;
  final String readLatest;
  final String claim;
  final @Nullable String takeover;
  final String complete;
  final String leaseInsert;
  final String leaseOverwrite;
  final String leaseRenew;
  final String leaseTakeOver;
  final String leaseComplete;
  final String leaseRelease;
  final String purge;
  final @Nullable String purgeFrom;
  private final List<String> schema;
  /** {@link KeyTableSql#schemaLockKey()}: the lock idem-jdbc's creators of this table take. */
  private final long schemaLockKey;
  private final boolean createSchema;
  /** Whether the table was created, or found, once: later operations send no DDL. */
  private volatile boolean schemaReady;

  /**
   * @param mariadb whether the server is MariaDB ({@link #mariadb}): MySQL's dialect then sends
   *     MariaDB's statements ({@link MysqlDialect#mariadbKeyTableSql}), its purge among them
   */
  R2dbcKeyTable(Dialect dialect, boolean mariadb, String table, boolean createSchema) {
    this.table = table;
    this.dialect = dialect;
    this.createSchema = createSchema;
    KeyTableSql s = mariadb && dialect.equals(Dialect.mysql()) ? MysqlDialect.INSTANCE.mariadbKeyTableSql(table) : dialect.keyTableSql(table);
    Function<String, String> f = dialect.equals(Dialect.postgresql()) ? Placeholders::numbered : text -> text;
    this.read = f.apply(s.read);
    this.readLatest = f.apply(s.readLatest);
    this.claim = f.apply(s.claim);
    this.takeover = s.takeover == null ? null : f.apply(s.takeover);
    this.complete = f.apply(s.complete); // this transaction's own claim only (see KeyTableSql#complete)
    this.leaseInsert = f.apply(s.leaseInsert);
    this.leaseOverwrite = f.apply(s.leaseOverwrite);
    this.leaseRenew = f.apply(s.leaseRenew);
    this.leaseTakeOver = f.apply(s.leaseTakeOver);
    this.leaseComplete = f.apply(s.leaseComplete);
    this.leaseRelease = f.apply(s.leaseRelease);
    this.purge = f.apply(s.purge);
    this.purgeFrom = s.purgeFrom == null ? null : f.apply(s.purgeFrom);
    this.schema = List.copyOf(s.schemaStatements());
    this.schemaLockKey = s.schemaLockKey();
  }

  /** @return whether {@link #ensureSchema} still has DDL to send: allowed, and not done yet */
  boolean schemaPending() {
    return createSchema && !schemaReady;
  }

  /**
   * Creates the table and its index when missing and allowed, once, on {@code c}, a connection in
   * auto-commit mode that no transaction uses. Any number of connections and processes may call
   * it at the same moment for one table:
   *
   * <ul>
   *   <li>PostgreSQL: the statements run in one transaction (one simple query, see {@link
   *       #createUnderLock}) that first takes the table's transaction-scoped advisory lock, the one
   *       idem-jdbc's creators take ({@link
   *       KeyTableSql#schemaLockKey()}), waiting at most {@link #SCHEMA_LOCK_WAIT}; so creators run
   *       one after the other and each later one finds the objects made. A duplicate-object error
   *       (23505, 42P07, 42710) from a creator that takes no lock (an earlier version, a migration
   *       tool) rolls the transaction back, and it runs again, up to {@link #SCHEMA_ATTEMPTS}
   *       times in all: its {@code IF NOT EXISTS} then sees the objects. "Already exists" is never
   *       taken on trust: a type of another kind under the table's name fails every attempt.
   *   <li>MySQL and MariaDB, whose {@code CREATE TABLE IF NOT EXISTS} (index included) is one
   *       atomic statement: each statement on its own; "table already exists" (1050) and
   *       "duplicate key name" (1061) count as done.
   * </ul>
   */
  Mono<Void> ensureSchema(Connection c) {
    if (!createSchema || schemaReady) {
      return Mono.empty();
    }
    Mono<Void> create = dialect.abortsTransactionOnError()
        ? createUnderLock(c, 1)
        : Flux.fromIterable(schema)
            .concatMap(ddl -> Flux.from(c.createStatement(ddl).execute())
                .concatMap(Result::getRowsUpdated)
                .onErrorResume(R2dbcKeyTable::mysqlAlreadyExists, e -> Mono.empty()))
            .then();
    return create.then(Mono.fromRunnable(() -> schemaReady = true));
  }

  /**
   * One simple query of several statements, which PostgreSQL runs as one implicit transaction,
   * committed at its end and rolled back whole at its first error; no {@code BEGIN} of the
   * driver's, so a cancellation (the attempt's subscriber went away) never leaves the connection
   * inside a transaction that the pool, whose rollback the driver may skip, would hand on.
   */
  private Mono<Void> createUnderLock(Connection c, int attempt) {
    String script = "SET LOCAL lock_timeout = '" + SCHEMA_LOCK_WAIT.toMillis() + "ms'; SELECT pg_advisory_xact_lock("
        + schemaLockKey + "); " + String.join("; ", schema);
    return execute(c, script)
        .onErrorResume(e -> attempt < SCHEMA_ATTEMPTS && postgresDuplicate(e), e -> createUnderLock(c, attempt + 1));
  }

  private static Mono<Void> execute(Connection c, String statement) {
    return Flux.from(c.createStatement(statement).execute()).concatMap(Result::getRowsUpdated).then();
  }

  /** @return the key's record (and the database's time), or empty if it has none */
  Mono<Optional<KeyRecord>> read(Connection c, Scope scope, IdempotencyKey key) {
    return readWith(c, read, scope, key);
  }

  /**
   * @return the key's latest committed record, read with a shared lock where the database needs
   *     one to see past its snapshot (MySQL's {@code LOCK IN SHARE MODE}), or empty
   */
  Mono<Optional<KeyRecord>> readLatest(Connection c, Scope scope, IdempotencyKey key) {
    return readWith(c, readLatest, scope, key);
  }

  private Mono<Optional<KeyRecord>> readWith(Connection c, String text, Scope scope, IdempotencyKey key) {
    Statement st = bind(c.createStatement(text), scope.principal(), scope.operation(), key.value());
    return Flux.from(st.execute())
        .concatMap(result -> result.map((row, meta) -> KeyRecord.of(row)))
        .collectList()
        .map(rows -> rows.isEmpty() ? Optional.<KeyRecord>empty() : Optional.of(rows.get(0)));
  }

  /** @return how many rows the statement changed */
  Mono<Long> write(Connection c, String text, Object... params) {
    Statement st = bind(c.createStatement(text), params);
    return Flux.from(st.execute()).concatMap(Result::getRowsUpdated).reduce(0L, Long::sum);
  }

  private static Statement bind(Statement st, Object... params) {
    for (int i = 0; i < params.length; i++) {
      Object value = params[i];
      if (value instanceof TypedNull n) {
        if (n.value() == null) {
          st.bindNull(i, n.type());
        } else {
          st.bind(i, n.value());
        }
      } else {
        st.bind(i, value);
      }
    }
    return st;
  }

  /** SQLState class 40 (serialization failure, deadlock), or MySQL/MariaDB's deadlock 1213 under another SQLState. */
  static boolean isConflict(Throwable e) {
    if (!(e instanceof R2dbcException r)) {
      return false;
    }
    String state = r.getSqlState();
    return (state != null && state.startsWith("40")) || r.getErrorCode() == 1213;
  }

  /** PostgreSQL 42P01 (undefined table), MySQL/MariaDB 1146 (no such table). */
  static boolean tableMissing(R2dbcException e) {
    return "42P01".equals(e.getSqlState()) || e.getErrorCode() == 1146;
  }

  /** PostgreSQL 25P02: an error earlier in the transaction aborted it, and it refuses every statement. */
  static boolean transactionAborted(Throwable e) {
    return e instanceof R2dbcException r && "25P02".equals(r.getSqlState());
  }

  /** MySQL/MariaDB 1050 (table exists) and 1061 (duplicate key name): another creator made it. */
  private static boolean mysqlAlreadyExists(Throwable e) {
    return e instanceof R2dbcException r && (r.getErrorCode() == 1050 || r.getErrorCode() == 1061);
  }

  /**
   * PostgreSQL 23505 (a concurrent creator's catalog row), 42P07 (relation exists) and 42710 (its
   * row type exists): a creator that took no lock made the object while this one ran.
   */
  private static boolean postgresDuplicate(Throwable e) {
    if (!(e instanceof R2dbcException r)) {
      return false;
    }
    String state = r.getSqlState();
    return "23505".equals(state) || "42P07".equals(state) || "42710".equals(state);
  }

  /** @return the driver's message and SQLState, for an {@link dev.idem.core.IdemStoreException}'s message */
  static String describe(Throwable e) {
    String state = e instanceof R2dbcException r ? " [SQLState " + r.getSqlState() + "]" : "";
    return e.getMessage() + state;
  }

  /**
   * How messages (which end up in logs) name a record without its principal or key: {@code record
   * #} and the first 8 hexadecimal digits of SHA-256 over principal, operation and key, each UTF-8
   * encoded and preceded by its length in 4 bytes, big-endian; the same reference as idem-jdbc's
   * messages give, so the two modules' logs name a record alike.
   */
  static String logRef(Scope scope, IdempotencyKey key) {
    MessageDigest sha256;
    try {
      sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
    for (String part : new String[] {scope.principal(), scope.operation(), key.value()}) {
      byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
      sha256.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
      sha256.update(bytes);
    }
    return "record #" + HexFormat.of().formatHex(sha256.digest(), 0, 4);
  }

  /**
   * The dialect of the factory's database, from {@link io.r2dbc.spi.ConnectionFactoryMetadata#getName()}.
   *
   * @param who the class that asks, named in the refusal
   * @param elsewhere what to use for another database, part of the refusal
   * @throws IllegalArgumentException if the database is neither PostgreSQL nor MariaDB/MySQL
   */
  static Dialect dialectOf(ConnectionFactory factory, String who, String elsewhere) {
    String name = factory.getMetadata().getName();
    String product = name == null ? "" : name.toLowerCase(Locale.ROOT);
    if (product.contains("postgres")) {
      return Dialect.postgresql();
    }
    if (product.contains("mariadb") || product.contains("mysql")) {
      return Dialect.mysql();
    }
    throw new IllegalArgumentException(who + " runs on PostgreSQL and MariaDB/MySQL; this ConnectionFactory ("
        + factory.getClass().getName() + ") is for \"" + name + "\". " + elsewhere);
  }

  /**
   * Whether the factory is MariaDB's driver (r2dbc-mariadb, {@link
   * io.r2dbc.spi.ConnectionFactoryMetadata#getName()} {@code MariaDB}), taken as a MariaDB server:
   * the statements MariaDB has and MySQL does not (a bounded claim, {@code DELETE ... RETURNING})
   * are sent.
   */
  static boolean mariadb(ConnectionFactory factory) {
    return String.valueOf(factory.getMetadata().getName()).toLowerCase(Locale.ROOT).contains("mariadb");
  }

  /** A parameter that may be SQL NULL, with the type the driver needs to bind a null. */
  record TypedNull(Class<?> type, @Nullable Object value) {}
}
