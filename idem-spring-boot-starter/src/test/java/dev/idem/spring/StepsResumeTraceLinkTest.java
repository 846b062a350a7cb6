package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * docs/operations.md, "A replay links to the first attempt": a multi-step operation keeps the trace
 * context of the attempt that recorded its input, and its resumption (by the completer, on a
 * schedule and outside any trace, or by a caller's retry, inside the retry's trace) runs in a span,
 * {@code idem resume <operation>}, linked to that attempt's span; the resumed steps are that span's
 * children. An input recorded without tracing resumes as before.
 */
class StepsResumeTraceLinkTest {

  @TempDir Path dir;

  private final AtomicBoolean failAfterRide = new AtomicBoolean(true);
  private final AtomicInteger rides = new AtomicInteger();
  /** The trace id current when each step body ran. */
  private final List<String> stepTraces = new CopyOnWriteArrayList<>();
  private Tracer tracer;

  private final StepOperation ride = (steps, input) -> {
    String id = steps.local("ride", c -> {
      stepTraces.add(tracer == null || tracer.currentSpan() == null ? "none" : tracer.currentSpan().context().traceId());
      return "ride-" + rides.incrementAndGet();
    });
    if (failAfterRide.get()) {
      throw new IllegalStateException("the process died after the ride");
    }
    String receipt = steps.local("receipt", c -> {
      stepTraces.add(tracer.currentSpan() == null ? "none" : tracer.currentSpan().context().traceId());
      return "receipt-for-" + id;
    });
    return StoredResponse.of(201, receipt);
  };

  /** The application's own step operations, keeping the trace context with each input (not the default). */
  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  static class KeepingTraceContext {
    @org.springframework.context.annotation.Bean
    JdbcStepOperations stepOperations(javax.sql.DataSource dataSource, dev.idem.core.LeaseIdempotency lease,
        dev.idem.core.spi.TraceContextPropagation tracing) {
      return JdbcStepOperations.builder(dataSource).lease(lease.lease()).retention(lease.retention()).tracing(tracing)
          .keepTraceContext(true).build();
    }
  }

  private ApplicationContextRunner app() {
    return starterDefaults().withUserConfiguration(KeepingTraceContext.class);
  }

  private ApplicationContextRunner starterDefaults() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(TracePropagationTest.Traced.class)
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4", "idem.mode=lease", "idem.lease=100ms");
  }

  private static IdempotentRequest request(String key) {
    return new IdempotentRequest(Scope.of("rider-1", "POST /rides"), IdempotencyKey.of(key),
        Fingerprint.ofJson("{\"rider\":1}".getBytes(StandardCharsets.UTF_8)));
  }

  /** Runs the first attempt in a request's span, which fails after the ride; @return that span. */
  private Span firstAttemptDiesAfterTheRide(JdbcStepOperations operations, String key) {
    Span request = tracer.nextSpan().name("post /rides").start();
    try (Tracer.SpanInScope ignored = tracer.withSpan(request)) {
      assertThatThrownBy(() -> operations.execute(request(key), "rider-1".getBytes(StandardCharsets.UTF_8), ride))
          .hasMessageContaining("died after the ride");
    } finally {
      request.end();
    }
    return request;
  }

  private static SpanData named(List<SpanData> spans, String name) {
    return spans.stream().filter(s -> s.getName().equals(name)).findFirst().orElseThrow();
  }

  @Test
  void theCompletersResumeIsATraceOfItsOwnLinkedToTheFirstAttempt() {
    app().run(ctx -> {
      tracer = ctx.getBean(Tracer.class);
      JdbcStepOperations operations = ctx.getBean(JdbcStepOperations.class);
      Span first = firstAttemptDiesAfterTheRide(operations, "ride-k1");
      failAfterRide.set(false);
      Thread.sleep(150); // the lease (100 ms) runs out: the caller gave up
      assertThat(tracer.currentSpan()).as("the completer runs outside any trace").isNull();
      assertThat(operations.completeAbandoned(Map.of("POST /rides", ride), 10)).isEqualTo(1);

      List<SpanData> spans = ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems();
      SpanData resume = named(spans, "idem resume post /rides");
      assertThat(resume.getParentSpanContext().isValid()).as("a root: the completer had no span").isFalse();
      assertThat(resume.getTraceId()).isNotEqualTo(first.context().traceId());
      assertThat(resume.getLinks()).singleElement().satisfies(l -> {
        assertThat(l.getSpanContext().getTraceId()).isEqualTo(first.context().traceId());
        assertThat(l.getSpanContext().getSpanId()).isEqualTo(first.context().spanId());
      });
      assertThat(stepTraces).as("the ride ran once, in the request's trace; the receipt in the resume's")
          .containsExactly(first.context().traceId(), resume.getTraceId());
      assertThat(rides).hasValue(1);
    });
  }

  @Test
  void aRetrysResumeIsAChildOfTheRetryLinkedToTheFirstAttempt() {
    app().run(ctx -> {
      tracer = ctx.getBean(Tracer.class);
      JdbcStepOperations operations = ctx.getBean(JdbcStepOperations.class);
      Span first = firstAttemptDiesAfterTheRide(operations, "ride-k2");
      failAfterRide.set(false);
      Thread.sleep(150);
      Span retry = tracer.nextSpan().name("post /rides retry").start();
      Outcome outcome;
      try (Tracer.SpanInScope ignored = tracer.withSpan(retry)) {
        outcome = operations.execute(request("ride-k2"), "rider-1".getBytes(StandardCharsets.UTF_8), ride);
      } finally {
        retry.end();
      }
      assertThat(outcome.recovery()).isTrue();
      assertThat(outcome.response().bodyAsString()).isEqualTo("receipt-for-ride-1");
      SpanData resume = named(ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems(), "idem resume post /rides");
      assertThat(resume.getParentSpanId()).isEqualTo(retry.context().spanId());
      assertThat(resume.getLinks()).extracting(l -> l.getSpanContext().getSpanId()).containsExactly(first.context().spanId());
    });
  }

  /**
   * The version before this one reads an input row as two lines (the fingerprint, the input in
   * Base64) and could not resume an operation whose row had a third: the starter keeps no context
   * in the row unless the application asks for it (JdbcStepOperations.Builder.keepTraceContext).
   */
  @Test
  void anInputRowWithATraceContextWasUnreadableByTheVersionBefore() {
    starterDefaults().run(ctx -> {
      tracer = ctx.getBean(Tracer.class);
      firstAttemptDiesAfterTheRide(ctx.getBean(JdbcStepOperations.class), "ride-k4");
      String row = new org.springframework.jdbc.core.JdbcTemplate(ctx.getBean(javax.sql.DataSource.class))
          .queryForObject("SELECT result FROM idem_steps WHERE step = '#input'", String.class);
      String[] parts = row.split("\n", 2);
      assertThat(parts).hasSize(2);
      // what the version before does with the row
      assertThat(java.util.Base64.getDecoder().decode(parts[1])).isEqualTo("rider-1".getBytes(StandardCharsets.UTF_8));
    });
  }

  @Test
  void anInputRecordedWithoutTracingResumesAsBeforeAndLinksNothing() throws Exception {
    // recorded by an application without tracing (as by a version that kept no context with the input)
    app().withPropertyValues("idem.observations.enabled=false").run(ctx -> {
      tracer = null;
      assertThatThrownBy(() -> ctx.getBean(JdbcStepOperations.class)
          .execute(request("ride-k3"), "rider-1".getBytes(StandardCharsets.UTF_8), ride)).hasMessageContaining("died");
    });
    failAfterRide.set(false);
    Thread.sleep(150);
    app().run(ctx -> {
      tracer = ctx.getBean(Tracer.class);
      assertThat(ctx.getBean(JdbcStepOperations.class).completeAbandoned(Map.of("POST /rides", ride), 10)).isEqualTo(1);
      assertThat(ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems())
          .extracting(SpanData::getName).doesNotContain("idem resume post /rides");
      assertThat(rides).as("the recorded ride is not made again").hasValue(1);
    });
  }
}
