package dev.idem.testkit;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.JdbcTarget;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;

/**
 * The lease contract on {@link JdbcLeaseStore} over one database: the store on table {@value
 * #TABLE}, and the raw column access the response-protection tests need.
 */
abstract class JdbcLeaseContract extends LeaseContract {

  static final String TABLE = "lease_keys";

  private JdbcLeaseStore store;

  /** @return the database under test */
  protected abstract JdbcTarget target();

  @Override
  protected synchronized LeaseStore store() {
    if (store == null) {
      store = JdbcLeaseStore.builder(target().dataSource()).table(TABLE).build();
    }
    return store;
  }

  @Override
  protected synchronized KeyStatusReader statusReader() {
    store(); // creates the store and its table
    return store;
  }

  @Override
  protected LeaseStore protectedStore(ResponseProtection protection) {
    store(); // creates the table
    return JdbcLeaseStore.builder(target().dataSource()).table(TABLE).responseProtection(protection).build();
  }

  @Override
  protected byte[] rawResponse(Scope scope, IdempotencyKey key) throws Exception {
    try (Connection c = target().open();
        PreparedStatement ps = c.prepareStatement(
            "SELECT response, status FROM " + TABLE + " WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      ps.setString(1, scope.principal());
      ps.setString(2, scope.operation());
      ps.setString(3, key.value());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        byte[] response = rs.getBytes(1);
        rs.getInt(2);
        if (response != null && ResponseProtection.isProtected(response) && !rs.wasNull()) {
          throw new AssertionError("a protected record keeps its status in the clear-text status column");
        }
        return response;
      }
    }
  }

  @Override
  protected void writeRawResponse(Scope scope, IdempotencyKey key, byte[] bytes) throws Exception {
    try (Connection c = target().open();
        PreparedStatement ps = c.prepareStatement(
            "UPDATE " + TABLE + " SET response = ? WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      ps.setBytes(1, bytes);
      ps.setString(2, scope.principal());
      ps.setString(3, scope.operation());
      ps.setString(4, key.value());
      if (ps.executeUpdate() != 1) {
        throw new AssertionError("no record to overwrite");
      }
    }
  }
}
