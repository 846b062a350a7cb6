package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.UUID;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jdbc.autoconfigure.DataSourceProperties;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The database goes away: {@code POST /notes} answers 503 (problem+json), leaves no note and no
 * idempotency record behind, and the same key works once the database is back.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
class DatabaseUnavailableTest {

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
  }

  /** The application's DataSource: the real pool, or failing connections while switched off. */
  static final class SwitchableDataSource implements DataSource, AutoCloseable {
    final DataSource real;
    volatile boolean down;

    SwitchableDataSource(DataSource real) {
      this.real = real;
    }

    private void check() throws SQLException {
      if (down) {
        throw new SQLException("database unavailable (switched off by the test)", "08001");
      }
    }

    @Override
    public Connection getConnection() throws SQLException {
      check();
      return real.getConnection();
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
      check();
      return real.getConnection(username, password);
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return real.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      real.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      real.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return real.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      return real.getParentLogger();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      return iface.isInstance(this) ? iface.cast(this) : real.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
      return iface.isInstance(this) || real.isWrapperFor(iface);
    }

    @Override
    public void close() throws Exception {
      if (real instanceof AutoCloseable c) {
        c.close();
      }
    }
  }

  @TestConfiguration(proxyBeanMethods = false)
  static class Database {
    @Bean
    SwitchableDataSource dataSource(DataSourceProperties properties) {
      return new SwitchableDataSource(properties.initializeDataSourceBuilder().build());
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  @LocalServerPort int port;
  @Autowired SwitchableDataSource dataSource;
  Api api;
  JdbcTemplate direct; // beside the switch: sees the file even while the application cannot

  @BeforeEach
  void setUp() {
    api = Api.at(port);
    direct = new JdbcTemplate(dataSource.real);
    direct.update("DELETE FROM notes");
    direct.update("DELETE FROM idem_keys");
  }

  @AfterEach
  void backUp() {
    dataSource.down = false;
  }

  private long count(String table) {
    return direct.queryForObject("SELECT COUNT(*) FROM " + table, Long.class);
  }

  @Test
  void withTheDatabaseDownAPostIs503AndLeavesNothingBehind() throws Exception {
    String key = UUID.randomUUID().toString();
    dataSource.down = true;

    HttpResponse<String> r = api.postTitle(key, "written while the database is down");

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    JsonNode problem = JSON.readTree(r.body());
    assertThat(problem.get("status").asInt()).isEqualTo(503);
    assertThat(problem.get("type").asText()).endsWith(":store-unavailable");
    assertThat(count("notes")).isZero();
    assertThat(count("idem_keys")).isZero();

    // Back up: the same key is a first attempt, not a replay of the 503.
    dataSource.down = false;
    HttpResponse<String> retry = api.postTitle(key, "written while the database is down");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(count("notes")).isEqualTo(1);
  }

  /**
   * The key store works but the notes table is gone, so the handler's insert fails with an error
   * that a retry repeats until the service is fixed ("no such table"): 500, not "retry later"
   * (this answered 503 before database errors were classified), and the key is released.
   */
  @Test
  void whenTheInsertFailsOnAMissingTableThePostIs500AndTheKeyIsReleased() throws Exception {
    String key = UUID.randomUUID().toString();
    direct.execute("ALTER TABLE notes RENAME TO notes_away");
    HttpResponse<String> r;
    try {
      r = api.postTitle(key, "insert fails");
    } finally {
      direct.execute("ALTER TABLE notes_away RENAME TO notes");
    }

    assertThat(r.statusCode()).isEqualTo(500);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(JSON.readTree(r.body()).get("title").asText()).isEqualTo("Database failure");
    assertThat(count("notes")).isZero();
    assertThat(count("idem_keys")).as("a 5xx releases the claim").isZero();

    HttpResponse<String> retry = api.postTitle(key, "insert fails");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(count("notes")).isEqualTo(1);
  }
}
