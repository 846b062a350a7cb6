package dev.idem.examples.notes.servlet;

import dev.idem.examples.notes.NotesApiContract;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * The notes API contract on the plain servlet notes service ({@link NotesServer}: Jetty, the filter
 * in transactional mode on plain JDBC, no Spring). Each database runs it by subclassing and naming
 * its JDBC URL.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class NotesServletContract extends NotesApiContract {

  private NotesServer server;

  /** @return the JDBC URL of the database the service runs on */
  protected abstract String jdbcUrl() throws Exception;

  @BeforeAll
  void startTheService() throws Exception {
    server = NotesServer.start(jdbcUrl(), 0);
  }

  @AfterAll
  void stopTheService() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  @Override
  protected int port() {
    return server.port();
  }

  @Override
  protected String databaseProduct() throws Exception {
    try (Connection c = server.dataSource().getConnection()) {
      return c.getMetaData().getDatabaseProductName();
    }
  }

  @Override
  protected long queryForLong(String sql) throws Exception {
    try (Connection c = server.dataSource().getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Override
  protected void update(String sql) throws Exception {
    try (Connection c = server.dataSource().getConnection(); Statement st = c.createStatement()) {
      st.executeUpdate(sql);
    }
  }
}
