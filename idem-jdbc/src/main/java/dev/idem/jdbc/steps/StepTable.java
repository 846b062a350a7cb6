package dev.idem.jdbc.steps;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseLostException;
import dev.idem.core.Scope;
import dev.idem.core.steps.Steps;
import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The step table of {@link JdbcStepOperations}: a step's row written in one transaction with its
 * writes and the fenced renewal of the key's lease, and the recorded steps of an operation read
 * back. Immutable; thread-safe.
 */
final class StepTable {

  private final DataSource dataSource;
  private final String keyTable;
  private final String stepTable;
  private final Duration lease;
  private final Duration retention;

  StepTable(DataSource dataSource, String keyTable, String stepTable, Duration lease, Duration retention) {
    this.dataSource = dataSource;
    this.keyTable = keyTable;
    this.stepTable = stepTable;
    this.lease = lease;
    this.retention = retention;
  }

  static void checkResult(String name, String result) {
    if (result.length() > Steps.MAX_RESULT_CHARS) {
      throw new IllegalArgumentException("the result of step '" + name + "' is " + result.length() + " characters, more than "
          + Steps.MAX_RESULT_CHARS);
    }
  }

  /**
   * One transaction: {@code body}'s writes (or the fixed {@code result}), the step's row, and the
   * fenced renewal of the lease.
   *
   * @return the recorded result
   */
  String record(IdempotentRequest request, String owner, String name, @Nullable String result, Steps.@Nullable LocalStep body)
      throws Exception {
    try (Connection c = connection()) {
      Dialect d = Dialect.of(c);
      c.setAutoCommit(false);
      try {
        // The fence first: it renews this run's lease only while this run holds it, and locks the
        // key's row, so a run that took the operation over waits for this one to end.
        if (!renewLease(c, d, request, owner)) {
          throw new LeaseLostException(request.key(), "step " + name);
        }
        // the callers give exactly one of a result and a body
        String value = body == null ? Objects.requireNonNull(result, "result") : Objects.requireNonNull(body.run(c), "step " + name + " returned null");
        checkResult(name, value);
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + stepTable
            + " (principal, operation, idem_key, step, result, created_at) VALUES (?, ?, ?, ?, ?, " + d.nowMillis() + ")")) {
          bindKey(ps, request.scope(), request.key(), 1);
          ps.setString(4, name);
          ps.setString(5, value);
          ps.executeUpdate();
        }
        c.commit();
        return value;
      } catch (Exception | Error e) {
        try {
          c.rollback();
        } catch (SQLException ignored) {
          // the connection is broken; nothing of the step committed
        }
        throw e;
      } finally {
        try {
          c.setAutoCommit(true);
        } catch (SQLException ignored) {
          // the pool discards a broken connection
        }
      }
    } catch (SQLException e) {
      throw failure("recording step " + name, e);
    }
  }

  private boolean renewLease(Connection c, Dialect d, IdempotentRequest request, String owner) throws SQLException {
    String now = d.nowMillis();
    long keep = lease.toMillis() + retention.toMillis();
    try (PreparedStatement ps = c.prepareStatement("UPDATE " + keyTable + " SET lease_until = " + now + " + ?, expires_at = CASE WHEN"
        + " expires_at < " + now + " + ? THEN " + now + " + ? ELSE expires_at END WHERE principal = ? AND operation = ? AND idem_key = ?"
        + " AND owner_token = ? AND state = 'IN_PROGRESS' AND expires_at > " + now)) {
      ps.setLong(1, lease.toMillis());
      ps.setLong(2, keep);
      ps.setLong(3, keep);
      bindKey(ps, request.scope(), request.key(), 4);
      ps.setString(7, owner);
      return ps.executeUpdate() == 1;
    }
  }

  Map<String, String> recorded(Scope scope, IdempotencyKey key) {
    Map<String, String> steps = new HashMap<>();
    try (Connection c = connection();
        PreparedStatement ps = c.prepareStatement("SELECT step, result FROM " + stepTable + " WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      bindKey(ps, scope, key, 1);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          steps.put(rs.getString(1), rs.getString(2));
        }
      }
    } catch (SQLException e) {
      throw failure("reading the recorded steps", e);
    }
    return steps;
  }

  static void bindKey(PreparedStatement ps, Scope scope, IdempotencyKey key, int first) throws SQLException {
    ps.setString(first, scope.principal());
    ps.setString(first + 1, scope.operation());
    ps.setString(first + 2, key.value());
  }

  Connection connection() throws SQLException {
    Connection c = dataSource.getConnection();
    if (!c.getAutoCommit()) {
      c.setAutoCommit(true);
    }
    return c;
  }

  IdemStoreException failure(String what, SQLException e) {
    return new IdemStoreException("step store (" + stepTable + "): " + what + " failed: " + e.getMessage() + " [SQLState "
        + e.getSQLState() + "]", e);
  }
}
