package dev.idem.docs;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Outcome;
import dev.idem.jdbc.JdbcIdempotency;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/** Runs the plain-Java quick starts of the README and the operations snippets. */
class QuickStartTest {

  @TempDir Path dir;

  private SQLiteDataSource sqlite() throws Exception {
    SQLiteDataSource dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL)");
    }
    return dataSource;
  }

  private static long count(SQLiteDataSource dataSource, String sql) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void jdbcQuickStartStoresOneNoteAndReplaysTheRetry() throws Exception {
    SQLiteDataSource dataSource = sqlite();
    byte[] body = "{\"title\":\"milk\"}".getBytes(UTF_8);
    Outcome first = JdbcQuickStart.createNote(dataSource, "alice", "k-1", body, "milk");
    Outcome retry = JdbcQuickStart.createNote(dataSource, "alice", "k-1", "{ \"title\" : \"milk\" }".getBytes(UTF_8), "milk");

    assertThat(first.replayed()).isFalse();
    assertThat(retry.replayed()).isTrue();
    assertThat(retry.response().status()).isEqualTo(201);
    assertThat(retry.response().bodyAsString()).isEqualTo(first.response().bodyAsString()).isEqualTo("{\"id\":1}");
    assertThat(count(dataSource, "SELECT COUNT(*) FROM notes")).isEqualTo(1);
  }

  @Test
  void leaseQuickStartChargesOnce() {
    List<String> charges = new ArrayList<>();
    LeaseQuickStart.Payments payments = (cents, key) -> {
      charges.add(key);
      return new LeaseQuickStart.Charge("ch_" + charges.size(), cents);
    };
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    IdempotentRequest request = IdempotentRequest.ofJson("alice", "POST /charges", "pay-1", "{\"cents\":500}".getBytes(UTF_8));

    Outcome first = LeaseQuickStart.charge(store, payments, request, 500);
    Outcome retry = LeaseQuickStart.charge(store, payments, request, 500);

    assertThat(charges).containsExactly("pay-1");
    assertThat(first.replayed()).isFalse();
    assertThat(retry.replayed()).isTrue();
    assertThat(retry.response().bodyAsString()).isEqualTo("{\"charge\":\"ch_1\"}");
  }

  @Test
  void protectedRecordsReplayAndPurgeRuns() throws Exception {
    SQLiteDataSource dataSource = sqlite();
    byte[] key = new byte[32];
    new SecureRandom().nextBytes(key);
    JdbcIdempotency idem = OperationsSnippets.protection(dataSource, Base64.getEncoder().encodeToString(key));
    IdempotentRequest request = IdempotentRequest.ofJson("alice", "POST /notes", "k-2", "{}".getBytes(UTF_8));
    try (Connection c = dataSource.getConnection()) {
      Outcome first = idem.execute(c, request, tx -> dev.idem.core.StoredResponse.of(201, "{\"id\":7}"));
      Outcome retry = idem.execute(c, request, tx -> dev.idem.core.StoredResponse.of(500, "run twice"));
      assertThat(first.replayed()).isFalse();
      assertThat(retry.replayed()).isTrue();
      assertThat(retry.response().bodyAsString()).isEqualTo("{\"id\":7}");
      assertThat(OperationsSnippets.purge(idem, c)).isZero();
    }
    assertThat(count(dataSource, "SELECT COUNT(*) FROM idem_keys WHERE response LIKE '%{\"id\":7}%'")).isZero();
  }
}
