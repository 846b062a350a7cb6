package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Finds the {@link Dialect} of a connection: by its driver's connection class, decided once per
 * class, or by the database's product name. Each dialect says which drivers and products are its
 * own; nothing here names a database. Stateless apart from the per-class cache; thread-safe.
 */
final class DialectDetection {

  /** Every dialect, in the order they are asked. */
  static final List<Dialect> ALL = List.of(Dialect.SQLITE, Dialect.POSTGRESQL, Dialect.MYSQL, Dialect.H2);

  /**
   * The dialects of the JDBC drivers' own connection classes, decided once per class: a driver's
   * connection class speaks to one kind of database. {@code null} for a class no dialect claims.
   */
  private static final ClassValue<Dialect> BY_DRIVER_CLASS = new ClassValue<>() {
    @Override
    protected @Nullable Dialect computeValue(Class<?> type) {
      String name = type.getName();
      for (Dialect d : ALL) {
        if (d.drivesConnectionClass(name)) {
          return d;
        }
      }
      return null;
    }
  };

  private DialectDetection() {}

  /** As {@link Dialect#of(Connection)}. */
  static Dialect of(Connection connection) {
    Dialect known = BY_DRIVER_CLASS.get(connection.getClass());
    if (known != null) {
      return known;
    }
    try {
      if (connection.isWrapperFor(Connection.class)) {
        Connection inner = connection.unwrap(Connection.class);
        if (inner != null && inner != connection) {
          known = BY_DRIVER_CLASS.get(inner.getClass());
          if (known != null) {
            return known;
          }
        }
      }
    } catch (SQLException e) {
      // not unwrappable: ask the connection itself
    }
    return detect(connection);
  }

  /** As {@link Dialect#detect(Connection)}. */
  static Dialect detect(Connection connection) {
    String product;
    try {
      product = connection.getMetaData().getDatabaseProductName();
    } catch (SQLException e) {
      throw new IdemStoreException("cannot read the database product name: " + e.getMessage(), e);
    }
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    for (Dialect d : ALL) {
      if (d.isProduct(p)) {
        return d;
      }
    }
    throw new IdemStoreException("unsupported database '" + product
        + "': Idem's JDBC store supports SQLite, PostgreSQL, MySQL, MariaDB and H2", null);
  }
}
