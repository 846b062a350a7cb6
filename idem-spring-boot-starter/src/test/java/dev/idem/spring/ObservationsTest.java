package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.observation.MicrometerIdemListener;
import dev.idem.spring.observation.ObservationIdemListener;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import jakarta.servlet.http.HttpServletResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * One observation per attempt ({@link ObservationIdemListener}), in both modes, through the filter
 * and through {@link Idempotent} methods: its mode, operation and outcome as low-cardinality key
 * values, never the key; the handler runs inside it; {@code idem.observations.enabled=false} turns
 * it off; the counters go on beside it.
 */
class ObservationsTest {

  @TempDir Path dir;

  /** Every observation the registry stopped, and what the handler saw as the current one. */
  static final Queue<Observation.Context> STOPPED = new ConcurrentLinkedQueue<>();

  @Configuration(proxyBeanMethods = false)
  static class Observed {
    @Bean
    ObservationRegistry observationRegistry() {
      return recording(STOPPED);
    }
  }

  /**
   * @param stopped where every observation the registry stops is added
   * @return a registry that records the observations it stops (shared by the observation tests)
   */
  static ObservationRegistry recording(java.util.Collection<Observation.Context> stopped) {
    ObservationRegistry registry = ObservationRegistry.create();
    registry.observationConfig().observationHandler(new ObservationHandler<>() {
      @Override
      public boolean supportsContext(Observation.Context context) {
        return true;
      }

      @Override
      public void onStop(Observation.Context context) {
        stopped.add(context);
      }
    });
    return registry;
  }

  private WebApplicationContextRunner app(String mode) {
    STOPPED.clear();
    return new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.plus(BootLine.jdbc(), AopAutoConfiguration.class))))
        .withUserConfiguration(IdemAutoConfigurationTest.PaymentsConfig.class, Observed.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4",
            "idem.mode=" + mode,
            "idem.required-key-routes=POST /notes");
  }

  private static MockHttpServletResponse post(IdempotencyFilter filter, JdbcTemplate jdbc, ObservationRegistry registry,
      List<String> seen, String key, String body, int status) throws Exception {
    MockHttpServletRequest request = new MockHttpServletRequest("POST", "/notes");
    request.setServletPath("/notes");
    if (key != null) {
      request.addHeader("Idempotency-Key", key);
    }
    request.setContentType("application/json");
    request.setContent(body.getBytes(StandardCharsets.UTF_8));
    MockHttpServletResponse response = new MockHttpServletResponse();
    filter.doFilter(request, response, (req, res) -> {
      Observation current = registry.getCurrentObservation();
      seen.add(current == null ? "none" : current.getContext().getName() + " " + current.getContext().getContextualName());
      jdbc.update("INSERT INTO notes (body) VALUES (?)", body);
      ((HttpServletResponse) res).setStatus(status);
      res.setContentType("application/json");
      res.getWriter().write("{\"saved\":true}");
    });
    return response;
  }

  private static String describe(Observation.Context c) {
    return c.getName() + " " + value(c, ObservationIdemListener.MODE) + " " + value(c, ObservationIdemListener.OPERATION)
        + " " + value(c, ObservationIdemListener.OUTCOME);
  }

  private static String value(Observation.Context c, String key) {
    KeyValue v = c.getLowCardinalityKeyValue(key);
    return v == null ? "-" : v.getValue();
  }

  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void everyAttemptThroughTheFilterIsOneObservationWithItsModeOperationAndOutcome(String mode) {
    app(mode).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(dev.idem.core.IdemListener.class)).isInstanceOf(ObservationIdemListener.class);
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      ObservationRegistry registry = ctx.getBean(ObservationRegistry.class);
      List<String> seen = new java.util.ArrayList<>();
      STOPPED.clear();

      assertThat(post(filter, jdbc, registry, seen, "k-1", "{\"a\":1}", 201).getStatus()).isEqualTo(201);
      assertThat(post(filter, jdbc, registry, seen, "k-1", "{\"a\":1}", 201).getHeader(IdempotencyFilter.REPLAYED_HEADER))
          .isEqualTo("true");
      assertThat(post(filter, jdbc, registry, seen, "k-1", "{\"a\":2}", 201).getStatus()).isEqualTo(422);
      assertThat(post(filter, jdbc, registry, seen, "k-2", "{\"b\":1}", 503).getStatus()).isEqualTo(503);
      assertThat(post(filter, jdbc, registry, seen, null, "{\"c\":1}", 201).getStatus()).isEqualTo(400);

      assertThat(STOPPED).extracting(ObservationsTest::describe).containsExactly(
          "idem.attempt " + mode + " POST /notes executed",
          "idem.attempt " + mode + " POST /notes replayed",
          "idem.attempt " + mode + " POST /notes key-reused",
          "idem.attempt " + mode + " POST /notes released",
          "idem.attempt none POST /notes key-missing");
      assertThat(seen).as("the handler runs inside the attempt's observation").containsExactly(
          "idem.attempt idem post /notes", "idem.attempt idem post /notes");
      assertThat(STOPPED).allSatisfy(c -> {
        assertThat(c.getHighCardinalityKeyValues()).isEmpty();
        assertThat(c.getLowCardinalityKeyValues().toString()).doesNotContain("k-1").doesNotContain("k-2");
      });
      // the counters go on beside the observations
      assertThat(ctx.getBean(io.micrometer.core.instrument.MeterRegistry.class).find("idem.replays").counter().count())
          .isEqualTo(1);
    });
  }

  @Test
  void anIdempotentMethodsAttemptIsAnObservationToo() {
    app("lease").run(ctx -> {
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      STOPPED.clear();
      payments.charge("pay-1", "acct-9", 500);
      payments.charge("pay-1", "acct-9", 500);
      assertThat(STOPPED).extracting(ObservationsTest::describe).containsExactly(
          "idem.attempt lease charge executed", "idem.attempt lease charge replayed");
    });
  }

  @Test
  void anEffectThatThrowsEndsItsObservationWithTheError() {
    app("transactional").run(ctx -> {
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      STOPPED.clear();
      MockHttpServletRequest request = new MockHttpServletRequest("POST", "/notes");
      request.setServletPath("/notes");
      request.addHeader("Idempotency-Key", "k-9");
      request.setContentType("application/json");
      request.setContent("{}".getBytes(StandardCharsets.UTF_8));
      try {
        filter.doFilter(request, new MockHttpServletResponse(), (req, res) -> {
          throw new IllegalStateException("handler broke");
        });
      } catch (Exception expected) {
        // the filter lets the handler's exception through
      }
      assertThat(STOPPED).extracting(ObservationsTest::describe).containsExactly("idem.attempt transactional POST /notes effect-failed");
      assertThat(STOPPED.peek().getError()).hasMessageContaining("handler broke");
      assertThat(jdbc).isNotNull();
    });
  }

  @Test
  void anIdempotentMethodInsideAProtectedRequestIsTheChildAndNothingStaysCurrent() {
    app("lease").run(ctx -> {
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      ObservationRegistry registry = ctx.getBean(ObservationRegistry.class);
      List<Observation> outer = new java.util.ArrayList<>();
      STOPPED.clear();
      MockHttpServletRequest request = new MockHttpServletRequest("POST", "/notes");
      request.setServletPath("/notes");
      request.addHeader("Idempotency-Key", "k-7");
      request.setContentType("application/json");
      request.setContent("{}".getBytes(StandardCharsets.UTF_8));
      filter.doFilter(request, new MockHttpServletResponse(), (req, res) -> {
        outer.add(registry.getCurrentObservation());
        payments.charge("pay-7", "acct-9", 500);
        outer.add(registry.getCurrentObservation());
        ((HttpServletResponse) res).setStatus(201);
      });
      assertThat(registry.getCurrentObservation()).isNull();
      assertThat(STOPPED).extracting(ObservationsTest::describe).containsExactly(
          "idem.attempt lease charge executed", "idem.attempt lease POST /notes executed");
      Observation.Context inner = STOPPED.peek();
      assertThat(inner.getParentObservation()).isNotNull().isSameAs(outer.get(0));
      assertThat(outer.get(1)).isSameAs(outer.get(0));
    });
  }

  @Test
  void observationsCanBeTurnedOff() {
    app("lease").withPropertyValues("idem.observations.enabled=false").run(ctx -> {
      assertThat(ctx.getBean(dev.idem.core.IdemListener.class)).isInstanceOf(MicrometerIdemListener.class);
      ctx.getBean(IdemAutoConfigurationTest.Payments.class).charge("pay-2", "acct-9", 500);
      assertThat(STOPPED).isEmpty();
    });
  }
}
