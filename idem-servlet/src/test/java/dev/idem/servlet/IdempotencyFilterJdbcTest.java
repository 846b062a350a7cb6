package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.SimpleDataSource;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * The same filter over {@link JdbcLeaseStore} on an SQLite file: replays come from the table, and a
 * store that cannot be used gives 503 with the handler not run and no record left behind.
 */
class IdempotencyFilterJdbcTest {

  @TempDir Path dir;
  Switchable dataSource;
  TestApp app;
  TestServer server;

  @BeforeEach
  void start() throws Exception {
    SQLiteDataSource sqlite = new SQLiteDataSource();
    sqlite.setUrl("jdbc:sqlite:" + dir.resolve("idem.db"));
    sqlite.setBusyTimeout(50); // a locked database fails fast instead of after sqlite-jdbc's 3 s
    dataSource = new Switchable(sqlite);
    JdbcLeaseStore store = JdbcLeaseStore.builder(dataSource).sqliteBusyTimeout(Duration.ofMillis(50)).build();
    app = new TestApp();
    server = new TestServer(IdempotencyFilterConfig.builder(store).required("POST", "/notes").build(), app);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  HttpResponse<byte[]> post(String key, String json) throws Exception {
    return server.send(server.request("/notes").header("Idempotency-Key", key)
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString(json)).build());
  }

  long rows(String where) throws SQLException {
    try (Connection c = dataSource.target.getConnection(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM idem_keys" + where)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void replaysFromTheTable() throws Exception {
    HttpResponse<byte[]> first = post("\"jdbc-1\"", "{\"title\":\"a\"}");
    assertThat(first.statusCode()).isEqualTo(201);
    HttpResponse<byte[]> replay = post("jdbc-1", "{\"title\":\"a\"}");
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(replay.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(replay.headers().allValues("Set-Cookie")).isEmpty();
    assertThat(app.calls("POST /notes")).isEqualTo(1);
    assertThat(rows(" WHERE state = 'COMPLETED' AND principal = 'anonymous' AND operation = 'POST /notes' AND idem_key = 'jdbc-1'"))
        .isEqualTo(1);
    assertThat(rows("")).isEqualTo(1);
  }

  @Test
  void unreachableStoreIs503AndLeavesNoRecord() throws Exception {
    assertThat(post("warm-up", "{}").statusCode()).isEqualTo(201); // the table exists now
    dataSource.down = true;
    HttpResponse<byte[]> r = post("down-key", "{\"title\":\"a\"}");
    IdempotencyFilterTest.assertProblem(r, 503, IdempotencyFilter.PROBLEM_STORE_UNAVAILABLE);
    assertThat(new String(r.body(), StandardCharsets.UTF_8)).doesNotContain("SQL", "sqlite", "database is down");
    assertThat(app.calls("POST /notes")).isEqualTo(1); // only the warm-up ran
    dataSource.down = false;
    assertThat(rows(" WHERE idem_key = 'down-key'")).isZero();

    HttpResponse<byte[]> retry = post("down-key", "{\"title\":\"a\"}");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(app.calls("POST /notes")).isEqualTo(2);
    assertThat(rows(" WHERE idem_key = 'down-key' AND state = 'COMPLETED'")).isEqualTo(1);
  }

  @Test
  void lockedDatabaseIs503AndLeavesNoRecord() throws Exception {
    assertThat(post("warm-up", "{}").statusCode()).isEqualTo(201);
    try (Connection locker = dataSource.target.getConnection(); Statement st = locker.createStatement()) {
      locker.setAutoCommit(false);
      // an uncommitted write holds SQLite's write lock until the rollback below
      st.execute("INSERT INTO idem_keys (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
          + " VALUES ('x', 'x', 'lock', 'x', 'COMPLETED', 0, 0)");
      HttpResponse<byte[]> r = post("locked-key", "{}");
      IdempotencyFilterTest.assertProblem(r, 503, IdempotencyFilter.PROBLEM_STORE_UNAVAILABLE);
      assertThat(app.calls("POST /notes")).isEqualTo(1);
      locker.rollback();
    }
    assertThat(rows(" WHERE idem_key = 'locked-key'")).isZero();
    assertThat(rows("")).isEqualTo(1); // the warm-up only
    assertThat(post("locked-key", "{}").statusCode()).isEqualTo(201);
    assertThat(app.calls("POST /notes")).isEqualTo(2);
  }

  /** A data source that can be switched off: every connection attempt then fails. */
  static final class Switchable extends SimpleDataSource {
    final DataSource target;
    volatile boolean down;

    Switchable(DataSource target) {
      this.target = target;
    }

    @Override
    public Connection getConnection() throws SQLException {
      if (down) {
        throw new SQLException("database is down", "08001");
      }
      return target.getConnection();
    }
  }

}
