package dev.idem.jdbc;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.internal.StoredResponseCodec;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.internal.LogRef;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * A {@link LeaseStore} on SQLite, PostgreSQL or MySQL/MariaDB, for lease mode: effects outside the
 * database, with claims held by owner tokens until their lease runs out.
 *
 * <p>It uses the same table layout as {@link JdbcIdempotency} (the shipped schema files), so one
 * table can serve both modes. Each operation borrows a connection from the {@link DataSource} and
 * runs one short transaction of its own:
 *
 * <ul>
 *   <li>claim: inserts the claim (PostgreSQL and SQLite {@code ON CONFLICT DO NOTHING}, MySQL a
 *       plain {@code INSERT} whose duplicate-key error is expected); if the key exists, reads the
 *       row under a lock ({@code FOR UPDATE}, {@code LOCK IN SHARE MODE}, or SQLite's {@code BEGIN
 *       IMMEDIATE}) together with the database's time, and decides as {@link LeaseStore#claim}
 *       says;
 *   <li>complete and release: one conditional statement each, matching the owner token (fencing);
 *       when it changes no row, one read tells a repetition by the same owner (already completed
 *       with an equal response, or already released: success) from a lost claim.
 * </ul>
 *
 * <p>Every time comparison uses the database's clock ({@link Dialect#nowMillis()}), so application
 * nodes with skewed clocks still agree on who holds a lease. Immutable after {@link Builder#build()}
 * and thread-safe.
 */
public final class JdbcLeaseStore implements LeaseStore {

  private static final int MAX_TRIES = 5;

  private final DataSource dataSource;
  private final JdbcIdempotency table;
  private final boolean createSchema;
  private final Duration sqliteBusyTimeout;
  private final ResponseProtection protection;
  private volatile boolean schemaReady;

  private JdbcLeaseStore(Builder b) {
    this.dataSource = b.dataSource;
    this.table = JdbcIdempotency.builder().table(b.table).createSchema(b.createSchema).build();
    this.createSchema = b.createSchema;
    this.sqliteBusyTimeout = b.sqliteBusyTimeout;
    this.protection = b.protection;
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
    try (Connection c = connection()) {
      Dialect dialect = Dialect.detect(c);
      Sql sql = new Sql(dialect, table.table());
      for (int attempt = 1; ; attempt++) {
        Transactions.begin(c, dialect, sqliteBusyTimeout);
        boolean done = false;
        try {
          ClaimResult result = claimInTransaction(c, sql, request, ownerToken, lease, retention, protection);
          if (result != null) {
            Transactions.commit(c, dialect);
            done = true;
            return result;
          }
        } catch (SQLException e) {
          if (!Transactions.isTransientConflict(e) || attempt >= MAX_TRIES) {
            throw e;
          }
        } finally {
          if (!done) {
            Transactions.rollbackQuietly(c, dialect);
          }
          Transactions.end(c, dialect);
        }
        if (attempt >= MAX_TRIES) {
          throw new SQLException("the record kept changing during " + MAX_TRIES + " claim attempts");
        }
      }
    } catch (SQLException e) {
      throw failure("claim of " + LogRef.of(request.scope(), request.key()), e);
    }
  }

  /** @return the result, or {@code null} when the row vanished between the insert and the read */
  private static ClaimResult claimInTransaction(
      Connection c, Sql sql, IdempotentRequest r, String owner, Duration lease, Duration retention, ResponseProtection protection)
      throws SQLException {
    if (sql.insert(c, r, owner, lease, retention)) {
      return ClaimResult.claimed(r.fingerprint(), false);
    }
    Row row = sql.lockAndRead(c, r.scope(), r.key());
    if (row == null) {
      return null;
    }
    Fingerprint recorded = Fingerprint.fromHex(row.fingerprint);
    if (row.now >= row.expiresAt) {
      sql.overwrite(c, r, owner, lease, retention);
      return ClaimResult.claimed(r.fingerprint(), false);
    }
    if (row.response != null) {
      return ClaimResult.completed(recorded, protection.open(r.scope(), r.key(), recorded, row.response));
    }
    if (owner.equals(row.owner)) {
      sql.takeOver(c, r, owner, lease, retention);
      return ClaimResult.claimed(recorded, false);
    }
    if (row.now >= row.leaseUntil && recorded.equals(r.fingerprint())) {
      sql.takeOver(c, r, owner, lease, retention);
      return ClaimResult.claimed(recorded, true);
    }
    return ClaimResult.inProgress(recorded, Duration.ofMillis(Math.max(0, row.leaseUntil - row.now)));
  }

  /**
   * {@inheritDoc}
   *
   * <p>One conditional {@code UPDATE}; when it changes no row, one read of the live record: already
   * completed by {@code ownerToken} with an equal response (a repetition after a lost
   * acknowledgement) is {@code true}, anything else {@code false}.
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
    try (Connection c = connection()) {
      Sql sql = new Sql(Dialect.detect(c), table.table());
      byte[] stored;
      if (protection.enabled()) {
        Row row = sql.readLive(c, scope, key);
        if (row == null || !ownerToken.equals(row.owner)) {
          return false;
        }
        if (row.response != null) {
          return sameCompletion(row, scope, key, ownerToken, response);
        }
        stored = protection.seal(scope, key, Fingerprint.fromHex(row.fingerprint), response);
      } else {
        stored = StoredResponseCodec.encode(response);
      }
      try (PreparedStatement ps = c.prepareStatement(sql.complete)) {
        Integer status = protection.clearStatus(response);
        if (status == null) {
          ps.setNull(1, java.sql.Types.INTEGER);
        } else {
          ps.setInt(1, status);
        }
        ps.setBytes(2, stored);
        ps.setLong(3, retention.toMillis());
        ps.setString(4, scope.principal());
        ps.setString(5, scope.operation());
        ps.setString(6, key.value());
        ps.setString(7, ownerToken);
        if (ps.executeUpdate() == 1) {
          return true;
        }
      }
      return sameCompletion(sql.readLive(c, scope, key), scope, key, ownerToken, response);
    } catch (SQLException e) {
      throw failure("complete of " + LogRef.of(scope, key), e);
    }
  }

  /** @return whether {@code row} is the live record completed by {@code owner} with {@code response} */
  private boolean sameCompletion(Row row, Scope scope, IdempotencyKey key, String owner, StoredResponse response) {
    return row != null && row.response != null && owner.equals(row.owner)
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
      Sql sql = new Sql(Dialect.detect(c), table.table());
      try (PreparedStatement ps = c.prepareStatement(sql.release)) {
        ps.setString(1, scope.principal());
        ps.setString(2, scope.operation());
        ps.setString(3, key.value());
        ps.setString(4, ownerToken);
        if (ps.executeUpdate() == 1) {
          return true;
        }
      }
      return sql.readLive(c, scope, key) == null;
    } catch (SQLException e) {
      throw failure("release of " + LogRef.of(scope, key), e);
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

  private Connection connection() throws SQLException {
    Connection c = dataSource.getConnection();
    try {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      if (!schemaReady) {
        synchronized (this) {
          if (!schemaReady) {
            if (createSchema) {
              table.createSchema(c); // creates it if missing, then checks it compares byte for byte
              schemaReady = true;
            } else if (table.tableExists(c)) {
              table.checkSchema(c); // a table of an earlier version is refused with its migration
              schemaReady = true;
            }
          }
        }
      }
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
        "lease store (" + table.table() + "): " + what + " failed: " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
  }

  /** A row read under lock, with the database's time. */
  private static final class Row {
    String fingerprint;
    String owner;
    long leaseUntil;
    long expiresAt;
    byte[] response;
    long now;
  }

  /** The statements of one dialect. */
  private static final class Sql {
    final Dialect dialect;
    final String insert;
    final String read;
    final String overwrite;
    final String takeOver;
    final String complete;
    final String release;
    final String readLive;

    Sql(Dialect dialect, String t) {
      this.dialect = dialect;
      String now = dialect.nowMillis();
      String pk = " WHERE principal = ? AND operation = ? AND idem_key = ?";
      String values =
          " (principal, operation, idem_key, fingerprint, state, owner_token, lease_until, created_at, expires_at)"
              + " VALUES (?, ?, ?, ?, 'IN_PROGRESS', ?, " + now + " + ?, " + now + ", " + now + " + ?)";
      this.insert =
          dialect == Dialect.MYSQL
              // IGNORE: a duplicate is 0 rows, not an error that the driver logs at WARN with the
              // principal and key (see JdbcIdempotency)
              ? "INSERT IGNORE INTO " + t + values
              : "INSERT INTO " + t + values + " ON CONFLICT (principal, operation, idem_key) DO NOTHING";
      String lock = dialect == Dialect.POSTGRESQL ? " FOR UPDATE" : dialect == Dialect.MYSQL ? " LOCK IN SHARE MODE" : "";
      this.read =
          "SELECT fingerprint, owner_token, lease_until, expires_at, response, " + now + " FROM " + t + pk + lock;
      this.overwrite =
          "UPDATE " + t + " SET fingerprint = ?, state = 'IN_PROGRESS', owner_token = ?, lease_until = " + now + " + ?,"
              + " status = NULL, response = NULL, created_at = " + now + ", expires_at = " + now + " + ?" + pk;
      this.takeOver =
          "UPDATE " + t + " SET owner_token = ?, lease_until = " + now + " + ?,"
              + " expires_at = CASE WHEN expires_at < " + now + " + ? THEN " + now + " + ? ELSE expires_at END" + pk;
      this.complete =
          "UPDATE " + t + " SET state = 'COMPLETED', status = ?, response = ?, lease_until = NULL, expires_at = " + now + " + ?"
              + pk + " AND state = 'IN_PROGRESS' AND owner_token = ? AND expires_at > " + now;
      this.release =
          "DELETE FROM " + t + pk + " AND state = 'IN_PROGRESS' AND owner_token = ? AND expires_at > " + now;
      this.readLive = "SELECT owner_token, response, fingerprint FROM " + t + pk + " AND expires_at > " + now;
    }

    /**
     * @return the record's owner token, response (null while in progress) and fingerprint, or
     *     {@code null} when there is no live record
     */
    Row readLive(Connection c, Scope scope, IdempotencyKey key) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(readLive)) {
        ps.setString(1, scope.principal());
        ps.setString(2, scope.operation());
        ps.setString(3, key.value());
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return null;
          }
          Row row = new Row();
          row.owner = rs.getString(1);
          row.response = rs.getBytes(2);
          row.fingerprint = rs.getString(3);
          return row;
        }
      }
    }

    boolean insert(Connection c, IdempotentRequest r, String owner, Duration lease, Duration retention) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(insert)) {
        ps.setString(1, r.scope().principal());
        ps.setString(2, r.scope().operation());
        ps.setString(3, r.key().value());
        ps.setString(4, r.fingerprint().hex());
        ps.setString(5, owner);
        ps.setLong(6, lease.toMillis());
        ps.setLong(7, retention.toMillis());
        return ps.executeUpdate() == 1;
      } catch (SQLException e) {
        if (dialect == Dialect.MYSQL && e.getErrorCode() == 1062) {
          return false; // the key exists; MySQL rolled back this statement only
        }
        throw e;
      }
    }

    Row lockAndRead(Connection c, Scope scope, IdempotencyKey key) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(read)) {
        ps.setString(1, scope.principal());
        ps.setString(2, scope.operation());
        ps.setString(3, key.value());
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return null;
          }
          Row row = new Row();
          row.fingerprint = rs.getString(1);
          row.owner = rs.getString(2);
          row.leaseUntil = rs.getLong(3);
          row.expiresAt = rs.getLong(4);
          row.response = rs.getBytes(5);
          row.now = rs.getLong(6);
          return row;
        }
      }
    }

    void overwrite(Connection c, IdempotentRequest r, String owner, Duration lease, Duration retention) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(overwrite)) {
        ps.setString(1, r.fingerprint().hex());
        ps.setString(2, owner);
        ps.setLong(3, lease.toMillis());
        ps.setLong(4, retention.toMillis());
        ps.setString(5, r.scope().principal());
        ps.setString(6, r.scope().operation());
        ps.setString(7, r.key().value());
        ps.executeUpdate();
      }
    }

    void takeOver(Connection c, IdempotentRequest r, String owner, Duration lease, Duration retention) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(takeOver)) {
        ps.setString(1, owner);
        ps.setLong(2, lease.toMillis());
        ps.setLong(3, retention.toMillis());
        ps.setLong(4, retention.toMillis());
        ps.setString(5, r.scope().principal());
        ps.setString(6, r.scope().operation());
        ps.setString(7, r.key().value());
        ps.executeUpdate();
      }
    }
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
