package dev.idem.r2dbc;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.dialect.KeyTableSql;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.Result;
import io.r2dbc.spi.Statement;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
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
  private final List<String> schema;
  private final boolean createSchema;
  /** Whether the table was created, or found, once: later operations send no DDL. */
  private volatile boolean schemaReady;

  R2dbcKeyTable(Dialect dialect, String table, boolean createSchema) {
    this.table = table;
    this.dialect = dialect;
    this.createSchema = createSchema;
    KeyTableSql s = dialect.keyTableSql(table);
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
    this.schema = List.copyOf(s.schemaStatements());
  }

  /** @return whether {@link #ensureSchema} still has DDL to send: allowed, and not done yet */
  boolean schemaPending() {
    return createSchema && !schemaReady;
  }

  /** Creates the table and its index when missing and allowed, once; "already exists" counts as done. */
  Mono<Void> ensureSchema(Connection c) {
    if (!createSchema || schemaReady) {
      return Mono.empty();
    }
    return Flux.fromIterable(schema)
        .concatMap(ddl -> Flux.from(c.createStatement(ddl).execute())
            .concatMap(Result::getRowsUpdated)
            .onErrorResume(R2dbcKeyTable::alreadyExists, e -> Mono.empty()))
        .then(Mono.fromRunnable(() -> schemaReady = true));
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

  /**
   * PostgreSQL 42P07 (exists) and 23505 (a concurrent creator's catalog row), MySQL/MariaDB 1050
   * (table exists) and 1061 (duplicate key name): another creator made it.
   */
  private static boolean alreadyExists(Throwable e) {
    if (!(e instanceof R2dbcException r)) {
      return false;
    }
    return "42P07".equals(r.getSqlState()) || "23505".equals(r.getSqlState()) || r.getErrorCode() == 1050 || r.getErrorCode() == 1061;
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

  /** A parameter that may be SQL NULL, with the type the driver needs to bind a null. */
  record TypedNull(Class<?> type, @Nullable Object value) {}
}
