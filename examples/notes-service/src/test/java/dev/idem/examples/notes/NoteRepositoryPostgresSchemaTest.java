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
 * The start-up column check of {@link NoteRepository} on PostgreSQL reads the {@code notes} table
 * the {@code search_path} resolves to, never a {@code notes} table of another schema. The test
 * makes its own uniquely named decoy schema, whose {@code notes} has {@code idem_ref}, and drops it.
 */
class NoteRepositoryPostgresSchemaTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Test
  void schemaCheckIgnoresSameNamedTableInAnotherSchema() throws Exception {
    String decoy = decoyName();
    try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE SCHEMA " + decoy);
      try {
        st.execute("CREATE TABLE " + decoy + ".notes (id BIGINT PRIMARY KEY, idem_ref CHAR(64) NULL)");

        SingleConnectionDataSource ds = new SingleConnectionDataSource(DB.target().url(), true);
        try {
          new NoteRepository(new JdbcTemplate(ds));
        } finally {
          ds.destroy();
        }

        try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM pg_indexes WHERE schemaname = 'public'"
            + " AND tablename = 'notes' AND indexname = 'notes_idem_ref'")) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getInt(1)).as("public.notes has its unique index on idem_ref").isEqualTo(1);
        }
        try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'public'"
            + " AND table_name = 'notes' AND column_name = 'idem_ref'")) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getInt(1)).isEqualTo(1);
        }
      } finally {
        st.execute("DROP SCHEMA IF EXISTS " + decoy + " CASCADE");
      }
    }
  }

  static String decoyName() {
    return "decoy_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }
}
