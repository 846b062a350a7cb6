package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.http.HeaderRules;
import dev.idem.core.spi.StoredResponseCodec;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The first attempt's trace context is kept with the key's record ({@link
 * IdemListener.Attempt#traceContext()}, {@link StoredResponse#traceContext()}): both lease engines
 * store it with the answer, a replay finds it, HTTP integrations never store or replay it as a
 * field of the answer, and a record kept without it (by an earlier version, or without tracing)
 * replays as before.
 */
class TraceContextRecordTest {

  private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private static IdempotentRequest request(String body) {
    return IdempotentRequest.ofJson("alice", "POST /charges", "k-1", body.getBytes(StandardCharsets.UTF_8));
  }

  /** A listener whose every attempt has the given context, and that remembers the last result. */
  private static final class Traced implements IdemListener {
    final Map<String, String> context;
    AttemptResult last;

    Traced(Map<String, String> context) {
      this.context = context;
    }

    @Override
    public Attempt started(IdempotentRequest request, String mode) {
      return new Attempt() {
        @Override
        public Map<String, String> traceContext() {
          return context;
        }

        @Override
        public void ended(AttemptResult result) {
          last = result;
        }

        @Override
        public void failed(Throwable error) {}
      };
    }
  }

  @Test
  void aResponseKeepsAContextThatSurvivesTheCodecAndReplacesAnEarlierOne() {
    StoredResponse plain = StoredResponse.builder(201).header("Content-Type", "application/json").body("{}").build();
    assertThat(plain.traceContext()).isEmpty();
    assertThat(plain.withTraceContext(Map.of())).isSameAs(plain);

    Map<String, String> context = new LinkedHashMap<>();
    context.put("traceparent", TRACEPARENT);
    context.put("TraceState", "congo=t61rcWkgMzE");
    StoredResponse traced = plain.withTraceContext(context);
    assertThat(traced.traceContext()).containsExactly(
        Map.entry("traceparent", TRACEPARENT), Map.entry("tracestate", "congo=t61rcWkgMzE"));
    assertThat(traced.status()).isEqualTo(201);
    assertThat(traced.header("Content-Type")).isEqualTo("application/json");
    assertThat(traced.bodyAsString()).isEqualTo("{}");
    assertThat(StoredResponseCodec.decode(StoredResponseCodec.encode(traced)).traceContext())
        .isEqualTo(traced.traceContext());

    StoredResponse again = traced.withTraceContext(Map.of("traceparent", "00-11111111111111111111111111111111-2222222222222222-00"));
    assertThat(again.traceContext()).containsOnlyKeys("traceparent");
    assertThat(again.withTraceContext(Map.of()).traceContext()).isEmpty();
    assertThat(again.withTraceContext(Map.of()).headers()).isEqualTo(plain.headers());

    assertThatThrownBy(() -> plain.withTraceContext(Map.of("traceparent", "a\r\nSet-Cookie: x")))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theContextIsNeverAFieldOfTheAnswerThatHttpStoresOrReplays() {
    assertThat(HeaderRules.neverStored("Idem-Trace-traceparent")).isTrue();
    assertThat(HeaderRules.neverStored("idem-trace-tracestate")).isTrue();
    assertThat(HeaderRules.neverStored("Idem-Tracer")).isFalse();
    assertThat(HeaderRules.neverStored("traceparent")).isFalse();
  }

  @Test
  void theLeaseEngineKeepsTheFirstAttemptsContextAndAReplayFindsIt() {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    Traced first = new Traced(Map.of("traceparent", TRACEPARENT));
    LeaseIdempotency.builder(store).listener(first).build()
        .attempt(request("{\"amount\":1}"), c -> StoredResponse.of(201, "{\"id\":1}"));
    assertThat(first.last.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);

    Traced replay = new Traced(Map.of("traceparent", "00-99999999999999999999999999999999-8888888888888888-01"));
    AttemptResult result = LeaseIdempotency.builder(store).listener(replay).build()
        .attempt(request("{\"amount\":1}"), c -> {
          throw new AssertionError("a replay runs nothing");
        });
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(result.outcomeOrThrow().response().traceContext()).containsExactly(Map.entry("traceparent", TRACEPARENT));
    assertThat(result.outcomeOrThrow().response().bodyAsString()).isEqualTo("{\"id\":1}");
  }

  @Test
  void theNonBlockingEngineKeepsItToo() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    Traced first = new Traced(Map.of("traceparent", TRACEPARENT));
    AsyncLeaseIdempotency.builder(store).listener(first).build()
        .attempt(request("{}"), c -> java.util.concurrent.CompletableFuture.completedFuture(StoredResponse.of(200, "ok")))
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    AttemptResult replay = AsyncLeaseIdempotency.builder(store).build()
        .attempt(request("{}"), c -> {
          throw new AssertionError("a replay runs nothing");
        })
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(replay.outcomeOrThrow().response().traceContext()).containsEntry("traceparent", TRACEPARENT);
  }

  @Test
  void aRecordKeptWithoutAContextReplaysAsBefore() {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    LeaseIdempotency.builder(store).build().attempt(request("{}"), c -> StoredResponse.of(201, "made"));
    Traced replay = new Traced(Map.of("traceparent", TRACEPARENT));
    AttemptResult result = LeaseIdempotency.builder(store).listener(replay).build()
        .attempt(request("{}"), c -> {
          throw new AssertionError("a replay runs nothing");
        });
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(result.outcomeOrThrow().response().traceContext()).isEmpty();
    assertThat(result.outcomeOrThrow().response()).isEqualTo(StoredResponse.of(201, "made"));
  }

  @Test
  void aContextThatCannotBeKeptOrAListenerThatThrowsLeavesTheAnswerAsItWas() {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    Traced broken = new Traced(Map.of("traceparent", "bad\nvalue"));
    AttemptResult result = LeaseIdempotency.builder(store).listener(broken).build()
        .attempt(request("{}"), c -> StoredResponse.of(201, "made"));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(result.outcomeOrThrow().response()).isEqualTo(StoredResponse.of(201, "made"));

    Map<String, String> mixed = new java.util.LinkedHashMap<>();
    mixed.put("traceparent", TRACEPARENT);
    mixed.put("tracestate", "x".repeat(StoredResponse.MAX_HEADER_LENGTH + 1));
    IdempotentRequest third = IdempotentRequest.ofJson("alice", "POST /charges", "k-3", "{}".getBytes(StandardCharsets.UTF_8));
    AttemptResult partly = LeaseIdempotency.builder(store).listener(new Traced(mixed)).build()
        .attempt(third, c -> StoredResponse.of(201, "made"));
    assertThat(partly.outcomeOrThrow().response().traceContext()).as("one field that cannot be kept leaves out only itself")
        .containsExactly(Map.entry("traceparent", TRACEPARENT));

    IdemListener throwing = new IdemListener() {
      @Override
      public Attempt started(IdempotentRequest request, String mode) {
        return new Attempt() {
          @Override
          public Map<String, String> traceContext() {
            throw new IllegalStateException("tracer broke");
          }

          @Override
          public void ended(AttemptResult r) {}

          @Override
          public void failed(Throwable error) {}
        };
      }
    };
    IdempotentRequest other = IdempotentRequest.ofJson("alice", "POST /charges", "k-2", "{}".getBytes(StandardCharsets.UTF_8));
    assertThat(LeaseIdempotency.builder(store).listener(throwing).build()
        .attempt(other, c -> StoredResponse.of(201, "made")).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
  }
}
