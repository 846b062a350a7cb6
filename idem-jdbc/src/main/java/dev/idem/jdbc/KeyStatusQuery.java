package dev.idem.jdbc;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatus;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Map;

/**
 * The key status read of the key table ({@link dev.idem.core.KeyStatusReader}), shared by {@link
 * JdbcIdempotency} and {@link JdbcLeaseStore}: one primary-key {@code SELECT} without a lock, with
 * the database's time, mapped to a {@link KeyStatus}.
 *
 * <ul>
 *   <li>No row, an expired one ({@code now >= expires_at}), or a claim without a lease and without
 *       a response (one a broken transaction left, which transactional mode counts as absent):
 *       {@link KeyStatus.Absent}.
 *   <li>A row with a response: {@link KeyStatus.Completed}, with the clear {@code status} column
 *       or, when the response is protected at rest (the column is then NULL), the status of the
 *       opened response; {@code created_at}, which a completion sets to its own time, as the
 *       completion time.
 *   <li>A lease-mode claim: {@link KeyStatus.InProgress} with its lease.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 */
final class KeyStatusQuery {

  private final String table;
  private final ResponseProtection protection;
  /** The statement per dialect, made at the first use of each. */
  private final Map<Dialect, String> statements = new ConcurrentHashMap<>();

  /**
   * @param table the key table, a plain identifier already validated
   * @param protection how stored responses are opened, never {@code null}
   */
  KeyStatusQuery(String table, ResponseProtection protection) {
    this.table = table;
    this.protection = protection;
  }

  /**
   * Reads the status on {@code connection} (the latest committed row in auto-commit mode; inside a
   * transaction, what its isolation level lets it see).
   *
   * @throws SQLException if the read fails
   * @throws dev.idem.core.StoredResponseUnreadableException if a protected response cannot be opened
   * @throws IdemStoreException if the row is not a valid record (a corrupt fingerprint)
   */
  KeyStatus read(Connection connection, Dialect dialect, Scope scope, IdempotencyKey key) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(statements.computeIfAbsent(dialect, d ->
        "SELECT fingerprint, owner_token, lease_until, status, response, created_at, expires_at, "
            + d.nowMillis() + " FROM " + table + " WHERE principal = ? AND operation = ? AND idem_key = ?"))) {
      ps.setString(1, scope.principal());
      ps.setString(2, scope.operation());
      ps.setString(3, key.value());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return KeyStatus.absent();
        }
        String fingerprintHex = rs.getString(1);
        rs.getString(2);
        long leaseUntil = rs.getLong(3);
        boolean hasLease = !rs.wasNull();
        int clearStatus = rs.getInt(4);
        boolean statusInClear = !rs.wasNull();
        byte[] response = rs.getBytes(5);
        long createdAt = rs.getLong(6);
        long expiresAt = rs.getLong(7);
        long now = rs.getLong(8);
        if (now >= expiresAt || (response == null && !hasLease)) {
          return KeyStatus.absent();
        }
        Fingerprint fingerprint = fingerprint(fingerprintHex, scope, key);
        if (response != null) {
          int status = statusInClear && !ResponseProtection.isProtected(response)
              ? clearStatus
              : protection.open(scope, key, fingerprint, response).status();
          return new KeyStatus.Completed(fingerprint, status, Instant.ofEpochMilli(createdAt), Instant.ofEpochMilli(expiresAt));
        }
        return new KeyStatus.InProgress(fingerprint, Instant.ofEpochMilli(leaseUntil), Duration.ofMillis(Math.max(0, leaseUntil - now)),
            null, Instant.ofEpochMilli(expiresAt));
      }
    }
  }

  private Fingerprint fingerprint(String hex, Scope scope, IdempotencyKey key) {
    try {
      return Fingerprint.fromHex(hex);
    } catch (RuntimeException e) {
      throw new IdemStoreException("idempotency store (" + table + "): the record of "
          + dev.idem.jdbc.internal.LogRef.of(scope, key) + " holds a corrupt fingerprint", e);
    }
  }
}
