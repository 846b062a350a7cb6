package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The notes API contract ({@link NotesApiContract}) on the Spring Boot service, plus what only this
 * service has (its page). Each database runs it by subclassing and naming its {@code
 * spring.datasource.url} in a {@link org.springframework.test.context.DynamicPropertySource} method.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
abstract class NotesServiceContract extends NotesApiContract {

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;

  @Override
  protected int port() {
    return port;
  }

  @Override
  protected String databaseProduct() {
    return jdbc.execute((ConnectionCallback<String>) c -> c.getMetaData().getDatabaseProductName());
  }

  @Override
  protected long queryForLong(String sql) {
    return jdbc.queryForObject(sql, Long.class);
  }

  @Override
  protected void update(String sql) {
    jdbc.update(sql);
  }

  @Test
  void thePageIsServedAtTheRoot() throws Exception {
    HttpResponse<String> page = api.get("/");
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("<script src=\"/app.js\"");
    HttpResponse<String> script = api.get("/app.js");
    assertThat(script.statusCode()).isEqualTo(200);
    assertThat(script.body()).contains("Idempotency-Key").contains("crypto.randomUUID");
    assertThat(script.headers().firstValue("Cache-Control")).hasValueSatisfying(v -> assertThat(v).contains("no-store"));
  }
}
