package dev.idem.client.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.RetryBudget;
import dev.idem.client.spring.ScriptedServer.Answer;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.OutcomeUnknownException;
import java.io.ByteArrayInputStream;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.InputStreamResource;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpMethod;
import org.springframework.http.client.reactive.JdkClientHttpConnector;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import org.springframework.web.reactive.function.client.WebClientResponseException;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.NonBlocking;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;

class IdempotentExchangeFilterTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String KEY_REUSED_PROBLEM =
      "{\"type\":\"urn:idem:problem:idempotency-key-reused\",\"title\":\"Idempotency key reused\",\"status\":422}";

  private final ManualTime time = new ManualTime();
  private ScriptedServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private IdempotentExchangeFilter.Builder filter() {
    return IdempotentExchangeFilter.builder().clock(time).scheduler(time).random(() -> 0.5)
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(5).maxDuration(Duration.ofMinutes(1)).build())
        .retryBudget(RetryBudget.unlimited());
  }

  private WebClient client(IdempotentExchangeFilter filter) {
    return WebClient.builder().baseUrl(server.uri().toString()).clientConnector(new JdkClientHttpConnector(HttpClient.newHttpClient()))
        .filter(filter).build();
  }

  private Mono<String> postNote(WebClient client) {
    return client.post().uri("/notes").bodyValue("{\"title\":\"milk\"}").retrieve().bodyToMono(String.class);
  }

  @Test
  void twoServiceUnavailableThenCreatedIsThreeAttemptsWithOneKey() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), new Answer(201, Map.of(), "created"));

    String body = postNote(client(filter().build())).block(WAIT);

    assertThat(body).isEqualTo("created");
    assertThat(server.received()).hasSize(3).allSatisfy(r -> assertThat(r.body()).isEqualTo("{\"title\":\"milk\"}"));
    assertThat(server.keys()).doesNotContainNull().containsOnly(server.keys().get(0));
    assertThat(server.keys().get(0)).matches("\"[0-9a-f-]{36}\"");
    // no Retry-After: the policy's backoff, full jitter at 0.5 of 100 ms then 200 ms
    assertThat(time.waits()).containsExactly(Duration.ofMillis(50), Duration.ofMillis(100));
  }

  @Test
  void retryAfterIsTheWaitBeforeTheRetry() {
    server = new ScriptedServer(Answer.of(503, "Retry-After", "2"), Answer.of(429, "Retry-After", "5"), Answer.of(201));

    postNote(client(filter().build())).block(WAIT);

    assertThat(server.received()).hasSize(3);
    assertThat(time.waits()).containsExactly(Duration.ofSeconds(2), Duration.ofSeconds(5));
  }

  /** An attempt that outlasts the policy's attempt timeout is a lost response: retried with the same key. */
  @Test
  void anAttemptThatTimesOutIsRetriedWithTheSameKey() {
    server = new ScriptedServer(Answer.of(201)).firstAnswerAfter(3000);
    IdempotentExchangeFilter filter = filter().retryPolicy(ClientRetryPolicy.builder().maxAttempts(3)
        .maxDuration(Duration.ofMinutes(1)).attemptTimeout(Duration.ofMillis(300)).build()).build();

    client(filter).post().uri("/notes").bodyValue("{}").retrieve().toBodilessEntity().block(WAIT);

    assertThat(server.received()).hasSize(2);
    assertThat(server.keys()).doesNotContainNull().containsOnly(server.keys().get(0));
  }

  @Test
  void keyReusedProblemIsNotRetried() {
    server = new ScriptedServer(new Answer(422, Map.of("Content-Type", "application/problem+json"), KEY_REUSED_PROBLEM));

    assertThatThrownBy(() -> postNote(client(filter().build())).block(WAIT)).isInstanceOf(IdempotencyKeyReusedException.class);
    assertThat(server.received()).hasSize(1);
    assertThat(time.waits()).isEmpty();
  }

  @Test
  void anotherUnprocessableAnswerIsPassedOnWithItsBody() {
    server = new ScriptedServer(new Answer(422, Map.of("Content-Type", "application/json"), "{\"errors\":{\"title\":[\"is blank\"]}}"));

    assertThatThrownBy(() -> postNote(client(filter().build())).block(WAIT))
        .isInstanceOfSatisfying(WebClientResponseException.class, e -> {
          assertThat(e.getStatusCode().value()).isEqualTo(422);
          assertThat(e.getResponseBodyAsString()).isEqualTo("{\"errors\":{\"title\":[\"is blank\"]}}");
        });
    assertThat(server.received()).hasSize(1);
  }

  /**
   * The bug: the filter read a 422's body (to tell the key-reused problem from any other 422) with
   * the codecs' in-memory limit, 256 KiB by default, and a larger 422 (a long list of validation
   * errors) failed the exchange with DataBufferLimitException instead of being passed on.
   */
  @Test
  void anotherUnprocessableAnswerLargerThanTheCodecLimitIsPassedOnWhole() {
    String errors = "{\"errors\":\"" + "x".repeat(300_000) + "\"}";
    server = new ScriptedServer(new Answer(422, Map.of("Content-Type", "application/problem+json"), errors));

    // read as buffers, so that the caller's own reading does not meet the codecs' limit
    String body = client(filter().build()).post().uri("/notes").bodyValue("{}")
        .exchangeToMono(response -> response.bodyToFlux(DataBuffer.class).map(buffer -> {
          String chunk = buffer.toString(StandardCharsets.UTF_8);
          DataBufferUtils.release(buffer);
          return chunk;
        }).collect(Collectors.joining())).block(WAIT);

    assertThat(body).isEqualTo(errors);
    assertThat(server.received()).hasSize(1);
  }

  /**
   * Only a 422 that may be the key-reused problem (application/problem+json) is read by the filter;
   * another 422 reaches the caller unread, so its size is the caller's business (its codecs' limit).
   */
  @Test
  void anUnprocessableAnswerThatIsNoProblemIsPassedOnUnread() {
    server = new ScriptedServer(new Answer(422, Map.of("Content-Type", "application/json"), "{\"errors\":{}}"));
    AtomicInteger bodyReads = new AtomicInteger();
    ExchangeFilterFunction counting = (request, next) -> next.exchange(request)
        .map(r -> r.mutate().body(body -> body.doFirst(bodyReads::incrementAndGet)).build());
    WebClient client = WebClient.builder().baseUrl(server.uri().toString()).clientConnector(new JdkClientHttpConnector(HttpClient.newHttpClient()))
        .filter(filter().build()).filter(counting).build();

    int readsBeforeTheCaller = client.post().uri("/notes").bodyValue("{}")
        .exchangeToMono(response -> {
          int before = bodyReads.get();
          return response.releaseBody().thenReturn(before);
        }).block(WAIT);

    assertThat(readsBeforeTheCaller).isZero();
  }

  @Test
  void badRequestIsNotRetried() {
    server = new ScriptedServer(Answer.of(400), Answer.of(201));

    assertThatThrownBy(() -> postNote(client(filter().build())).block(WAIT))
        .isInstanceOfSatisfying(WebClientResponseException.class, e -> assertThat(e.getStatusCode().value()).isEqualTo(400));
    assertThat(server.received()).hasSize(1);
  }

  @Test
  void replayedConflictIsFinal() {
    server = new ScriptedServer(Answer.of(409, "Idempotent-Replayed", "true"), Answer.of(201));

    assertThatThrownBy(() -> postNote(client(filter().build())).block(WAIT)).isInstanceOf(WebClientResponseException.Conflict.class);
    assertThat(server.received()).hasSize(1);
  }

  @Test
  void theDeadlineStopsRetries() {
    server = new ScriptedServer(Answer.of(503, "Retry-After", "4"));
    IdempotentExchangeFilter filter = filter()
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(10).maxDuration(Duration.ofSeconds(10)).build()).build();

    assertThatThrownBy(() -> postNote(client(filter)).block(WAIT)).isInstanceOfSatisfying(OutcomeUnknownException.class, e -> {
      assertThat(e.phase()).isEqualTo(OutcomeUnknownException.Phase.CLIENT_RETRIES_EXHAUSTED);
      assertThat(e.attempts()).isEqualTo(3);
      assertThat(e.lastStatus()).isEqualTo(503);
      assertThat("\"" + e.key().value() + "\"").isEqualTo(server.keys().get(0));
    });
    // attempts at 0 s, 4 s and 8 s; a fourth at 12 s would start past the 10 s deadline
    assertThat(server.received()).hasSize(3);
    assertThat(time.waits()).containsExactly(Duration.ofSeconds(4), Duration.ofSeconds(4));
  }

  @Test
  void retryAfterPastTheDeadlineEndsTheOperationWithoutWaiting() {
    server = new ScriptedServer(Answer.of(503, "Retry-After", "120"), Answer.of(201));

    assertThatThrownBy(() -> postNote(client(filter().build())).block(WAIT))
        .isInstanceOfSatisfying(OutcomeUnknownException.class, e -> assertThat(e.serverRetryAfter()).contains(Duration.ofSeconds(120)));
    assertThat(server.received()).hasSize(1);
    assertThat(time.waits()).isEmpty();
  }

  @Test
  void theBudgetStopsRetries() {
    server = new ScriptedServer(Answer.of(503));
    IdempotentExchangeFilter filter = filter().retryBudget(RetryBudget.create(0, 1)).build();

    assertThatThrownBy(() -> postNote(client(filter)).block(WAIT)).isInstanceOf(OutcomeUnknownException.class);
    assertThat(server.received()).as("one retry from the budget's single token").hasSize(2);
    assertThatThrownBy(() -> postNote(client(filter)).block(WAIT)).isInstanceOf(OutcomeUnknownException.class);
    assertThat(server.received()).as("the budget is spent: no retry").hasSize(3);
  }

  /**
   * The bug: the body of an answer to be retried (a 503) was drained with no bound, so a server
   * that sent the head and then stalled in the body held the operation (and its retries) for as
   * long as the connection lived, past the attempt timeout and the deadline. Draining is now
   * bounded by the attempt's timeout (shortened to the time left); then the body is cancelled,
   * which closes its connection, and the retry goes on.
   */
  @Test
  void aRetryableAnswerWhoseBodyStallsIsDroppedAfterTheAttemptTimeout() throws Exception {
    List<String> keys = new CopyOnWriteArrayList<>();
    CountDownLatch done = new CountDownLatch(1);
    try (ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread serving = new Thread(() -> {
        try (Socket stalled = socket.accept()) {
          keys.add(keyOfRequest(stalled.getInputStream()));
          stalled.getOutputStream().write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\n0123456789".getBytes(StandardCharsets.ISO_8859_1));
          stalled.getOutputStream().flush();
          try (Socket next = socket.accept()) {
            keys.add(keyOfRequest(next.getInputStream()));
            next.getOutputStream().write("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            next.getOutputStream().flush();
            done.await(20, TimeUnit.SECONDS); // the stalled body's connection stays open until the test ends
          }
        } catch (IOException | InterruptedException e) {
          // the test has ended
        }
      });
      serving.setDaemon(true);
      serving.start();
      IdempotentExchangeFilter filter = filter().retryPolicy(ClientRetryPolicy.builder().maxAttempts(3)
          .maxDuration(Duration.ofMinutes(1)).attemptTimeout(Duration.ofMillis(300)).build()).build();
      WebClient client = WebClient.builder().baseUrl("http://127.0.0.1:" + socket.getLocalPort())
          .clientConnector(new JdkClientHttpConnector(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build())).filter(filter).build();
      try {
        int status = client.post().uri("/notes").bodyValue("{}").retrieve().toBodilessEntity().map(r -> r.getStatusCode().value()).block(WAIT);

        assertThat(status).isEqualTo(201);
        assertThat(keys).hasSize(2).doesNotContainNull().containsOnly(keys.get(0));
      } finally {
        done.countDown();
      }
    }
  }

  /** Reads one request's head and its Content-Length body off a socket. @return its Idempotency-Key field, or null */
  private static String keyOfRequest(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (head.indexOf("\r\n\r\n") < 0) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.append((char) b);
    }
    String key = null;
    int length = 0;
    for (String line : head.toString().split("\r\n")) {
      String lower = line.toLowerCase(Locale.ROOT);
      if (lower.startsWith("idempotency-key:")) {
        key = line.substring("idempotency-key:".length()).trim();
      } else if (lower.startsWith("content-length:")) {
        length = Integer.parseInt(line.substring("content-length:".length()).trim());
      }
    }
    in.readNBytes(length);
    return key;
  }

  @Test
  void aConnectionFailureIsRetriedAndEndsUnknown() throws Exception {
    int closed;
    try (ServerSocket socket = new ServerSocket(0)) {
      closed = socket.getLocalPort();
    }
    WebClient client = WebClient.builder().baseUrl("http://127.0.0.1:" + closed)
        .clientConnector(new JdkClientHttpConnector(HttpClient.newHttpClient())).filter(filter().build()).build();

    assertThatThrownBy(() -> postNote(client).block(WAIT)).isInstanceOfSatisfying(OutcomeUnknownException.class, e -> {
      assertThat(e.attempts()).isEqualTo(5);
      assertThat(e.lastStatus()).isEqualTo(-1);
      assertThat(e.getCause()).isInstanceOf(WebClientRequestException.class);
    });
    assertThat(time.waits()).hasSize(4);
  }

  @Test
  void aKeyTheCallerSetIsKeptOnEveryAttempt() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));

    client(filter().build()).post().uri("/notes").header("Idempotency-Key", "order-42").bodyValue("{}").retrieve().toBodilessEntity().block(WAIT);

    assertThat(server.keys()).containsExactly("order-42", "order-42");
  }

  @Test
  void anInvalidKeyFromTheCallerIsRefusedBeforeSending() {
    server = new ScriptedServer(Answer.of(201));

    assertThatThrownBy(() -> client(filter().build()).post().uri("/notes").header("Idempotency-Key", "\"\"").bodyValue("{}")
        .retrieve().toBodilessEntity().block(WAIT)).isInstanceOf(InvalidIdempotencyKeyException.class);
    assertThat(server.received()).isEmpty();
  }

  /**
   * The bug: with two Idempotency-Key fields the filter keyed the operation on the first and sent
   * both; the draft (section 2.1) allows one, an Idem server refuses the request with 400, and the
   * key the filter would report is not the one the server saw.
   */
  @Test
  void aCallerHeaderWithTwoKeyFieldsIsRefusedBeforeSending() {
    server = new ScriptedServer(Answer.of(201));

    assertThatThrownBy(() -> client(filter().build()).post().uri("/notes").header("Idempotency-Key", "order-1", "order-2")
        .bodyValue("{}").retrieve().toBodilessEntity().block(WAIT)).isInstanceOf(InvalidIdempotencyKeyException.class);
    assertThat(server.received()).isEmpty();
  }

  /**
   * The bug: a caller's field that is no single key (a list, characters after the closing quote, a
   * comma or space in a bare key) was sent as it was, and the server's 400 came back instead of
   * the refusal before sending that the filter promises.
   */
  @Test
  void aCallerKeyFieldTheServerWouldRefuseIsRefusedBeforeSending() {
    server = new ScriptedServer(Answer.of(201));
    WebClient client = client(filter().build());

    for (String field : List.of("\"a\", \"b\"", "\"a\"x", "a,b", "a b", "\"a", "\"a\\x\"")) {
      assertThatThrownBy(() -> client.post().uri("/notes").header("Idempotency-Key", field).bodyValue("{}")
          .retrieve().toBodilessEntity().block(WAIT)).as(field).isInstanceOf(InvalidIdempotencyKeyException.class);
    }
    client.post().uri("/notes").header("Idempotency-Key", "\"a \\\"b\\\\\"").bodyValue("{}").retrieve().toBodilessEntity().block(WAIT);
    assertThat(server.keys()).as("a well-formed sf-string with escapes is kept as it is").containsExactly("\"a \\\"b\\\\\"");
  }

  /**
   * The bug: a request whose method was spelled in lower case ({@code HttpMethod.valueOf("post")})
   * passed through with no key and no retries, although the builder takes its methods in any case.
   */
  @Test
  void aLowerCaseMethodIsKeyedAndRetriedAsItsUpperCase() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));

    client(filter().build()).method(HttpMethod.valueOf("post")).uri("/notes").bodyValue("{}").retrieve().toBodilessEntity().block(WAIT);

    assertThat(server.keys()).hasSize(2).doesNotContainNull().containsOnly(server.keys().get(0));
  }

  /**
   * Regression: a body that can be sent once (here an InputStreamResource; a unicast Flux, or a
   * pooled DataBuffer released by the first write, are others) failed every later attempt at once,
   * and WebClient wraps that failure in WebClientRequestException, which the filter took for a
   * transport failure: it made all its attempts (and waits) anyway, took a token of the shared retry
   * budget for each, and reported "5 attempts" where one request was sent. It ends at the first
   * resend that fails in the body itself, with the key, after one wait.
   */
  @Test
  void aBodyThatCanBeSentOnlyOnceEndsTheOperationAtTheFirstResend() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));
    InputStreamResource once = new InputStreamResource(new ByteArrayInputStream("{}".getBytes(StandardCharsets.UTF_8)));

    assertThatThrownBy(() -> client(filter().build()).post().uri("/notes").bodyValue(once)
        .retrieve().toBodilessEntity().block(WAIT))
        .isInstanceOfSatisfying(OutcomeUnknownException.class, e -> assertThat(e.getMessage()).contains("after 1 attempt"));
    assertThat(server.received()).hasSize(1);
    assertThat(time.waits()).hasSize(1);
  }

  /** A body that fails on the first attempt is the caller's own error, as without the filter: nothing retried, nothing waited. */
  @Test
  void aBodyThatFailsAtTheFirstAttemptIsTheCallersErrorAndIsNotRetried() {
    server = new ScriptedServer(Answer.of(201));

    assertThatThrownBy(() -> client(filter().build()).post().uri("/notes")
        .body(Flux.<String>error(new IllegalStateException("the body could not be made")), String.class)
        .retrieve().toBodilessEntity().block(WAIT))
        .isInstanceOf(IllegalStateException.class).hasMessage("the body could not be made");
    assertThat(time.waits()).isEmpty();
  }

  @Test
  void safeMethodsPassThroughWithoutKeyOrRetry() {
    server = new ScriptedServer(Answer.of(503), Answer.of(200));

    assertThatThrownBy(() -> client(filter().build()).get().uri("/notes").retrieve().toBodilessEntity().block(WAIT))
        .isInstanceOf(WebClientResponseException.ServiceUnavailable.class);
    assertThat(server.keys()).containsExactly((String) null);
  }

  /**
   * The trap: {@code .retryWhen(...)} after {@code .retrieve()} resubscribes the whole exchange, and
   * WebClient builds a new request from its spec each time. A key bound to the spec with {@code
   * attributes(newKey())} is made once, when the spec is built, and every resubscription sends it.
   */
  @Test
  void retryWhenAfterRetrieveKeepsTheKeyBoundToTheSpec() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(201));
    WebClient client = client(filter().retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build());

    client.post().uri("/notes").attributes(IdempotentExchangeFilter.newKey()).bodyValue("{}")
        .retrieve().toBodilessEntity()
        .retryWhen(Retry.max(3).filter(OutcomeUnknownException.class::isInstance))
        .block(WAIT);

    assertThat(server.received()).hasSize(3);
    assertThat(server.keys()).doesNotContainNull().containsOnly(server.keys().get(0));
  }

  /** As above, with no attribute at the call: install() binds a key to every spec the client makes. */
  @Test
  void retryWhenAfterRetrieveKeepsTheKeyThatInstallBinds() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(201));
    IdempotentExchangeFilter filter = filter().retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build();
    WebClient client = WebClient.builder().baseUrl(server.uri().toString())
        .clientConnector(new JdkClientHttpConnector(HttpClient.newHttpClient())).apply(filter::install).build();

    client.post().uri("/notes").bodyValue("{}").retrieve().toBodilessEntity()
        .retryWhen(Retry.max(3).filter(OutcomeUnknownException.class::isInstance))
        .block(WAIT);
    client.post().uri("/notes").bodyValue("{}").retrieve().toBodilessEntity().block(WAIT);

    List<String> keys = server.keys();
    assertThat(keys).hasSize(4).doesNotContainNull();
    assertThat(keys.subList(0, 3)).as("one operation, three subscriptions").containsOnly(keys.get(0));
    assertThat(keys.get(3)).as("the next operation has its own key").isNotEqualTo(keys.get(0));
  }

  /**
   * install() binds a key to every spec; a key the caller binds with key(...), such as the key of an
   * operation resumed after OutcomeUnknownException, must not be replaced by it (WebClient applies
   * the default request when the spec is made, before the caller's attributes).
   */
  @Test
  void installDoesNotReplaceAKeyTheCallerBinds() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));
    WebClient client = WebClient.builder().baseUrl(server.uri().toString())
        .clientConnector(new JdkClientHttpConnector(HttpClient.newHttpClient())).apply(filter().build()::install).build();

    client.post().uri("/notes").attributes(IdempotentExchangeFilter.key("order-7")).bodyValue("{}").retrieve().toBodilessEntity().block(WAIT);

    assertThat(server.keys()).containsExactly("\"order-7\"", "\"order-7\"");
  }

  /**
   * Why the key must be bound to the spec: with nothing bound, the filter makes its key when a
   * request reaches it, and an outer retryWhen sends a new request, with a new key, each time.
   */
  @Test
  void withNothingBoundAnOuterRetryWhenGetsANewKeyPerSubscription() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(201));
    WebClient client = client(filter().retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build());

    client.post().uri("/notes").bodyValue("{}").retrieve().toBodilessEntity()
        .retryWhen(Retry.max(3).filter(OutcomeUnknownException.class::isInstance))
        .block(WAIT);

    assertThat(server.keys()).hasSize(3).doesNotHaveDuplicates();
  }

  /**
   * The anti-pattern of the docs: a key made inside Mono.defer is made again on every subscription,
   * so each retry is a new operation to the server.
   */
  @Test
  void aKeyMadeInsideDeferIsANewKeyPerSubscription() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(201));
    WebClient client = client(filter().retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build());

    Mono.defer(() -> client.post().uri("/notes").header("Idempotency-Key", UUID.randomUUID().toString()).bodyValue("{}")
            .retrieve().toBodilessEntity())
        .retryWhen(Retry.max(3).filter(OutcomeUnknownException.class::isInstance))
        .block(WAIT);

    assertThat(server.keys()).hasSize(3).doesNotHaveDuplicates();
  }

  /** The right way with Mono.defer: the key made once, outside it. */
  @Test
  void aKeyMadeOnceOutsideDeferIsKept() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(201));
    WebClient client = client(filter().retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build());

    String key = UUID.randomUUID().toString();
    Mono.defer(() -> client.post().uri("/notes").attributes(IdempotentExchangeFilter.key(key)).bodyValue("{}")
            .retrieve().toBodilessEntity())
        .retryWhen(Retry.max(3).filter(OutcomeUnknownException.class::isInstance))
        .block(WAIT);

    assertThat(server.keys()).containsExactly("\"" + key + "\"", "\"" + key + "\"", "\"" + key + "\"");
  }

  /**
   * The filter never blocks the thread that delivers its responses. An inner filter hands every
   * response, and its body, to one thread (an event loop, marked as Reactor's non-blocking, so a
   * block() there fails). Once operation A has started its 30 s wait (real time, on Reactor's
   * parallel scheduler) before its retry, operation B, whose response needs that same thread,
   * completes; a filter that slept would hold the thread, and B, for the 30 s, and B's block(10 s)
   * would fail (as would a wait that never reaches the scheduler).
   */
  @Test
  void theWaitBeforeARetryDoesNotHoldTheResponseThread() throws Exception {
    server = new ScriptedServer(Answer.of(503, "Retry-After", "30"), Answer.of(201));
    ExecutorService executor = Executors.newSingleThreadExecutor(LoopThread::new);
    Scheduler loop = Schedulers.fromExecutorService(executor);
    AtomicInteger waitsStarted = new AtomicInteger();
    Scheduler parallel = Schedulers.parallel();
    Scheduler waits = new Scheduler() {
      @Override
      public Disposable schedule(Runnable task) {
        return parallel.schedule(task);
      }

      @Override
      public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
        Disposable scheduled = parallel.schedule(task, delay, unit);
        waitsStarted.incrementAndGet();
        return scheduled;
      }

      @Override
      public Worker createWorker() {
        return parallel.createWorker();
      }
    };
    try {
      ExchangeFilterFunction onLoop = (request, next) -> next.exchange(request).publishOn(loop)
          .map(response -> response.mutate().body(body -> body.publishOn(loop)).build());
      WebClient client = WebClient.builder().baseUrl(server.uri().toString())
          .clientConnector(new JdkClientHttpConnector(HttpClient.newHttpClient()))
          .filter(IdempotentExchangeFilter.builder().scheduler(waits)
              .retryPolicy(ClientRetryPolicy.builder().maxDuration(Duration.ofMinutes(2)).build()).build())
          .filter(onLoop)
          .build();
      AtomicReference<Throwable> failureOfA = new AtomicReference<>();
      Disposable a = postNote(client).subscribe(x -> {}, failureOfA::set);
      ScriptedServer.await(() -> waitsStarted.get() == 1);

      String b = client.post().uri("/other").bodyValue("{}").retrieve().toBodilessEntity()
          .map(r -> "B " + r.getStatusCode().value() + " on " + Thread.currentThread().getName())
          .block(WAIT);

      assertThat(b).isEqualTo("B 201 on response-loop");
      assertThat(server.received()).extracting(ScriptedServer.Received::path).containsExactly("/notes", "/other");
      assertThat(failureOfA.get()).isNull();
      a.dispose();
    } finally {
      loop.dispose();
    }
  }

  /** A thread Reactor treats as non-blocking: block() on it throws. */
  private static final class LoopThread extends Thread implements NonBlocking {
    LoopThread(Runnable task) {
      super(task, "response-loop");
      setDaemon(true);
    }
  }

  @Test
  void methodsAreConfigurable() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));

    client(filter().methods(Set.of("post")).build()).put().uri("/notes/1").bodyValue("{}").retrieve().toBodilessEntity()
        .onErrorResume(e -> Mono.empty()).block(WAIT);

    assertThat(server.keys()).containsExactly((String) null);
  }
}
