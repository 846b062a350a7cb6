package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.outbox.IdemOutbox;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * Draws docs/reports/trace-picture.md from the spans of a real run, so the picture in the docs is
 * never drawn by hand: a create through the servlet filter whose handler adds an outbox intent, the
 * relay's delivery, the consumer's handling of the message, and the client's retry, replayed. The
 * spans come from Micrometer Tracing's OpenTelemetry bridge and OpenTelemetry's in-memory exporter.
 * The test fails when the picture in the repository is not the one this run draws; {@code
 * -Didem.trace-picture.write=true} writes it instead.
 */
class TracePictureTest {

  static final String PICTURE = "docs/reports/trace-picture.md";

  @TempDir Path dir;

  /** A transport that keeps what the relay hands it: the messages a broker would carry. */
  static final class Captured implements IntentTransport {
    final List<OutboxEntry> sent = new ArrayList<>();

    @Override
    public Intent.Kind kind() {
      return Intent.Kind.KAFKA;
    }

    @Override
    public List<Delivery> deliver(List<OutboxEntry> batch) {
      sent.addAll(batch);
      return batch.stream().map(e -> Delivery.delivered(e.id())).toList();
    }
  }

  private WebApplicationContextRunner app() {
    return new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(TracePropagationTest.Traced.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4",
            "idem.mode=transactional",
            "idem.required-key-routes=POST /orders");
  }

  /** One request as a server observation would wrap it: a server span around the filter. */
  private static MockHttpServletResponse post(Tracer tracer, IdempotencyFilter filter, IdemOutbox outbox) throws Exception {
    MockHttpServletRequest request = new MockHttpServletRequest("POST", "/orders");
    request.setServletPath("/orders");
    request.addHeader("Idempotency-Key", "order-1");
    request.setContentType("application/json");
    request.setContent("{\"sku\":\"tea\"}".getBytes(StandardCharsets.UTF_8));
    MockHttpServletResponse response = new MockHttpServletResponse();
    Span server = tracer.spanBuilder().name("http post /orders").kind(Span.Kind.SERVER).start();
    try (Tracer.SpanInScope ignored = tracer.withSpan(server)) {
      filter.doFilter(request, response, (req, res) -> {
        // the handler, as Spring MVC calls it (request attributes bound): its message, in the key's transaction
        RequestContextHolder.setRequestAttributes(new ServletRequestAttributes((HttpServletRequest) req));
        try {
          outbox.record(Intent.kafka("orders", "{\"sku\":\"tea\"}".getBytes(StandardCharsets.UTF_8)));
        } finally {
          RequestContextHolder.resetRequestAttributes();
        }
        ((HttpServletResponse) res).setStatus(201);
        res.getWriter().write("{\"order\":1}");
      });
    } finally {
      server.end();
    }
    return response;
  }

  @Test
  void theTraceOfACreateItsMessageAndItsReplay() throws Exception {
    StringBuilder drawn = new StringBuilder();
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      Tracer tracer = ctx.getBean(Tracer.class);
      IdemOutbox outbox = ctx.getBean(IdemOutbox.class);
      IdempotencyFilter filter = new IdempotencyFilter(ctx.getBean(IdempotencyFilterConfig.class));

      assertThat(post(tracer, filter, outbox).getStatus()).isEqualTo(201);
      Captured broker = new Captured();
      assertThat(OutboxRelay.builder(outbox.outbox(), ctx.getBean(DataSource.class)).transport(broker).build().drain().sent()).isEqualTo(1);
      var consumer = ctx.getBean(IdemRabbitListeners.class)
          .transactional("billing", "unused", (connection, message) -> {}, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "dlq"))
          .consumer();
      OutboxEntry sent = broker.sent.get(0);
      Map<String, String> headers = new HashMap<>();
      sent.intent().headers().forEach(h -> headers.put(h.getKey(), h.getValue()));
      assertThat(consumer.process(new InboundMessage(sent.id(), headers, sent.intent().body(), 1, "orders")).action())
          .isEqualTo(Verdict.Action.ACK);
      MockHttpServletResponse replay = post(tracer, filter, outbox);
      assertThat(replay.getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");

      drawn.append(draw(ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems()));
    });

    String picture = "# A key's trace, drawn from a test's spans\n\n"
        + "Generated by `TracePictureTest` (idem-spring-boot-starter) from the spans of a real run, never drawn by hand:\n"
        + "a create through the servlet filter in transactional mode whose handler adds an outbox intent, the\n"
        + "relay's delivery, the consumer's handling of the message, and the client's retry, replayed. The\n"
        + "`http post /orders` spans stand for the server observation of Spring MVC. Solid arrows go from a\n"
        + "span to its children; the dotted one is a span link. Regenerate with\n"
        + "`./mvnw -B test -pl idem-spring-boot-starter -Dtest=TracePictureTest -Didem.trace-picture.write=true`.\n"
        + "See [operations.md](../operations.md#a-replay-links-to-the-first-attempt).\n\n"
        + "```mermaid\n" + drawn + "```\n";
    Path file = repositoryRoot().resolve(PICTURE);
    if (Boolean.getBoolean("idem.trace-picture.write")) {
      Files.writeString(file, picture, StandardCharsets.UTF_8);
    }
    assertThat(Files.readString(file, StandardCharsets.UTF_8))
        .as(PICTURE + " is not what this run draws: regenerate it with -Didem.trace-picture.write=true")
        .isEqualTo(picture);
  }

  /**
   * A Mermaid flowchart of the spans: one subgraph per trace, in the order the traces began; a
   * node per span (its name and, unless internal, its kind) in the order the spans began; an arrow
   * from parent to child, a dotted arrow for a link. Ids and times are left out, so that two runs
   * draw the same picture.
   */
  static String draw(List<SpanData> spans) {
    List<SpanData> ordered = new ArrayList<>(spans);
    ordered.sort(Comparator.comparingLong(SpanData::getStartEpochNanos));
    Map<String, String> node = new HashMap<>();
    Map<String, List<SpanData>> traces = new LinkedHashMap<>();
    for (SpanData s : ordered) {
      node.put(s.getSpanId(), "s" + (node.size() + 1));
      traces.computeIfAbsent(s.getTraceId(), t -> new ArrayList<>()).add(s);
    }
    StringBuilder out = new StringBuilder("flowchart TB\n");
    int t = 0;
    for (List<SpanData> trace : traces.values()) {
      out.append("  subgraph trace").append(++t).append("[\"trace ").append(t).append("\"]\n");
      for (SpanData s : trace) {
        String kind = s.getKind().name().toLowerCase(Locale.ROOT);
        out.append("    ").append(node.get(s.getSpanId())).append("[\"").append(s.getName())
            .append(kind.equals("internal") ? "" : " (" + kind + ")").append("\"]\n");
      }
      for (SpanData s : trace) {
        String parent = node.get(s.getParentSpanId());
        if (parent != null) {
          out.append("    ").append(parent).append(" --> ").append(node.get(s.getSpanId())).append('\n');
        }
      }
      out.append("  end\n");
    }
    for (SpanData s : ordered) {
      for (LinkData l : s.getLinks()) {
        String linked = node.get(l.getSpanContext().getSpanId());
        if (linked != null) {
          out.append("  ").append(node.get(s.getSpanId())).append(" -. link .-> ").append(linked).append('\n');
        }
      }
    }
    return out.toString();
  }

  /** @return the repository's root: the nearest folder up from here that has docs/reports */
  static Path repositoryRoot() {
    Path p = Path.of("").toAbsolutePath();
    while (p != null && !Files.isDirectory(p.resolve("docs/reports"))) {
      p = p.getParent();
    }
    if (p == null) {
      throw new IllegalStateException("no docs/reports above " + Path.of("").toAbsolutePath());
    }
    return p;
  }
}
