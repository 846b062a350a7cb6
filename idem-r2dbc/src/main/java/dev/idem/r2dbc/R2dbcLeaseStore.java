package dev.idem.r2dbc;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.StoredResponseCodec;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.dialect.KeyTableSql;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.R2dbcException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * An {@link AsyncLeaseStore} on R2DBC, for lease mode without blocking (Spring WebFlux, Reactor
 * Netty): PostgreSQL, and MariaDB or MySQL.
 *
 * <p><b>The same table as {@code JdbcLeaseStore}.</b> It sends the statements of idem-jdbc's
 * dialects ({@link KeyTableSql}, the one place where Idem's key-table SQL is written; PostgreSQL's
 * {@code ?} placeholders become {@code $1, $2, ...}) to the same table, and reads and writes the
 * same rows: a key stored by {@code dev.idem.jdbc.JdbcLeaseStore} is replayed by this store and
 * the other way round, so an application can move from one to the other without running any
 * retried request twice. The table it creates is the shipped schema file of the dialect ({@link
 * KeyTableSql#schemaStatements()}).
 *
 * <p>Each operation takes a connection of its own from the {@link ConnectionFactory} (a pool, such
 * as r2dbc-pool, which Spring Boot configures, makes that cheap) and closes it when the operation
 * ends: on success, on failure and when the caller cancels. It sends single statements in the
 * connection's auto-commit mode and never opens a transaction, so no lock outlives a statement:
 *
 * <ul>
 *   <li>claim: one plain read of the record with the database's time; a completed record, and a
 *       live claim of another owner, are answered from it. Otherwise one conditional statement
 *       claims: an insert that does nothing when the key exists (PostgreSQL {@code ON CONFLICT DO
 *       NOTHING}, MySQL {@code INSERT IGNORE}), or an {@code UPDATE} whose {@code WHERE} repeats
 *       what the read saw. When a racer changed the record in between, that statement changes no
 *       row and the read runs again, at most five rounds;
 *   <li>complete and release: one conditional statement each, matching the owner token (fencing);
 *       when it changes no row, one read tells a repetition by the same owner from a lost claim.
 *       With response protection on, a completion reads the record first (the ciphertext is bound
 *       to the record's fingerprint).
 * </ul>
 *
 * <p>The expiry rules are those of {@code JdbcLeaseStore}: a record lives at least {@code
 * retention} after its completion and at most the lease longer, every time comparison on the
 * database's clock ({@link Dialect#nowMillis()}). A deadlock or serialization failure (SQLState
 * class 40, or MySQL's error 1213) makes the operation's statements run again, up to five
 * attempts in all, after a short random pause on a timer, never a sleeping thread.
 *
 * <p><b>The table.</b> With {@link Builder#createSchema(boolean) createSchema} (the default), the
 * first operation creates the table and its index if missing; concurrent creators are tolerated
 * ("already exists" counts as done). Unlike {@code JdbcLeaseStore}, this store does not check an
 * existing table's column types; a table created by an earlier version of Idem that compares keys
 * loosely is refused by {@code JdbcLeaseStore} and {@code JdbcIdempotency} with its migration, so
 * let one of them, or your migrations, make the table before an upgrade.
 *
 * <p><b>Failures.</b> No method throws: every failure completes the stage exceptionally, with an
 * {@link IdemStoreException} when the database fails (its message names the record by a hash,
 * never by its principal or key, and quotes the driver's message and SQLState), and with {@link
 * NullPointerException} or {@link IllegalArgumentException} for an invalid argument. Stages
 * complete on the driver's I/O threads. The dialect is chosen when the store is built, from the
 * factory's metadata ({@link ConnectionFactory#getMetadata()}). Immutable after {@link
 * Builder#build()}, except for the one-time "table created" mark; thread-safe.
 */
public final class R2dbcLeaseStore implements AsyncLeaseStore {

  /** Reads and conditional writes per claim before giving up on a record that keeps changing. */
  private static final int MAX_ROUNDS = 5;

  /** Attempts in all of an operation that met a deadlock or serialization failure. */
  private static final int MAX_ATTEMPTS = 5;

  private final ConnectionFactory factory;
  private final String table;
  private final ResponseProtection protection;
  private final Dialect dialect;
  /** Package-private: tests read the statements it sends. */
  final R2dbcKeyTable sql;

  private R2dbcLeaseStore(Builder b, Dialect dialect, boolean mariadb) {
    this.factory = b.factory;
    this.table = b.table;
    this.protection = b.protection;
    this.dialect = dialect;
    this.sql = new R2dbcKeyTable(dialect, mariadb, b.table, b.createSchema);
  }

  /**
   * @param factory where connections come from, never {@code null}; a pool is recommended
   * @return a builder with table {@code idem_keys} and the schema created on first use
   * @throws NullPointerException if {@code factory} is {@code null}
   */
  public static Builder builder(ConnectionFactory factory) {
    return new Builder(factory);
  }

  /** @return the dialect chosen from the factory's metadata: {@code POSTGRESQL} or {@code MYSQL} */
  public Dialect dialect() {
    return dialect;
  }

  /** @return the key table's name */
  public String table() {
    return table;
  }

  /** @return the table, the dialect and the driver, for logs */
  @Override
  public String toString() {
    return "R2dbcLeaseStore[table=" + table + ", dialect=" + dialect + ", database=" + factory.getMetadata().getName() + "]";
  }

  @Override
  public CompletionStage<ClaimResult> claimAsync(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    try {
      Objects.requireNonNull(request, "request");
      checkToken(ownerToken);
      long leaseMillis = lease.toMillis();
      long keepMillis = leaseMillis + retention.toMillis();
      return run("claim of " + R2dbcKeyTable.logRef(request.scope(), request.key()),
          c -> claimRound(c, request, ownerToken, leaseMillis, keepMillis, 0));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** One read, then at most one conditional write; another round when a racer changed the record. */
  private Mono<ClaimResult> claimRound(Connection c, IdempotentRequest r, String owner, long leaseMillis, long keepMillis,
      int round) {
    if (round >= MAX_ROUNDS) {
      return Mono.error(new IllegalStateException("the record kept changing during " + MAX_ROUNDS + " claim attempts"));
    }
    String p = r.scope().principal();
    String o = r.scope().operation();
    String k = r.key().value();
    String fingerprint = r.fingerprint().hex();
    Mono<ClaimResult> again = Mono.defer(() -> claimRound(c, r, owner, leaseMillis, keepMillis, round + 1));
    return sql.read(c, r.scope(), r.key()).flatMap(found -> {
      if (found.isEmpty()) {
        return sql.write(c, sql.leaseInsert, p, o, k, fingerprint, owner, leaseMillis, keepMillis)
            .flatMap(n -> n == 1 ? Mono.just(ClaimResult.claimed(r.fingerprint(), false)) : again); // else a racer inserted it
      }
      KeyRecord row = found.get();
      if (!row.live()) {
        return sql.write(c, sql.leaseOverwrite, fingerprint, owner, leaseMillis, keepMillis, p, o, k)
            .flatMap(n -> n == 1 ? Mono.just(ClaimResult.claimed(r.fingerprint(), false)) : again);
      }
      Fingerprint recorded = Fingerprint.fromHex(row.fingerprint());
      byte[] response = row.response();
      if (response != null) {
        return Mono.just(ClaimResult.completed(recorded, protection.open(r.scope(), r.key(), recorded, response)));
      }
      if (owner.equals(row.owner())) {
        return sql.write(c, sql.leaseRenew, leaseMillis, keepMillis, keepMillis, p, o, k, owner)
            .flatMap(n -> n == 1 ? Mono.just(ClaimResult.claimed(recorded, false)) : again);
      }
      if (row.now() >= row.leaseUntil() && recorded.equals(r.fingerprint())) {
        return sql.write(c, sql.leaseTakeOver, owner, leaseMillis, keepMillis, keepMillis, p, o, k, fingerprint)
            .flatMap(n -> n == 1 ? Mono.just(ClaimResult.claimed(recorded, true)) : again);
      }
      return Mono.just(ClaimResult.inProgress(recorded, Duration.ofMillis(row.leaseRemainingMillis())));
    });
  }

  /**
   * {@inheritDoc}
   *
   * <p>One conditional {@code UPDATE}; when it changes no row, one read of the live record: already
   * completed by {@code ownerToken} with an equal response (a repetition after a lost
   * acknowledgement) is {@code true}, anything else {@code false}. With response protection on,
   * one read comes first, as in {@code JdbcLeaseStore}.
   */
  @Override
  public CompletionStage<Boolean> completeAsync(
      Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    try {
      Objects.requireNonNull(scope, "scope");
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(response, "response");
      checkToken(ownerToken);
      long keepMillis = retention.toMillis();
      return run("complete of " + R2dbcKeyTable.logRef(scope, key), c -> {
        Mono<byte[]> stored;
        if (protection.enabled()) {
          stored = readLive(c, scope, key).flatMap(found -> {
            if (found.isEmpty() || !ownerToken.equals(found.get().owner())) {
              return Mono.empty(); // not this owner's: false below
            }
            KeyRecord row = found.get();
            if (row.response() != null) {
              return Mono.error(new AlreadyCompleted(sameCompletion(row, scope, key, ownerToken, response)));
            }
            return Mono.just(protection.seal(scope, key, Fingerprint.fromHex(row.fingerprint()), response));
          });
        } else {
          stored = Mono.fromSupplier(() -> StoredResponseCodec.encode(response));
        }
        Mono<Boolean> completion = stored
            .flatMap(bytes -> sql.write(c, sql.leaseComplete, new R2dbcKeyTable.TypedNull(Integer.class, protection.clearStatus(response)), bytes,
                    keepMillis, keepMillis, scope.principal(), scope.operation(), key.value(), ownerToken)
                .flatMap(n -> n == 1 ? Mono.just(true)
                    : readLive(c, scope, key).map(found -> found.isPresent()
                        && sameCompletion(found.get(), scope, key, ownerToken, response))))
            .defaultIfEmpty(false);
        return completion.onErrorResume(AlreadyCompleted.class, done -> Mono.just(done.same));
      });
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** @return whether {@code row} is the live record completed by {@code owner} with {@code response} */
  private boolean sameCompletion(KeyRecord row, Scope scope, IdempotencyKey key, String owner, StoredResponse response) {
    byte[] stored = row.response();
    return stored != null && owner.equals(row.owner())
        && protection.open(scope, key, Fingerprint.fromHex(row.fingerprint()), stored).equals(response);
  }

  /**
   * {@inheritDoc}
   *
   * <p>One conditional {@code DELETE}; when it removes no row, one read of the live record: none
   * (released before, or expired) is {@code true}, a record of another owner or a completed one
   * {@code false}.
   */
  @Override
  public CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String ownerToken) {
    try {
      Objects.requireNonNull(scope, "scope");
      Objects.requireNonNull(key, "key");
      checkToken(ownerToken);
      return run("release of " + R2dbcKeyTable.logRef(scope, key), c ->
          sql.write(c, sql.leaseRelease, scope.principal(), scope.operation(), key.value(), ownerToken)
              .flatMap(n -> n == 1 ? Mono.just(true) : readLive(c, scope, key).map(Optional::isEmpty)));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Deletes expired records in statements of at most {@code batchSize} each, until one deletes
   * fewer; a table that does not exist (yet) has nothing to purge.
   */
  @Override
  public CompletionStage<Long> purgeExpiredAsync(int batchSize) {
    if (batchSize < 1 || batchSize > 100_000) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException("batchSize must be between 1 and 100000, was " + batchSize));
    }
    return run("purge", c -> purgeBatches(c, batchSize)
        .onErrorResume(R2dbcException.class, e -> R2dbcKeyTable.tableMissing(e) ? Mono.just(0L) : Mono.error(e)));
  }

  /**
   * Batch after batch until one deletes fewer than {@code batchSize}, as a loop ({@code repeat}),
   * not a chain of nested operators that would grow with the number of batches. On PostgreSQL and
   * MariaDB each batch starts where the last one ended ({@link dev.idem.jdbc.dialect.KeyTableSql#purgeFrom}).
   *
   * @return how many records were deleted in all
   */
  private Mono<Long> purgeBatches(Connection c, int batchSize) {
    String purgeFrom = sql.purgeFrom;
    AtomicLong total = new AtomicLong();
    AtomicLong from = new AtomicLong(Long.MIN_VALUE);
    AtomicBoolean more = new AtomicBoolean(true);
    Mono<Long> batch = purgeFrom == null
        ? Mono.defer(() -> sql.write(c, sql.purge, batchSize))
        : Mono.defer(() -> Flux.from(c.createStatement(purgeFrom).bind(0, from.get()).bind(1, batchSize).execute())
            .concatMap(result -> result.map((row, meta) -> {
              Object latest = row.get(1);
              if (latest != null) {
                from.accumulateAndGet(((Number) latest).longValue(), Math::max);
              }
              return ((Number) row.get(0)).longValue();
            }))
            .reduce(0L, Long::sum));
    return batch
        .doOnNext(deleted -> {
          total.addAndGet(deleted);
          more.set(deleted >= batchSize);
        })
        .repeat(more::get)
        .then(Mono.fromSupplier(total::get));
  }

  /**
   * Runs one operation on a connection of its own, closed on every path; creates the table first
   * when allowed and not done yet; runs the work again after a deadlock or serialization failure;
   * turns every database failure into an {@link IdemStoreException}.
   */
  private <T> CompletionStage<T> run(String what, Function<Connection, Mono<T>> work) {
    Mono<T> operation = Mono.usingWhen(
        Mono.defer(() -> Mono.from(factory.create())),
        c -> sql.ensureSchema(c).then(Mono.defer(() -> work.apply(c)).retryWhen(conflictRetry())),
        Connection::close,
        (c, error) -> c.close(),
        Connection::close);
    return operation
        .onErrorMap(e -> !(e instanceof IdemStoreException), e -> failure(what, e))
        .toFuture();
  }

  /** Up to {@link #MAX_ATTEMPTS} attempts in all, after a random pause of a few milliseconds on Reactor's timer. */
  private static Retry conflictRetry() {
    return Retry.backoff(MAX_ATTEMPTS - 1, Duration.ofMillis(2))
        .maxBackoff(Duration.ofMillis(50))
        .filter(R2dbcKeyTable::isConflict)
        .onRetryExhaustedThrow((spec, signal) -> signal.failure());
  }

  /** @return the key's record if it has not expired, or empty */
  private Mono<Optional<KeyRecord>> readLive(Connection c, Scope scope, IdempotencyKey key) {
    return sql.read(c, scope, key).map(found -> found.filter(KeyRecord::live));
  }

  private static void checkToken(String ownerToken) {
    Objects.requireNonNull(ownerToken, "ownerToken");
    if (ownerToken.isEmpty() || ownerToken.length() > 64) {
      throw new IllegalArgumentException("owner token must be 1 to 64 characters");
    }
  }

  private IdemStoreException failure(String what, Throwable e) {
    return new IdemStoreException("lease store (" + table + ", R2DBC): " + what + " failed: " + R2dbcKeyTable.describe(e), e);
  }

  /** Ends a protected completion that found the record already completed: its answer. */
  private static final class AlreadyCompleted extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final boolean same;

    AlreadyCompleted(boolean same) {
      super(null, null, false, false);
      this.same = same;
    }
  }

  /** Builds an {@link R2dbcLeaseStore}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final ConnectionFactory factory;
    private String table = "idem_keys";
    private boolean createSchema = true;
    private ResponseProtection protection = ResponseProtection.none();

    private Builder(ConnectionFactory factory) {
      this.factory = Objects.requireNonNull(factory, "factory");
    }

    /**
     * @param table the key table: a plain SQL identifier, as for {@code
     *     JdbcLeaseStore.Builder#table}; the same name as the JDBC store's to share its records
     * @return this builder
     * @throws IllegalArgumentException if it is not one
     */
    public Builder table(String table) {
      JdbcIdempotency.builder().table(table); // validates, with the JDBC stores' rule
      this.table = table;
      return this;
    }

    /**
     * @param createSchema whether the first operation creates the table and its index when missing
     *     (default {@code true})
     * @return this builder
     */
    public Builder createSchema(boolean createSchema) {
      this.createSchema = createSchema;
      return this;
    }

    /**
     * Protects stored responses at rest with the same envelope as {@code JdbcLeaseStore} (so one
     * table serves both stores with one keyring). A completion then costs one read more; a stored
     * response that cannot be authenticated completes the claim's stage with {@link
     * dev.idem.core.StoredResponseUnreadableException}, never a replay.
     *
     * @param protection the keyring, or {@link ResponseProtection#none()} (the default: in clear)
     * @return this builder
     * @throws NullPointerException if {@code protection} is {@code null}
     */
    public Builder responseProtection(ResponseProtection protection) {
      this.protection = Objects.requireNonNull(protection, "protection");
      return this;
    }

    /**
     * @return a new, thread-safe store; no connection is opened until its first operation
     * @throws IllegalArgumentException if the factory's database (its metadata's name) is neither
     *     PostgreSQL nor MariaDB/MySQL
     */
    public R2dbcLeaseStore build() {
      return new R2dbcLeaseStore(this, dialectOf(factory), R2dbcKeyTable.mariadb(factory));
    }

    static Dialect dialectOf(ConnectionFactory factory) {
      return R2dbcKeyTable.dialectOf(factory, "R2dbcLeaseStore",
          "For another database, use JdbcLeaseStore (blocking) or an AsyncLeaseStore of your own");
    }
  }
}
