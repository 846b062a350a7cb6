package dev.idem.client.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.RetryBudget;
import dev.idem.client.spring.ScriptedServer.Answer;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.OutcomeUnknownException;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.http.client.JdkClientHttpRequestFactory;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.RestClient;

class IdempotentRequestInterceptorTest {

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

  private IdempotentRequestInterceptor.Builder interceptor() {
    return IdempotentRequestInterceptor.builder().clock(time).sleeper(time).random(() -> 0.5)
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(5).maxDuration(Duration.ofMinutes(1)).build())
        .retryBudget(RetryBudget.unlimited());
  }

  private RestClient client(String baseUrl, IdempotentRequestInterceptor interceptor) {
    return RestClient.builder().baseUrl(baseUrl).requestFactory(new JdkClientHttpRequestFactory(HttpClient.newHttpClient()))
        .requestInterceptor(interceptor).build();
  }

  private RestClient client(IdempotentRequestInterceptor interceptor) {
    return client(server.uri().toString(), interceptor);
  }

  private static ResponseEntity<String> postNote(RestClient client) {
    return client.post().uri("/notes").body("{\"title\":\"milk\"}").retrieve().toEntity(String.class);
  }

  @Test
  void twoServiceUnavailableThenCreatedIsThreeAttemptsWithOneKeyAndTheSameBody() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), new Answer(201, Map.of(), "created"));

    ResponseEntity<String> answer = postNote(client(interceptor().build()));

    assertThat(answer.getStatusCode().value()).isEqualTo(201);
    assertThat(answer.getBody()).isEqualTo("created");
    assertThat(server.received()).hasSize(3).allSatisfy(r -> assertThat(r.body()).isEqualTo("{\"title\":\"milk\"}"));
    assertThat(server.keys()).doesNotContainNull().containsOnly(server.keys().get(0));
    assertThat(server.keys().get(0)).matches("\"[0-9a-f-]{36}\"");
    assertThat(time.waits()).containsExactly(Duration.ofMillis(50), Duration.ofMillis(100));
  }

  @Test
  void retryAfterIsTheWaitBeforeTheRetry() {
    server = new ScriptedServer(Answer.of(503, "Retry-After", "2"), Answer.of(429, "Retry-After", "5"), Answer.of(201));

    postNote(client(interceptor().build()));

    assertThat(server.received()).hasSize(3);
    assertThat(time.waits()).containsExactly(Duration.ofSeconds(2), Duration.ofSeconds(5));
  }

  /** A read timeout of the request factory is an IOException: the outcome is unknown, retried with the same key. */
  @Test
  void aReadTimeoutIsRetriedWithTheSameKey() {
    server = new ScriptedServer(Answer.of(201)).firstAnswerAfter(3000);
    JdkClientHttpRequestFactory factory = new JdkClientHttpRequestFactory(HttpClient.newHttpClient());
    factory.setReadTimeout(Duration.ofMillis(300));
    RestClient client = RestClient.builder().baseUrl(server.uri().toString()).requestFactory(factory)
        .requestInterceptor(interceptor().build()).build();

    client.post().uri("/notes").body("{}").retrieve().toBodilessEntity();

    assertThat(server.received()).hasSize(2);
    assertThat(server.keys()).doesNotContainNull().containsOnly(server.keys().get(0));
  }

  @Test
  void keyReusedProblemIsNotRetried() {
    server = new ScriptedServer(new Answer(422, Map.of("Content-Type", "application/problem+json"), KEY_REUSED_PROBLEM));

    assertThatThrownBy(() -> postNote(client(interceptor().build()))).isInstanceOf(IdempotencyKeyReusedException.class);
    assertThat(server.received()).hasSize(1);
    assertThat(time.waits()).isEmpty();
  }

  @Test
  void anotherUnprocessableAnswerIsReturnedWithItsBody() {
    server = new ScriptedServer(new Answer(422, Map.of("Content-Type", "application/json"), "{\"errors\":{\"title\":[\"is blank\"]}}"));

    ResponseEntity<String> answer = client(interceptor().build()).post().uri("/notes").body("{}").retrieve()
        .onStatus(HttpStatusCode::isError, (request, response) -> {})
        .toEntity(String.class);

    assertThat(answer.getStatusCode().value()).isEqualTo(422);
    assertThat(answer.getBody()).isEqualTo("{\"errors\":{\"title\":[\"is blank\"]}}");
    assertThat(server.received()).hasSize(1);
  }

  @Test
  void badRequestIsNotRetried() {
    server = new ScriptedServer(Answer.of(400), Answer.of(201));

    assertThatThrownBy(() -> postNote(client(interceptor().build()))).isInstanceOf(HttpClientErrorException.BadRequest.class);
    assertThat(server.received()).hasSize(1);
  }

  @Test
  void theDeadlineStopsRetries() {
    server = new ScriptedServer(Answer.of(503, "Retry-After", "4"));
    IdempotentRequestInterceptor interceptor = interceptor()
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(10).maxDuration(Duration.ofSeconds(10)).build()).build();

    assertThatThrownBy(() -> postNote(client(interceptor))).isInstanceOfSatisfying(OutcomeUnknownException.class, e -> {
      assertThat(e.attempts()).isEqualTo(3);
      assertThat(e.lastStatus()).isEqualTo(503);
      assertThat("\"" + e.key().value() + "\"").isEqualTo(server.keys().get(0));
    });
    assertThat(server.received()).hasSize(3);
    assertThat(time.waits()).containsExactly(Duration.ofSeconds(4), Duration.ofSeconds(4));
  }

  @Test
  void theBudgetStopsRetries() {
    server = new ScriptedServer(Answer.of(503));
    IdempotentRequestInterceptor interceptor = interceptor().retryBudget(RetryBudget.create(0, 1)).build();

    assertThatThrownBy(() -> postNote(client(interceptor))).isInstanceOf(OutcomeUnknownException.class);
    assertThat(server.received()).as("one retry from the budget's single token").hasSize(2);
    assertThatThrownBy(() -> postNote(client(interceptor))).isInstanceOf(OutcomeUnknownException.class);
    assertThat(server.received()).as("the budget is spent: no retry").hasSize(3);
  }

  @Test
  void aConnectionFailureIsRetriedAndEndsUnknown() throws Exception {
    int closed;
    try (ServerSocket socket = new ServerSocket(0)) {
      closed = socket.getLocalPort();
    }

    assertThatThrownBy(() -> postNote(client("http://127.0.0.1:" + closed, interceptor().build())))
        .isInstanceOfSatisfying(OutcomeUnknownException.class, e -> {
          assertThat(e.attempts()).isEqualTo(5);
          assertThat(e.lastStatus()).isEqualTo(-1);
          assertThat(e.getCause()).isInstanceOf(ConnectException.class);
        });
    assertThat(time.waits()).hasSize(4);
  }

  @Test
  void aKeyTheCallerSetIsKeptOnEveryAttempt() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));

    client(interceptor().build()).post().uri("/notes").header("Idempotency-Key", "order-42").body("{}").retrieve().toBodilessEntity();

    assertThat(server.keys()).containsExactly("order-42", "order-42");
  }

  /** The bug: with two Idempotency-Key fields the interceptor keyed the operation on the first and sent both. */
  @Test
  void aCallerHeaderWithTwoKeyFieldsIsRefusedBeforeSending() {
    server = new ScriptedServer(Answer.of(201));

    assertThatThrownBy(() -> client(interceptor().build()).post().uri("/notes").header("Idempotency-Key", "order-1", "order-2")
        .body("{}").retrieve().toBodilessEntity()).isInstanceOf(InvalidIdempotencyKeyException.class);
    assertThat(server.received()).isEmpty();
  }

  /** The bug: a caller's field that is no single key (a list, a bare key with a comma) was sent as it was. */
  @Test
  void aCallerKeyFieldTheServerWouldRefuseIsRefusedBeforeSending() {
    server = new ScriptedServer(Answer.of(201));
    RestClient client = client(interceptor().build());

    for (String field : List.of("\"a\", \"b\"", "a,b")) {
      assertThatThrownBy(() -> client.post().uri("/notes").header("Idempotency-Key", field).body("{}").retrieve().toBodilessEntity())
          .as(field).isInstanceOf(InvalidIdempotencyKeyException.class);
    }
    assertThat(server.received()).isEmpty();
  }

  /** The bug: a request whose method was spelled in lower case passed through with no key and no retries. */
  @Test
  void aLowerCaseMethodIsKeyedAndRetriedAsItsUpperCase() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));

    client(interceptor().build()).method(HttpMethod.valueOf("post")).uri("/notes").body("{}").retrieve().toBodilessEntity();

    assertThat(server.keys()).hasSize(2).doesNotContainNull().containsOnly(server.keys().get(0));
  }

  @Test
  void safeMethodsPassThroughWithoutKeyOrRetry() {
    server = new ScriptedServer(Answer.of(503), Answer.of(200));

    assertThatThrownBy(() -> client(interceptor().build()).get().uri("/notes").retrieve().toBodilessEntity())
        .hasMessageContaining("503");
    assertThat(server.keys()).containsExactly((String) null);
  }

  /**
   * The anti-pattern on the blocking side: a retry around the whole call (here a loop, as Spring
   * Retry's {@code @Retryable} would do) that lets each call make its key sends a new key per try;
   * the key made once, outside the retry, and set as the header is kept.
   */
  @Test
  void aRetryAroundTheCallNeedsTheKeyMadeOnceOutsideIt() {
    server = new ScriptedServer(Answer.of(503), Answer.of(503), Answer.of(201), Answer.of(503), Answer.of(503), Answer.of(201));
    RestClient client = client(interceptor().retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build());

    for (int attempt = 0; attempt < 3; attempt++) { // wrong: a key per try
      try {
        client.post().uri("/notes").body("{}").retrieve().toBodilessEntity();
        break;
      } catch (OutcomeUnknownException e) {
        // retry
      }
    }
    String key = UUID.randomUUID().toString(); // right: one key for the operation
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        client.post().uri("/notes").header("Idempotency-Key", key).body("{}").retrieve().toBodilessEntity();
        break;
      } catch (OutcomeUnknownException e) {
        // retry
      }
    }

    assertThat(server.keys().subList(0, 3)).doesNotHaveDuplicates();
    assertThat(server.keys().subList(3, 6)).containsOnly(key);
  }

  @Test
  void anInterruptDuringTheWaitEndsUnknownAndKeepsTheInterrupt() {
    server = new ScriptedServer(Answer.of(503), Answer.of(201));
    IdempotentRequestInterceptor interceptor = interceptor().sleeper(d -> {
      throw new InterruptedException();
    }).build();

    try {
      assertThatThrownBy(() -> postNote(client(interceptor))).isInstanceOf(OutcomeUnknownException.class);
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
    assertThat(server.received()).hasSize(1);
  }
}
