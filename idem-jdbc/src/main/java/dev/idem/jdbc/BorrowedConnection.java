package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * A connection borrowed from a {@link JdbcIdempotency.Builder#dataSource DataSource} for one call
 * of {@link JdbcIdempotency} that takes none, in auto-commit mode, and given back. Stateless.
 */
final class BorrowedConnection {

  private BorrowedConnection() {}

  /**
   * Runs {@code body} on a connection of {@code dataSource}, in auto-commit mode, and closes it
   * (back to its pool).
   *
   * @param method the name of the method's {@code Connection} variant, for the message when there
   *     is no data source
   * @throws IllegalStateException if {@code dataSource} is {@code null}
   * @throws IdemStoreException if no connection can be had, or setting or closing it fails
   */
  static <T> T apply(@Nullable DataSource dataSource, String method, Function<Connection, T> body) {
    if (dataSource == null) {
      throw new IllegalStateException("no DataSource configured: use " + method + "(Connection, ...) or Builder.dataSource");
    }
    try (Connection connection = dataSource.getConnection()) {
      if (!connection.getAutoCommit()) {
        connection.setAutoCommit(true);
      }
      return body.apply(connection);
    } catch (SQLException e) {
      throw new IdemStoreException("cannot get a connection from the data source: " + e.getMessage(), e);
    }
  }
}
