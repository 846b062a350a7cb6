package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

/**
 * The start-up column check of {@link NoteRepository} on MariaDB reads the {@code notes} table of
 * the connection's database, never a {@code notes} table of another database on the same server.
 * The test makes its own uniquely named decoy database, whose {@code notes} has {@code idem_ref},
 * and drops it.
 */
class NoteRepositoryMariadbSchemaTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Test
  void schemaCheckIgnoresSameNamedTableInAnotherDatabase() throws Exception {
    String decoy = decoyName();
    try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + decoy);
      try {
        st.execute("CREATE TABLE " + decoy + ".notes (id BIGINT PRIMARY KEY, idem_ref CHAR(64) NULL)");

        SingleConnectionDataSource ds = new SingleConnectionDataSource(DB.target().url(), true);
        try {
          new NoteRepository(new JdbcTemplate(ds));
        } finally {
          ds.destroy();
        }

        try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE()"
            + " AND table_name = 'notes' AND column_name = 'idem_ref' AND index_name = 'notes_idem_ref'")) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getInt(1)).as("our notes has idem_ref under its unique index").isEqualTo(1);
        }
      } finally {
        st.execute("DROP DATABASE IF EXISTS " + decoy);
      }
    }
  }

  static String decoyName() {
    return "decoy_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }
}
