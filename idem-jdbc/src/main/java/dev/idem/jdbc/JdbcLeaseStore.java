package dev.idem.jdbc;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.StoredResponseCodec;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.KeyRow;
import dev.idem.jdbc.dialect.KeyTableSql;
import dev.idem.jdbc.internal.LogRef;
import dev.idem.jdbc.internal.SqlRunner;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * A {@link LeaseStore} on SQLite, PostgreSQL or MySQL/MariaDB, for lease mode: effects outside the
 * database, with claims held by owner tokens until their lease runs out.
 *
 * <p>It uses the same table layout as {@link JdbcIdempotency} (the shipped schema files), so one
 * table can serve both modes. Each operation borrows a connection from the {@link DataSource} and
 * sends single statements in auto-commit mode; it never opens a transaction of its own, so no lock
 * outlives a statement:
 *
 * <ul>
 *   <li>claim: one plain read of the record with the database's time (on PostgreSQL sent in one
 *       round trip with the insert below, which does nothing, and locks nothing, when the key has a
 *       record; so a create's claim is one round trip there). A completed record is
 *       answered from it (a replay costs that one read and writes nothing), and so is a live claim
 *       of another owner. Otherwise one conditional statement claims: an insert that does nothing
 *       when the key exists (PostgreSQL and SQLite {@code ON CONFLICT DO NOTHING}, MySQL {@code
 *       INSERT IGNORE}), or an {@code UPDATE} whose {@code WHERE} repeats what the read saw (expired;
 *       the caller's own claim; another owner's claim whose lease ran out, with the same
 *       fingerprint). When a racer changed the record in between, that statement changes no row
 *       and the read runs again;
 *   <li>complete and release: one conditional statement each, matching the owner token (fencing);
 *       when it changes no row, one read tells a repetition by the same owner (already completed
 *       with an equal response, or already released: success) from a lost claim.
 * </ul>
 *
 * <p>A claim's record expires {@code lease + retention} after the claim; a completion within the
 * lease leaves that expiry alone (it is at least {@code retention} after the completion), and a
 * later one moves it to {@code retention} after the completion. So a completed record lives at
 * least {@code retention} after its completion and at most the lease longer, and the usual
 * completion rewrites no indexed column (on PostgreSQL a HOT update). That window, {@code
 * retention} to {@code retention + lease} after the completion by the database's clock, is the
 * expiry policy to publish to clients (draft-ietf-httpapi-idempotency-key-header, section 2.3;
 * {@code retention} and {@code lease} are those of {@code LeaseIdempotency.Builder}).
 *
 * <p>A deadlock or serialization failure (see {@code ConflictRetry}: SQLState class 40) makes an
 * operation run again, up to five attempts in all. Every time comparison uses the database's clock
 * ({@link Dialect#nowMillis()}), so application nodes with skewed clocks still agree on who holds a
 * lease. The dialect is detected on the first connection and kept: one store, one database.
 * Immutable after {@link Builder#build()} and thread-safe.
 */
public final class JdbcLeaseStore implements LeaseStore, KeyStatusReader {

  /** Reads and conditional writes per claim before giving up on a record that keeps changing. */
  private static final int MAX_ROUNDS = 5;

  private final DataSource dataSource;
  /** The key table, shared in shape with {@link JdbcIdempotency}: its statements, schema and purge. */
  private final KeyTable table;
  private final Duration sqliteBusyTimeout;
  private final ResponseProtection protection;
  /** The statements of the data source's dialect, set by the first connection. */
  private volatile @Nullable KeyTableSql sql;
  private final KeyStatusQuery statusQuery;

  private JdbcLeaseStore(Builder b) {
    this.dataSource = b.dataSource;
    this.table = new KeyTable(b.table, b.createSchema, b.protection);
    this.sqliteBusyTimeout = b.sqliteBusyTimeout;
    this.protection = b.protection;
    this.statusQuery = new KeyStatusQuery(b.table, b.protection);
  }

  /**
   * @param dataSource where connections come from, never {@code null}
   * @return a builder with table {@code idem_keys} and the schema created on first use
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  @Override
  public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    Objects.requireNonNull(request, "request");
    checkToken(ownerToken);
    long leaseMillis = lease.toMillis();
    long keepMillis = leaseMillis + retention.toMillis();
    try (Connection c = connection()) {
      KeyTableSql sql = statements();
      return ConflictRetry.run(attempt -> claimOnce(c, sql, request, ownerToken, leaseMillis, keepMillis));
    } catch (SQLException e) {
      throw failure("claim of " + LogRef.of(request.scope(), request.key()), e);
    }
  }

  /** One read, then at most one conditional write per round; see the class description. */
  private ClaimResult claimOnce(Connection c, KeyTableSql sql, IdempotentRequest r, String owner, long leaseMillis, long keepMillis)
      throws SQLException {
    String p = r.scope().principal();
    String o = r.scope().operation();
    String k = r.key().value();
    String fingerprint = r.fingerprint().hex();
    for (int round = 0; round < MAX_ROUNDS; round++) {
      KeyRow row;
      if (round == 0 && sql.leaseReadThenInsert != null) {
        SqlRunner.RowThenCount first =
            SqlRunner.readThenWrite(c, sql.leaseReadThenInsert, p, o, k, p, o, k, fingerprint, owner, leaseMillis, keepMillis);
        if (first.written() == 1) {
          return ClaimResult.claimed(r.fingerprint(), false);
        }
        row = first.row();
        if (row == null) {
          continue; // a racer inserted it between the read and the insert
        }
      } else {
        row = SqlRunner.readRow(c, sql.read, p, o, k);
      }
      if (row == null) {
        if (insertLease(c, sql, p, o, k, fingerprint, owner, leaseMillis, keepMillis)) {
          return ClaimResult.claimed(r.fingerprint(), false);
        }
        continue; // a racer inserted it
      }
      if (!row.live()) {
        if (SqlRunner.update(c, sql.leaseOverwrite, fingerprint, owner, leaseMillis, keepMillis, p, o, k) == 1) {
          return ClaimResult.claimed(r.fingerprint(), false);
        }
        continue;
      }
      Fingerprint recorded = Fingerprint.fromHex(row.fingerprint);
      if (row.completed()) {
        return ClaimResult.completed(recorded, protection.open(r.scope(), r.key(), recorded, row.response));
      }
      if (owner.equals(row.owner)) {
        if (SqlRunner.update(c, sql.leaseRenew, leaseMillis, keepMillis, keepMillis, p, o, k, owner) == 1) {
          return ClaimResult.claimed(recorded, false);
        }
        continue;
      }
      if (row.now >= row.leaseUntil && recorded.equals(r.fingerprint())) {
        if (SqlRunner.update(c, sql.leaseTakeOver, owner, leaseMillis, keepMillis, keepMillis, p, o, k, fingerprint) == 1) {
          return ClaimResult.claimed(recorded, true);
        }
        continue;
      }
      return ClaimResult.inProgress(recorded, Duration.ofMillis(row.leaseRemainingMillis()));
    }
    throw new SQLException("the record kept changing during " + MAX_ROUNDS + " claim attempts");
  }

  /**
   * {@link KeyTableSql#leaseInsert}: a duplicate key is "not inserted", whether the database reports
   * it as 0 rows (an upsert that does nothing, {@code INSERT IGNORE}) or as an error (H2, where the
   * insert is a plain one).
   *
   * @return whether the row was inserted
   */
  private static boolean insertLease(Connection c, KeyTableSql sql, @Nullable Object... params) throws SQLException {
    try {
      return SqlRunner.update(c, sql.leaseInsert, params) == 1;
    } catch (SQLException e) {
      if (sql.isDuplicateKey(e)) {
        return false;
      }
      throw e;
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>One conditional {@code UPDATE}; when it changes no row, one read of the live record: already
   * completed by {@code ownerToken} with an equal response (a repetition after a lost
   * acknowledgement) is {@code true}, anything else {@code false}. The record's expiry is moved
   * only when {@code retention} from now is later than the one the claim wrote (see the class
   * description).
   *
   * <p>With {@link Builder#responseProtection response protection} on, one read comes first: the
   * ciphertext is bound to the record's fingerprint, which only the record holds; a record that is
   * gone, of another owner, or already completed is answered from that read without writing.
   *
   * @throws dev.idem.core.StoredResponseUnreadableException if the record is already completed by
   *     {@code ownerToken} and its stored response cannot be read to compare it with {@code response}
   */
  @Override
  public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    Objects.requireNonNull(response, "response");
    checkToken(ownerToken);
    long keepMillis = retention.toMillis();
    try (Connection c = connection()) {
      KeyTableSql sql = statements();
      return ConflictRetry.run(attempt -> {
        byte[] stored;
        if (protection.enabled()) {
          KeyRow row = readLive(c, sql, scope, key);
          if (row == null || !ownerToken.equals(row.owner)) {
            return false;
          }
          if (row.completed()) {
            return sameCompletion(row, scope, key, ownerToken, response);
          }
          stored = protection.seal(scope, key, Fingerprint.fromHex(row.fingerprint), response);
        } else {
          stored = StoredResponseCodec.encode(response);
        }
        if (SqlRunner.update(c, sql.leaseComplete, protection.clearStatus(response), stored, keepMillis, keepMillis,
            scope.principal(), scope.operation(), key.value(), ownerToken) == 1) {
          return true;
        }
        return sameCompletion(readLive(c, sql, scope, key), scope, key, ownerToken, response);
      });
    } catch (SQLException e) {
      throw failure("complete of " + LogRef.of(scope, key), e);
    }
  }

  /** @return whether {@code row} is the live record completed by {@code owner} with {@code response} */
  private boolean sameCompletion(@Nullable KeyRow row, Scope scope, IdempotencyKey key, String owner, StoredResponse response) {
    return row != null && row.completed() && owner.equals(row.owner)
        && protection.open(scope, key, Fingerprint.fromHex(row.fingerprint), row.response).equals(response);
  }

  /**
   * {@inheritDoc}
   *
   * <p>One conditional {@code DELETE}; when it removes no row, one read of the live record: none
   * (released before, or expired) is {@code true}, a record of another owner or a completed one
   * {@code false}.
   */
  @Override
  public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
    checkToken(ownerToken);
    try (Connection c = connection()) {
      KeyTableSql sql = statements();
      return ConflictRetry.run(attempt ->
          SqlRunner.update(c, sql.leaseRelease, scope.principal(), scope.operation(), key.value(), ownerToken) == 1
              || readLive(c, sql, scope, key) == null);
    } catch (SQLException e) {
      throw failure("release of " + LogRef.of(scope, key), e);
    }
  }

  /** @return the key's record if it has not expired, or {@code null} */
  private static @Nullable KeyRow readLive(Connection c, KeyTableSql sql, Scope scope, IdempotencyKey key) throws SQLException {
    KeyRow row = SqlRunner.readRow(c, sql.read, scope.principal(), scope.operation(), key.value());
    return row != null && row.live() ? row : null;
  }

  /**
   * {@inheritDoc}
   *
   * <p>One primary-key read in auto-commit mode (the latest committed record), on the database's
   * clock; no lock is taken and nothing is written.
   */
  @Override
  public KeyStatus status(Scope scope, IdempotencyKey key) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    try (Connection c = connection()) {
      return statusQuery.read(c, statements().dialect, scope, key);
    } catch (SQLException e) {
      throw failure("status of " + LogRef.of(scope, key), e);
    }
  }

  @Override
  public long purgeExpired(int batchSize) {
    try (Connection c = connection()) {
      return table.purgeExpired(c, batchSize);
    } catch (SQLException e) {
      throw failure("purge", e);
    }
  }

  /**
   * Creates the key table and its index if missing, then checks that it compares identities byte
   * for byte; the same as {@link JdbcIdempotency#createSchema(Connection)} on this store's table.
   * Thread-safe, and safe when many processes create the table at the same moment ({@link
   * SchemaCreation}).
   *
   * @param connection an open connection; in auto-commit mode the DDL is committed when this
   *     returns, otherwise it joins the open transaction
   * @throws IdemStoreException if the DDL fails, if another creator held the table's schema lock
   *     for longer than {@link SchemaCreation#LOCK_WAIT}, or if an existing table compares
   *     identities loosely
   */
  public void createSchema(Connection connection) {
    table.createSchema(connection);
  }

  /**
   * Borrows a connection in auto-commit mode. The first one decides the dialect and creates or
   * checks the table; afterwards a borrow costs no statement (on SQLite, a physical connection's
   * first borrow reads its busy timeout once).
   */
  /** The statements of the data source's dialect: set by {@link #connection()}, so only after a call of it. */
  private KeyTableSql statements() {
    return Objects.requireNonNull(sql, "connection() decides the statements");
  }

  private Connection connection() throws SQLException {
    Connection c = dataSource.getConnection();
    try {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      KeyTableSql statements = sql;
      if (statements == null) {
        statements = table.statements(Dialect.of(c)).sql;
        sql = statements;
      }
      // Creates the table if missing and allowed, and checks once that it compares byte for byte
      // (a table of an earlier version is refused with its migration); later calls cost nothing.
      table.ensureSchema(c, statements.dialect, true);
      statements.dialect.raiseWriteLockWait(c, sqliteBusyTimeout);
      return c;
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  private static void checkToken(String ownerToken) {
    Objects.requireNonNull(ownerToken, "ownerToken");
    if (ownerToken.isEmpty() || ownerToken.length() > 64) {
      throw new IllegalArgumentException("owner token must be 1 to 64 characters");
    }
  }

  private IdemStoreException failure(String what, SQLException e) {
    return new IdemStoreException(
        "lease store (" + table.name() + "): " + what + " failed: " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
  }

  /** Builds a {@link JdbcLeaseStore}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final DataSource dataSource;
    private String table = "idem_keys";
    private boolean createSchema = true;
    private Duration sqliteBusyTimeout = JdbcIdempotency.DEFAULT_SQLITE_BUSY_TIMEOUT;
    private ResponseProtection protection = ResponseProtection.none();

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * @param table a plain SQL identifier, as for {@link JdbcIdempotency.Builder#table(String)}
     * @throws IllegalArgumentException if it is not one
     */
    public Builder table(String table) {
      JdbcIdempotency.builder().table(table); // validates
      this.table = table;
      return this;
    }

    /** @param createSchema whether to create the table on first use (default {@code true}) */
    public Builder createSchema(boolean createSchema) {
      this.createSchema = createSchema;
      return this;
    }

    /**
     * @param timeout the least busy timeout of a SQLite connection (a lower one is raised to it), as
     *     for {@link JdbcIdempotency.Builder#sqliteBusyTimeout(Duration)}; 1 ms to 10 minutes
     * @throws IllegalArgumentException if out of range
     */
    public Builder sqliteBusyTimeout(Duration timeout) {
      JdbcIdempotency.builder().sqliteBusyTimeout(timeout); // validates
      this.sqliteBusyTimeout = timeout;
      return this;
    }

    /**
     * Protects stored responses at rest, as {@link JdbcIdempotency.Builder#responseProtection} does
     * (the same envelope, so one table can serve both modes with one keyring). A completion then
     * costs one read more (see {@link JdbcLeaseStore#complete}); a stored response that cannot be
     * authenticated makes {@link JdbcLeaseStore#claim} throw {@link
     * dev.idem.core.StoredResponseUnreadableException}, never replay.
     *
     * @param protection the keyring, or {@link ResponseProtection#none()} (the default: in clear)
     * @return this builder
     * @throws NullPointerException if {@code protection} is {@code null}
     */
    public Builder responseProtection(ResponseProtection protection) {
      this.protection = Objects.requireNonNull(protection, "protection");
      return this;
    }

    /** @return a new, thread-safe store */
    public JdbcLeaseStore build() {
      return new JdbcLeaseStore(this);
    }
  }
}
