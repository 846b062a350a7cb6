package dev.idem.benchmarks;

import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.StoredResponseCodec;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The best hand-written protected transaction, "key-last": the effect INSERT, then the INSERT of
 * the key row with its stored response, one commit. The key table's primary key serializes
 * duplicates: a duplicate's key INSERT waits for the winner and fails on its key, the
 * duplicate rolls back (its effect with it) and reads the winner's response. The connection
 * stays in manual-commit mode, so no auto-commit switching per request.
 */
final class KeyLast extends EffectRows {

  KeyLast(SqlBackend db) {
    super(db, Workloads.KEY_LAST, "bench_keylast_fx");
  }

  @Override
  public void setUp() throws SQLException {
    effects.recreate(false);
    Workloads.recreateKeyTable(db, "bench_keylast");
  }

  @Override
  public Client client() throws SQLException {
    String insertKey = "INSERT INTO bench_keylast"
        + " (principal, operation, idem_key, fingerprint, state, status, response, created_at, expires_at)"
        + " VALUES (?, ?, ?, ?, 'COMPLETED', ?, ?, ?, ?)";
    String select = "SELECT fingerprint, response FROM bench_keylast WHERE principal = ? AND operation = ? AND idem_key = ?";
    Connection c = db.open();
    c.setAutoCommit(false);
    return new SqlClient(c) {
      @Override
      public void run(String key) throws SQLException {
        IdempotentRequest r = Requests.request(key);
        try {
          StoredResponse response = Requests.created(effects.insert(connection, key));
          long now = System.currentTimeMillis();
          try (PreparedStatement ps = connection.prepareStatement(insertKey)) {
            ps.setString(1, r.scope().principal());
            ps.setString(2, r.scope().operation());
            ps.setString(3, r.key().value());
            ps.setString(4, r.fingerprint().hex());
            ps.setInt(5, response.status());
            ps.setBytes(6, StoredResponseCodec.encode(response));
            ps.setLong(7, now);
            ps.setLong(8, now + 86_400_000L);
            ps.executeUpdate();
          }
          connection.commit();
          return;
        } catch (SQLException e) {
          connection.rollback();
          if (!Workloads.isDuplicateKey(e)) {
            throw e;
          }
        }
        try (PreparedStatement ps = connection.prepareStatement(select)) {
          ps.setString(1, r.scope().principal());
          ps.setString(2, r.scope().operation());
          ps.setString(3, r.key().value());
          try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
              throw new SQLException("duplicate key but no row for " + key);
            }
            if (!rs.getString(1).equals(r.fingerprint().hex())) {
              throw new IdempotencyKeyReusedException(r.scope(), r.key());
            }
            StoredResponseCodec.decode(rs.getBytes(2));
          }
        } finally {
          connection.commit(); // ends the read transaction
        }
      }
    };
  }
}
