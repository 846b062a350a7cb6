package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.StoredResponse;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import jakarta.servlet.http.HttpServletResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * docs/operations.md, "A replay links to the first attempt": with Micrometer Tracing (its
 * OpenTelemetry bridge, OpenTelemetry's in-memory span exporter) a create and its replay are two
 * traces, and the replay's has a span, {@code idem replay <operation>} (lower case, as every Idem span name), linked to the first
 * attempt's span, read from the trace context kept with the key's record; in both modes, through
 * the servlet filter. A key stored without tracing (an earlier version, or observations off) replays
 * as before and links nothing.
 */
class ReplayTraceLinkTest {

  @TempDir Path dir;

  private WebApplicationContextRunner app(String mode) {
    return new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(TracePropagationTest.Traced.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4",
            "idem.mode=" + mode,
            "idem.required-key-routes=POST /notes");
  }

  private static MockHttpServletResponse post(IdempotencyFilter filter, JdbcTemplate jdbc, AtomicInteger runs, String key)
      throws Exception {
    MockHttpServletRequest request = new MockHttpServletRequest("POST", "/notes");
    request.setServletPath("/notes");
    request.addHeader("Idempotency-Key", key);
    request.setContentType("application/json");
    request.setContent("{\"text\":\"hi\"}".getBytes(StandardCharsets.UTF_8));
    MockHttpServletResponse response = new MockHttpServletResponse();
    filter.doFilter(request, response, (req, res) -> {
      runs.incrementAndGet();
      jdbc.update("INSERT INTO notes (body) VALUES ('hi')");
      ((HttpServletResponse) res).setStatus(201);
      res.setContentType("application/json");
      res.getWriter().write("{\"id\":1}");
    });
    return response;
  }

  private static SpanData attempt(List<SpanData> spans, int index) {
    return spans.stream().filter(s -> s.getName().equals("idem post /notes")).skip(index).findFirst().orElseThrow();
  }

  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void aReplaysTraceLinksToTheFirstAttemptsSpan(String mode) {
    app(mode).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      InMemorySpanExporter exporter = ctx.getBean(InMemorySpanExporter.class);
      AtomicInteger runs = new AtomicInteger();

      assertThat(post(filter, jdbc, runs, "k-1").getStatus()).isEqualTo(201);
      MockHttpServletResponse replay = post(filter, jdbc, runs, "k-1");
      assertThat(replay.getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
      assertThat(replay.getHeaderNames()).noneMatch(n -> n.toLowerCase().startsWith("idem-trace-"));
      assertThat(runs).hasValue(1);

      List<SpanData> spans = exporter.getFinishedSpanItems();
      assertReplayLinksToTheCreate(spans, attempt(spans, 0), attempt(spans, 1));
    });
  }

  /**
   * A create and its replay are two traces, and the replay's one {@code idem replay post /notes}
   * span, a child of the replay's attempt, links to the create's attempt. Shared with the WebFlux
   * filter's trace test ({@link TraceWebFluxTest}).
   *
   * @param spans every finished span
   * @param create the create's attempt span
   * @param replay the replay's attempt span
   */
  static void assertReplayLinksToTheCreate(List<SpanData> spans, SpanData create, SpanData replay) {
    assertThat(replay.getTraceId()).as("a create and its replay are two traces").isNotEqualTo(create.getTraceId());
    assertThat(spans).filteredOn(s -> s.getName().startsWith("idem replay")).hasSize(1);
    SpanData link = spans.stream().filter(s -> s.getName().equals("idem replay post /notes")).findFirst().orElseThrow();
    assertThat(link.getTraceId()).isEqualTo(replay.getTraceId());
    assertThat(link.getParentSpanId()).as("a child of the replay's attempt").isEqualTo(replay.getSpanId());
    assertThat(link.getLinks()).extracting(LinkData::getSpanContext)
        .singleElement()
        .satisfies(c -> {
          assertThat(c.getTraceId()).as("the create's trace").isEqualTo(create.getTraceId());
          assertThat(c.getSpanId()).isEqualTo(create.getSpanId());
        });
  }

  /** Micrometer Tracing hyphenated every upper-case letter of the span names: {@code idem -p-o-s-t /notes}. */
  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void spanNamesWereHyphenatedByMicrometerTracing(String mode) {
    app(mode).run(ctx -> {
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      AtomicInteger runs = new AtomicInteger();
      post(filter, jdbc, runs, "k-n");
      post(filter, jdbc, runs, "k-n");
      assertThat(ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems()).extracting(SpanData::getName)
          .containsExactly("idem post /notes", "idem replay post /notes", "idem post /notes");
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void aKeyStoredWithoutTracingReplaysAsBeforeAndLinksNothing(String mode) {
    AtomicInteger runs = new AtomicInteger();
    // stored by an application without Idem's observations (as by a version that kept no context)
    app(mode).withPropertyValues("idem.observations.enabled=false").run(ctx -> {
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      assertThat(post(filter, jdbc, runs, "k-old").getStatus()).isEqualTo(201);
    });
    app(mode).run(ctx -> {
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      MockHttpServletResponse replay = post(filter, jdbc, runs, "k-old");
      assertThat(replay.getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
      assertThat(replay.getContentAsString()).isEqualTo("{\"id\":1}");
      assertThat(runs).as("the key an earlier run stored never runs again").hasValue(1);
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM notes", Integer.class)).isEqualTo(1);
      List<SpanData> spans = ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems();
      assertThat(spans).extracting(SpanData::getName).contains("idem post /notes").doesNotContain("idem replay post /notes");
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void aHandlersOwnTraceFieldIsNeitherStoredNorReplayed(String mode) {
    app(mode).run(ctx -> {
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
      for (int i = 0; i < 2; i++) {
        MockHttpServletRequest request = new MockHttpServletRequest("POST", "/notes");
        request.setServletPath("/notes");
        request.addHeader("Idempotency-Key", "k-forged");
        request.setContentType("application/json");
        request.setContent("{}".getBytes(StandardCharsets.UTF_8));
        MockHttpServletResponse response = new MockHttpServletResponse();
        filter.doFilter(request, response, (req, res) -> {
          // a handler cannot plant another trace's context in the key's record
          ((HttpServletResponse) res).setHeader(StoredResponse.TRACE_CONTEXT_HEADER_PREFIX + "traceparent",
              "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
          ((HttpServletResponse) res).setStatus(201);
        });
        if (i == 1) {
          assertThat(response.getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
          assertThat(response.getHeaderNames()).noneMatch(n -> n.toLowerCase().startsWith("idem-trace-"));
        }
      }
      List<SpanData> spans = ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems();
      SpanData link = spans.stream().filter(s -> s.getName().equals("idem replay post /notes")).findFirst().orElseThrow();
      assertThat(link.getLinks()).extracting(l -> l.getSpanContext().getTraceId())
          .containsExactly(attempt(spans, 0).getTraceId());
    });
  }
}
