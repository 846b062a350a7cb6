package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PurgeCommandTest {

  @TempDir Path dir;

  private final CliRun cli = new CliRun();
  private final StringWriter out = cli.out;
  private final StringWriter err = cli.err;

  private int run(String... args) {
    return cli.run(args);
  }

  @Test
  void purgeHelpPublishesTheRetentionPlusTheExpiryMargin() {
    CliRun cli = new CliRun();
    assertThat(cli.run("purge", "--help")).isZero();
    assertThat(cli.out.toString().replaceAll("\\s+", " "))
        .contains("between the retention and the retention + 1 minute after its completion")
        .contains("section 2.3");
  }

  @Test
  void purgeRemovesExpiredRecordsAndPrintsTheCount() throws Exception {
    String url = "jdbc:sqlite:" + dir.resolve("keys.db");
    JdbcIdempotency idem = JdbcIdempotency.builder().build();
    try (Connection c = DriverManager.getConnection(url)) {
      for (int i = 0; i < 5; i++) {
        IdempotentRequest r = IdempotentRequest.ofJson("p", "op", "k" + i, "{}".getBytes(StandardCharsets.UTF_8));
        idem.execute(c, r, conn -> StoredResponse.of(201, "{}"));
      }
      try (Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE idem_keys SET expires_at = 0 WHERE idem_key IN ('k0', 'k1', 'k2')");
      }
    }
    assertThat(run("purge", "--db", url, "--batch", "2")).as(err.toString()).isZero();
    assertThat(out.toString()).isEqualTo("removed 3 expired records from idem_keys" + System.lineSeparator());
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM idem_keys")) {
      rs.next();
      assertThat(rs.getInt(1)).isEqualTo(2);
    }
  }

  @Test
  void aBadTableNameOrBatchIsAClearError() {
    assertThat(run("purge", "--db", "jdbc:sqlite:" + dir.resolve("x.db"), "--table", "x;drop")).isEqualTo(2);
    assertThat(err.toString()).contains("plain SQL identifier");
    assertThat(run("purge", "--db", "jdbc:sqlite:" + dir.resolve("x.db"), "--batch", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("--batch must be between 1 and 100000");
  }

  @Test
  void aMistypedDatabaseOrTableIsAnErrorNotASilentZero() {
    assertThat(run("purge", "--db", "jdbc:sqlite:" + dir.resolve("empty.db"))).isEqualTo(2);
    assertThat(err.toString()).contains("there is no table idem_keys").contains("check --db and --table");
    assertThat(out.toString()).isEmpty();
  }
}
