package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.spi.TraceContextPropagation;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** What an {@link Outbox} built with a {@link TraceContextPropagation} stores with an intent. */
class OutboxTracingTest {

  private static final String PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private static TraceContextPropagation giving(Map<String, String> context) {
    return new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        return context;
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
        return work.get();
      }
    };
  }

  private static Intent intent() {
    return Intent.jetStream("orders.created", "{}".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void anIntentAddedInATraceCarriesItsContextAsHeaders() {
    Map<String, String> context = new LinkedHashMap<>();
    context.put("traceparent", PARENT);
    context.put("tracestate", "congo=t61rcWkgMzE");
    Intent stored = IntentWriter.traced(giving(context), intent().withHeader("x-tenant", "a"));
    assertThat(stored.headers()).containsExactly(Map.entry("x-tenant", "a"), Map.entry("traceparent", PARENT),
        Map.entry("tracestate", "congo=t61rcWkgMzE"));
  }

  @Test
  void aTraceHeaderTheIntentAlreadyHasIsKept() {
    Intent own = intent().withHeader("TraceParent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    Intent stored = IntentWriter.traced(giving(Map.of("traceparent", PARENT)), own);
    assertThat(stored).isEqualTo(own);
  }

  @Test
  void withoutACurrentSpanOrWithoutTracingTheIntentIsUnchanged() {
    assertThat(IntentWriter.traced(giving(Map.of()), intent())).isEqualTo(intent());
    assertThat(IntentWriter.traced(Outbox.builder().build().tracing(), intent())).isEqualTo(intent());
  }

  @Test
  void aTracerThatFailsOrGivesAnUnsendableValueNeverFailsTheWrite() {
    TraceContextPropagation failing = new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        throw new IllegalStateException("tracer down");
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
        return work.get();
      }
    };
    assertThat(IntentWriter.traced(failing, intent())).isEqualTo(intent());
    Intent stored = IntentWriter.traced(giving(Map.of("traceparent", "a\r\nx-injected: 1")), intent());
    assertThat(stored).isEqualTo(intent());
  }

  /**
   * A tracer of the application's own that breaks its contract (a null map or value, one name in
   * two cases) or gives a value a transport refuses (NATS: not ASCII) neither fails the write nor
   * makes an intent that no relay can send.
   */
  @Test
  void aTracersNullsRepeatedNamesAndNonAsciiValuesAreDropped() {
    assertThat(IntentWriter.traced(giving(null), intent())).isEqualTo(intent());

    Map<String, String> context = new LinkedHashMap<>();
    context.put("traceparent", PARENT);
    context.put("tracestate", null);
    context.put("TraceParent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    context.put("x-user", "Jos\u00e9");
    context.put("baggage", "user=Jos%C3%A9");
    Intent stored = IntentWriter.traced(giving(context), intent());
    assertThat(stored.headers()).containsExactly(Map.entry("traceparent", PARENT), Map.entry("baggage", "user=Jos%C3%A9"));
  }
}
