package dev.idem.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The database the HTTP lab makes for each WebFlux notes service: created with a name of its own,
 * reachable at {@link PostgresDatabase#jdbcUrl()}, gone after {@link PostgresDatabase#close()} even
 * with a session still open. On the local PostgreSQL ({@code IDEM_TEST_POSTGRES_URL} overrides);
 * skipped when it is not reachable, a failure under {@code CI=true}.
 */
class PostgresDatabaseTest {

  private static String server() {
    String url = System.getenv("IDEM_TEST_POSTGRES_URL");
    url = url == null || url.isBlank() ? PostgresDatabase.DEFAULT_SERVER_URL : url;
    try (Connection c = DriverManager.getConnection(url)) {
      return url;
    } catch (SQLException e) {
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException("PostgreSQL is not reachable at " + url, e);
      }
      Assumptions.abort("PostgreSQL is not reachable at " + url + ": " + e.getMessage());
      throw new AssertionError(e);
    }
  }

  private static boolean exists(String server, String name) throws SQLException {
    try (Connection c = DriverManager.getConnection(server);
        PreparedStatement st = c.prepareStatement("SELECT COUNT(*) FROM pg_database WHERE datname = ?")) {
      st.setString(1, name);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getInt(1) == 1;
      }
    }
  }

  @Test
  void aDatabaseOfItsOwnIsCreatedAndDroppedWithItsOpenSessions() throws Exception {
    String server = server();
    PostgresDatabase db = PostgresDatabase.create(server, "idem_test_lab");
    Connection open = null;
    try {
      assertThat(db.name()).startsWith("idem_test_lab_");
      assertThat(db.jdbcUrl()).startsWith(server.substring(0, server.lastIndexOf('/') + 1) + db.name());
      open = DriverManager.getConnection(db.jdbcUrl());
      try (var st = open.createStatement(); ResultSet rs = st.executeQuery("SELECT current_database()")) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo(db.name());
      }
      assertThat(exists(server, db.name())).isTrue();
    } finally {
      db.close(); // a service's session still open (a killed service's, say) does not keep it
      db.close();
      if (open != null) {
        open.close();
      }
    }
    assertThat(exists(server, db.name())).isFalse();
  }

  @Test
  void aNamePrefixThatIsNotAPlainIdentifierIsRefused() {
    assertThatThrownBy(() -> PostgresDatabase.create(PostgresDatabase.DEFAULT_SERVER_URL, "x; DROP DATABASE postgres"))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
