package dev.idem.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.JdbcIdempotency;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

/** How {@link IdempotentConsumer#process} hands a message's headers to the trace propagation. */
class ConsumerTracingTest {

  private static final String PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private static JdbcIdempotency keys() {
    JdbcDataSource dataSource = new JdbcDataSource();
    dataSource.setURL("jdbc:h2:mem:" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    return JdbcIdempotency.builder().dataSource(dataSource).build();
  }

  private static InboundMessage message(String id) {
    return new InboundMessage(id, Map.of("TraceParent", PARENT), "{}".getBytes(StandardCharsets.UTF_8), 1, "test");
  }

  @Test
  void eachMessageIsHandledInsideTheContinuedTraceWithItsHeadersAndTheConsumersName() {
    List<String> seen = new ArrayList<>();
    AtomicInteger inSpan = new AtomicInteger();
    TraceContextPropagation recording = new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        return Map.of();
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
        seen.add(operation + " " + carrier.get("traceparent"));
        inSpan.incrementAndGet();
        try {
          return work.get();
        } finally {
          inSpan.decrementAndGet();
        }
      }
    };
    AtomicInteger handledInSpan = new AtomicInteger();
    IdempotentConsumer consumer = IdempotentConsumer.builder("billing", keys(), (c, m) -> handledInSpan.addAndGet(inSpan.get()))
        .tracing(recording).build();
    assertThat(consumer.process(message("m-1")).action()).isEqualTo(Verdict.Action.ACK);
    assertThat(consumer.process(message("m-1")).outcome().replayed()).isTrue();
    assertThat(seen).containsExactly("billing " + PARENT, "billing " + PARENT);
    assertThat(handledInSpan.get()).isEqualTo(1);
  }

  @Test
  void aTracerThatFailsBeforeTheHandlingNeverFailsTheMessage() {
    TraceContextPropagation failing = new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        return Map.of();
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
        throw new IllegalStateException("tracer down");
      }
    };
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer consumer = IdempotentConsumer.builder("billing", keys(), (c, m) -> runs.incrementAndGet())
        .tracing(failing).build();
    assertThat(consumer.process(message("m-2")).action()).isEqualTo(Verdict.Action.ACK);
    assertThat(runs.get()).isEqualTo(1);
  }

  /** Micrometer's observe ends the span after the work: a handler of its that throws then must not fail the message. */
  @Test
  void aTracerThatFailsAfterTheHandlingKeepsTheHandlingsVerdict() {
    TraceContextPropagation failingAtTheEnd = new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        return Map.of();
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
        work.get();
        throw new IllegalStateException("span could not end");
      }
    };
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer consumer = IdempotentConsumer.builder("billing", keys(), (c, m) -> runs.incrementAndGet())
        .tracing(failingAtTheEnd).build();
    Verdict first = consumer.process(message("m-3"));
    assertThat(first.action()).isEqualTo(Verdict.Action.ACK);
    assertThat(first.outcome().replayed()).isFalse();
    Verdict again = consumer.process(message("m-3"));
    assertThat(again.action()).isEqualTo(Verdict.Action.ACK);
    assertThat(again.outcome().replayed()).isTrue();
    assertThat(runs.get()).isEqualTo(1);
  }

  @Test
  void aTracerThatNeverRunsTheWorkStillHasTheMessageHandled() {
    TraceContextPropagation skipping = new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        return Map.of();
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
        return null;
      }
    };
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer consumer = IdempotentConsumer.builder("billing", keys(), (c, m) -> runs.incrementAndGet())
        .tracing(skipping).build();
    assertThat(consumer.process(message("m-4")).action()).isEqualTo(Verdict.Action.ACK);
    assertThat(runs.get()).isEqualTo(1);
  }

  @Test
  void aLeaseModeConsumerHandlesInTheContinuedTraceAndKeepsItsVerdictWhenTheSpanFailsToEnd() {
    List<String> seen = new ArrayList<>();
    TraceContextPropagation failingAtTheEnd = new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        return Map.of();
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
        seen.add(operation + " " + carrier.get("traceparent"));
        work.get();
        throw new IllegalStateException("span could not end");
      }
    };
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer consumer = IdempotentConsumer.leaseBuilder("mailer",
            dev.idem.core.LeaseIdempotency.builder(new dev.idem.core.InMemoryLeaseStore()).build(), (lease, m) -> runs.incrementAndGet())
        .tracing(failingAtTheEnd).build();
    assertThat(consumer.process(message("m-5")).action()).isEqualTo(Verdict.Action.ACK);
    assertThat(consumer.process(message("m-5")).outcome().replayed()).isTrue();
    assertThat(runs.get()).isEqualTo(1);
    assertThat(seen).containsExactly("mailer " + PARENT, "mailer " + PARENT);
  }
}
