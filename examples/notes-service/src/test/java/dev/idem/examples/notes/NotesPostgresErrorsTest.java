package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.testkit.TestDatabase;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Database errors of the handler on PostgreSQL, in transactional mode, where an SQL error aborts
 * the whole transaction that also holds the key's claim: what the client gets must follow from
 * what the error is, and the service's own answer must reach it. Skipped with a message when the
 * server is not reachable; a failure under {@code CI=true}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
class NotesPostgresErrorsTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  private static final ObjectMapper JSON = new ObjectMapper();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> DB.target().url());
    // a handler that waits for a lock gives up after half a second (SQLState 55P03)
    registry.add("spring.datasource.hikari.connection-init-sql", () -> "SET lock_timeout = '500ms'");
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  Api api;

  @BeforeEach
  void emptyTables() {
    api = Api.at(port);
    jdbc.update("DELETE FROM notes");
    jdbc.update("DELETE FROM idem_keys");
  }

  private long count(String table) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM " + table, Long.class);
  }

  /**
   * Regression: a title holding U+0000, which PostgreSQL text cannot store (SQLState 22021), was
   * answered "503 store unavailable, retry later" forever. It is the request's fault: 400, stored
   * like any answer, and a retry with the key replays it.
   */
  @Test
  void aTitleWithU0000IsRefusedWith400AndTheAnswerIsReplayedNotA503() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = api.postTitle(key, "nul \u0000 inside");
    assertThat(first.statusCode()).as(first.body()).isEqualTo(400);
    assertThat(first.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    JsonNode problem = JSON.readTree(first.body());
    assertThat(problem.get("title").asText()).isEqualTo("Invalid note");
    assertThat(problem.get("detail").asText()).contains("22021");

    HttpResponse<String> retry = api.postTitle(key, "nul \u0000 inside");
    assertThat(retry.statusCode()).isEqualTo(400);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(count("notes")).isZero();
    assertThat(count("idem_keys")).as("the 400 is stored").isEqualTo(1);
  }

  /**
   * Regression: the service's own 503 for a database it cannot use (here a lock it waited for in
   * vain, SQLState 55P03) was replaced by Idem's "store-unavailable" problem, because releasing the
   * key failed in the aborted transaction. The client gets the service's answer, and the key stays
   * free for the retry.
   */
  @Test
  void theServicesOwn503ReachesTheClientAndTheKeyStaysFree() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> r;
    try (Connection locker = DriverManager.getConnection(DB.target().url()); Statement st = locker.createStatement()) {
      locker.setAutoCommit(false);
      st.execute("LOCK TABLE notes IN ACCESS EXCLUSIVE MODE");
      r = api.postTitle(key, "waits for a lock");
      locker.rollback();
    }
    assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
    JsonNode problem = JSON.readTree(r.body());
    assertThat(problem.get("title").asText()).isEqualTo("Database unavailable");
    assertThat(problem.has("type") && problem.get("type").asText().endsWith(":store-unavailable")).as("not Idem's problem").isFalse();
    assertThat(count("idem_keys")).isZero();

    HttpResponse<String> retry = api.postTitle(key, "waits for a lock");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(count("notes")).isEqualTo(1);
  }
}
