package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.servlet.http.HttpServletResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Regression: {@code idem.executions}, {@code idem.replays} and {@code idem.rejections} never moved
 * in transactional mode, through the filter or through {@link Idempotent} methods in a transaction;
 * only the lease engine told the listener. Every mode now counts the same events the same way.
 */
class MetricsInBothModesTest {

  @TempDir Path dir;

  private WebApplicationContextRunner app(String mode) {
    return new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.plus(BootLine.jdbc(), AopAutoConfiguration.class))))
        .withUserConfiguration(IdemAutoConfigurationTest.PaymentsConfig.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4",
            "idem.mode=" + mode,
            "idem.required-key-routes=POST /notes");
  }

  private static MockHttpServletResponse post(IdempotencyFilter filter, JdbcTemplate jdbc, String key, String body, int status)
      throws Exception {
    MockHttpServletRequest request = new MockHttpServletRequest("POST", "/notes");
    request.setServletPath("/notes");
    request.addHeader("Idempotency-Key", key);
    request.setContentType("application/json");
    request.setContent(body.getBytes(StandardCharsets.UTF_8));
    MockHttpServletResponse response = new MockHttpServletResponse();
    filter.doFilter(request, response, (req, res) -> {
      jdbc.update("INSERT INTO notes (body) VALUES (?)", body);
      ((HttpServletResponse) res).setStatus(status);
      res.setContentType("application/json");
      res.getWriter().write("{\"saved\":true}");
    });
    return response;
  }

  private static double count(MeterRegistry meters, String name, String tag, String value) {
    var search = meters.find(name);
    if (tag != null) {
      search = search.tag(tag, value);
    }
    var counter = search.counter();
    return counter == null ? 0 : counter.count();
  }

  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void theFilterCountsExecutionsReplaysAndRejectionsInEveryMode(String mode) {
    app(mode).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      MeterRegistry meters = ctx.getBean(MeterRegistry.class);

      assertThat(post(filter, jdbc, "k-1", "{\"a\":1}", 201).getStatus()).isEqualTo(201);
      MockHttpServletResponse replay = post(filter, jdbc, "k-1", "{\"a\":1}", 201);
      assertThat(replay.getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
      assertThat(post(filter, jdbc, "k-1", "{\"a\":2}", 201).getStatus()).isEqualTo(422);
      assertThat(post(filter, jdbc, "k-2", "{\"b\":1}", 503).getStatus()).as("a released answer is sent").isEqualTo(503);

      assertThat(count(meters, "idem.executions", "stored", "true")).isEqualTo(1);
      assertThat(count(meters, "idem.executions", "stored", "false")).isEqualTo(1);
      assertThat(count(meters, "idem.replays", null, null)).isEqualTo(1);
      assertThat(count(meters, "idem.rejections", "reason", "key-reused")).isEqualTo(1);
      // every meter names the route's operation, never the key (was: no operation tag at all)
      assertThat(count(meters, "idem.replays", "operation", "POST /notes")).isEqualTo(1);
      assertThat(meters.find("idem.executions").tag("operation", "POST /notes").counters())
          .extracting(c -> c.count()).containsExactlyInAnyOrder(1.0, 1.0);
      assertThat(meters.getMeters()).allSatisfy(m -> assertThat(m.getId().getTags().toString()).doesNotContain("k-1"));
      // was: a 400 for a missing key was counted under no reason
      MockHttpServletRequest keyless = new MockHttpServletRequest("POST", "/notes");
      keyless.setServletPath("/notes");
      MockHttpServletResponse missing = new MockHttpServletResponse();
      filter.doFilter(keyless, missing, (req, res) -> {
        throw new AssertionError("a request without its required key must not reach the handler");
      });
      assertThat(missing.getStatus()).isEqualTo(400);
      assertThat(count(meters, "idem.rejections", "reason", "key-missing")).isEqualTo(1);
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM notes", Integer.class))
          .as("the handler ran twice; in transactional mode the released answer took its row with it")
          .isEqualTo(mode.equals("transactional") ? 1 : 2);
    });
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void idempotentMethodsCountExecutionsReplaysAndRejectionsInsideAndOutsideATransaction(boolean inTransaction) {
    app("lease").run((AssertableWebApplicationContext ctx) -> {
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      TransactionTemplate tx = new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class));
      MeterRegistry meters = ctx.getBean(MeterRegistry.class);
      Runnable first = () -> payments.charge("pay-1", "acct-9", 500);
      Runnable other = () -> payments.charge("pay-1", "acct-9", 600);
      if (inTransaction) {
        tx.executeWithoutResult(status -> first.run());
        tx.executeWithoutResult(status -> first.run());
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> other.run())).isInstanceOf(IdempotencyKeyReusedException.class);
      } else {
        first.run();
        assertThat(IdempotentCalls.lastCallReplayed()).as("the first call ran").isFalse();
        first.run();
        // was: a replay carried no marker, and a caller could not tell
        assertThat(IdempotentCalls.lastCallReplayed()).as("the repeat replayed").isTrue();
        assertThatThrownBy(other::run).isInstanceOf(IdempotencyKeyReusedException.class);
      }
      assertThat(payments.charges()).isEqualTo(1);
      assertThat(count(meters, "idem.executions", "stored", "true")).isEqualTo(1);
      assertThat(count(meters, "idem.replays", null, null)).isEqualTo(1);
      assertThat(count(meters, "idem.rejections", "reason", "key-reused")).isEqualTo(1);
    });
  }
}
