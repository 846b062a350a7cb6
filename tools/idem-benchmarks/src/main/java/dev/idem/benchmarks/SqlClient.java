package dev.idem.benchmarks;

import java.sql.Connection;
import java.sql.SQLException;

/** A client whose only resource is one connection. */
abstract class SqlClient implements Workload.Client {
  final Connection connection;

  SqlClient(Connection connection) {
    this.connection = connection;
  }

  @Override
  public void close() throws SQLException {
    connection.close();
  }
}
