package dev.idem.examples.notes.webflux;

import dev.idem.examples.notes.NotesApiContract;
import dev.idem.lab.NotesServiceProcess;
import dev.idem.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The notes API contract ({@link NotesApiContract}) on the WebFlux service, served by Reactor Netty
 * on a random port, on a PostgreSQL database of each test class's own (created and dropped by
 * {@link TestDatabase}, reached by the service through R2DBC and by the contract's checks through
 * JDBC). Each mode runs it by subclassing. Skipped with a message when PostgreSQL is not reachable;
 * a failure under {@code CI=true}.
 */
@SpringBootTest(classes = NotesWebFluxApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
abstract class NotesWebFluxContract extends NotesApiContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @LocalServerPort int port;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    // called when the context is made, after TestDatabase created the class's database
    NotesServiceProcess.r2dbcProperties(DB.url()).forEach((property, value) -> registry.add(property, () -> value));
  }

  @Override
  protected int port() {
    return port;
  }

  @Override
  protected String expectedProduct() {
    return "PostgreSQL";
  }

  @Override
  protected String databaseProduct() throws Exception {
    try (Connection c = DB.target().open()) {
      return c.getMetaData().getDatabaseProductName();
    }
  }

  @Override
  protected long queryForLong(String sql) throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Runs {@code sql}; a {@code DELETE} from a table that does not exist yet deletes nothing. The
   * R2DBC engines create the key table with the first protected request (not at start-up, as the
   * JDBC ones do), so the contract's first clean-up meets no {@code idem_keys}.
   */
  @Override
  protected void update(String sql) throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
      st.executeUpdate(sql);
    } catch (SQLException e) {
      if (!(sql.startsWith("DELETE FROM ") && UNDEFINED_TABLE.equals(e.getSQLState()))) {
        throw e;
      }
    }
  }

  /** PostgreSQL's SQLState for a table that does not exist. */
  private static final String UNDEFINED_TABLE = "42P01";
}
