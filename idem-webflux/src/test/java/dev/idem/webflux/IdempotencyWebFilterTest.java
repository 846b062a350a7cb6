package dev.idem.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseContext;
import dev.idem.core.http.ProblemCatalog;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;

/**
 * The filter over real HTTP on a real Reactor Netty server, with BlockHound watching its event
 * loops: every test fails if anything on the request path blocks.
 */
class IdempotencyWebFilterTest {

  private final InMemoryLeaseStore store = new InMemoryLeaseStore();
  private final AtomicInteger runs = new AtomicInteger();
  private final AtomicReference<LeaseContext> lastLease = new AtomicReference<>();
  private TestServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private TestServer start(UnaryOperator<AsyncLeaseIdempotency.Builder> engine, UnaryOperator<IdempotencyWebFilterConfig.Builder> config) {
    IdempotencyWebFilterConfig cfg = config.apply(IdempotencyWebFilterConfig.builder(engine.apply(AsyncLeaseIdempotency.builder(store)).build())
        .optionalKey("POST", "/optional")
        .requireKey("POST", "/**"))
        .build();
    server = new TestServer(cfg, routes());
    return server;
  }

  private TestServer start() {
    return start(e -> e, c -> c);
  }

  private RouterFunction<ServerResponse> routes() {
    AtomicInteger flaky = new AtomicInteger();
    AtomicInteger boom = new AtomicInteger();
    return RouterFunctions.route()
        .POST("/charges", req -> req.bodyToMono(String.class).defaultIfEmpty("").flatMap(body -> {
          int n = runs.incrementAndGet();
          IdempotencyWebFilter.leaseContext(req.exchange()).ifPresent(lastLease::set);
          return ServerResponse.status(201).contentType(MediaType.APPLICATION_JSON)
              .header("Location", "/charges/" + n)
              .header("Set-Cookie", "session=" + n)
              .header("Idempotency-Key", "the handler's own")
              .bodyValue("{\"charge\":" + n + ",\"received\":" + body.length() + "}");
        }))
        .POST("/optional", req -> ServerResponse.ok().bodyValue("run " + runs.incrementAndGet()))
        .POST("/slow", req -> Mono.delay(Duration.ofMillis(400))
            .then(Mono.defer(() -> ServerResponse.status(201).bodyValue("slow " + runs.incrementAndGet()))))
        .POST("/flaky", req -> {
          runs.incrementAndGet();
          return flaky.getAndIncrement() == 0
              ? ServerResponse.status(503).bodyValue("try again")
              : ServerResponse.status(201).bodyValue("done");
        })
        .POST("/boom", req -> {
          runs.incrementAndGet();
          return boom.getAndIncrement() == 0
              ? Mono.error(new IllegalStateException("the handler failed"))
              : ServerResponse.status(201).bodyValue("recovered");
        })
        .POST("/forms", req -> req.formData().flatMap(form -> {
          runs.incrementAndGet();
          return ServerResponse.status(201).bodyValue("amount=" + form.getFirst("amount") + ",note=" + form.getFirst("note"));
        }))
        .POST("/large", req -> {
          runs.incrementAndGet();
          return ServerResponse.status(201).contentType(MediaType.TEXT_PLAIN).bodyValue("x".repeat(3000));
        })
        .POST("/blocking", req -> Mono.fromCallable(() -> {
          runs.incrementAndGet();
          Thread.sleep(1); // blocking on an event loop: BlockHound makes it an error
          return "slept";
        }).flatMap(body -> ServerResponse.ok().bodyValue(body)))
        .build();
  }

  private static String key() {
    return UUID.randomUUID().toString();
  }

  @Test
  void theFirstRequestRunsAndIsStoredAndTheRetryIsReplayed() throws Exception {
    TestServer s = start();
    String key = key();
    HttpResponse<String> first = s.send(s.post("/charges", "{\"amount\":10}", key));
    HttpResponse<String> retry = s.send(s.post("/charges", "{ \"amount\" : 10 }", key));

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("{\"charge\":1,\"received\":13}");
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(first.headers().firstValue("Set-Cookie")).as("the first answer is the handler's, cookies included").contains("session=1");
    assertThat(first.headers().allValues("Idempotency-Key")).as("the request's key echoed, once").containsExactly(key);
    assertThat(lastLease.get().key().value()).isEqualTo(key);

    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.headers().firstValue("Location")).contains("/charges/1");
    assertThat(retry.headers().firstValue("Content-Type")).contains("application/json");
    assertThat(retry.headers().firstValue("Set-Cookie")).as("never replayed").isEmpty();
    assertThat(retry.headers().allValues("Idempotency-Key")).containsExactly(key);
    assertThat(runs).as("the handler ran once").hasValue(1);
    assertThat(s.errors()).isEmpty();
  }

  @Test
  void anotherBodyWithTheSameKeyIsAReuse() throws Exception {
    TestServer s = start();
    String key = key();
    s.send(s.post("/charges", "{\"amount\":10}", key));
    HttpResponse<String> reuse = s.send(s.post("/charges", "{\"amount\":11}", key));
    assertThat(reuse.statusCode()).isEqualTo(422);
    assertThat(reuse.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(reuse.body()).contains("\"type\":\"" + IdempotencyWebFilter.PROBLEM_KEY_REUSED + "\"").contains("\"status\":422");
    assertThat(reuse.headers().allValues("Idempotency-Key")).containsExactly(key);
    assertThat(runs).hasValue(1);
  }

  @Test
  void tenConcurrentDuplicatesRunTheHandlerOnceAndTheOthersReplayOrAreInProgress() throws Exception {
    TestServer s = start();
    String key = key();
    List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      all.add(s.client().sendAsync(s.post("/slow", "{\"v\":1}", key).build(), HttpResponse.BodyHandlers.ofString()));
    }
    List<HttpResponse<String>> answers = new ArrayList<>();
    for (CompletableFuture<HttpResponse<String>> f : all) {
      answers.add(f.get(30, TimeUnit.SECONDS));
    }
    assertThat(runs).as("the handler ran once").hasValue(1);
    assertThat(answers).filteredOn(r -> r.statusCode() == 201 && r.headers().firstValue("Idempotent-Replayed").isEmpty()).hasSize(1);
    assertThat(answers).allSatisfy(r -> {
      if (r.statusCode() == 409) {
        assertThat(r.body()).contains(IdempotencyWebFilter.PROBLEM_IN_PROGRESS);
        assertThat(r.headers().firstValue("Retry-After")).contains("1");
      } else {
        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(r.body()).isEqualTo("slow 1");
      }
    });
  }

  @Test
  void tenConcurrentDuplicatesThatWaitAllGetTheOneAnswer() throws Exception {
    TestServer s = start(e -> e.inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(10))), c -> c);
    String key = key();
    List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      all.add(s.client().sendAsync(s.post("/slow", "{\"v\":1}", key).build(), HttpResponse.BodyHandlers.ofString()));
    }
    for (CompletableFuture<HttpResponse<String>> f : all) {
      HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
      assertThat(r.statusCode()).isEqualTo(201);
      assertThat(r.body()).isEqualTo("slow 1");
    }
    assertThat(runs).hasValue(1);
  }

  @Test
  void aMissingRequiredKeyIs400AndTheHandlerDoesNotRun() throws Exception {
    TestServer s = start();
    HttpResponse<String> r = s.send(s.post("/charges", "{}", null));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(r.body()).contains("\"type\":\"" + IdempotencyWebFilter.PROBLEM_KEY_MISSING + "\"").contains("POST /**");
    assertThat(runs).hasValue(0);
  }

  /** problemType(name), which the starter's OpenAPI document names, is the type the filter answers with. */
  @Test
  void theProblemTypeOfTheConfigurationIsTheTypeOfTheAnswer() throws Exception {
    AsyncLeaseIdempotency engine = AsyncLeaseIdempotency.builder(store).build();
    assertThat(IdempotencyWebFilterConfig.builder(engine).build().problemType(ProblemCatalog.KEY_MISSING))
        .isEqualTo(IdempotencyWebFilter.PROBLEM_KEY_MISSING);
    IdempotencyWebFilterConfig based = IdempotencyWebFilterConfig.builder(engine).requireKey("POST", "/**")
        .problemTypeBase(URI.create("https://api.example.com/problems/")).build();
    assertThat(based.problemType(ProblemCatalog.KEY_MISSING)).isEqualTo("https://api.example.com/problems/idempotency-key-missing");
    server = new TestServer(based, routes());
    HttpResponse<String> typed = server.send(server.post("/charges", "{}", null));
    assertThat(typed.statusCode()).isEqualTo(400);
    assertThat(typed.body()).contains("\"type\":\"" + based.problemType(ProblemCatalog.KEY_MISSING) + "\"");
    server.close();
    IdempotencyWebFilterConfig blank = IdempotencyWebFilterConfig.builder(engine).requireKey("POST", "/**")
        .aboutBlankProblemTypes().build();
    assertThat(blank.problemType(ProblemCatalog.KEY_MISSING)).isNull();
    server = new TestServer(blank, routes());
    HttpResponse<String> untyped = server.send(server.post("/charges", "{}", null));
    assertThat(untyped.statusCode()).isEqualTo(400);
    assertThat(untyped.body()).doesNotContain("\"type\"");
  }

  @Test
  void aMalformedKeyIs400AndIsNotEchoed() throws Exception {
    TestServer s = start();
    HttpResponse<String> r = s.send(s.post("/charges", "{}", "\"unclosed"));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("\"type\":\"" + IdempotencyWebFilter.PROBLEM_KEY_MALFORMED + "\"").contains("closing");
    assertThat(r.headers().firstValue("Idempotency-Key")).isEmpty();
    HttpResponse<String> twice = s.send(s.post("/charges", "{}", "a").header("Idempotency-Key", "b"));
    assertThat(twice.statusCode()).isEqualTo(400);
    assertThat(twice.body()).contains("more than one");
    assertThat(runs).hasValue(0);
  }

  /** The servlet filter told its listener of these refusals; the WebFlux filter told nobody, so they were neither counted nor observed. */
  @Test
  void refusalsBeforeTheEngineWereNotToldToTheListener() throws Exception {
    java.util.List<String> refused = new java.util.concurrent.CopyOnWriteArrayList<>();
    dev.idem.core.IdemListener listener = new dev.idem.core.IdemListener() {
      @Override
      public void refused(String operation, String reason) {
        refused.add(operation + " " + reason);
      }
    };
    TestServer s = start(e -> e.listener(listener), c -> c.maxBodyBytes(64));
    s.send(s.post("/charges", "{}", null));
    s.send(s.post("/charges", "{}", "\"unclosed"));
    s.send(s.post("/charges", "{\"pad\":\"" + "x".repeat(100) + "\"}", key()));
    s.send(s.post("/charges", "{not json", key()));
    assertThat(refused).containsExactly("POST /** key-missing", "POST /** key-malformed", "POST /** body-too-large",
        "POST /** payload-invalid");
    assertThat(runs).hasValue(0);
  }

  @Test
  void aQuotedKeyIsTheSameKeyAsItsBareSpelling() throws Exception {
    TestServer s = start();
    String key = key();
    s.send(s.post("/charges", "{}", key));
    HttpResponse<String> quoted = s.send(s.post("/charges", "{}", "\"" + key + "\""));
    assertThat(quoted.statusCode()).as(quoted.body()).isEqualTo(201);
    assertThat(quoted.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(quoted.headers().allValues("Idempotency-Key")).as("echoed as sent").containsExactly("\"" + key + "\"");
    assertThat(runs).hasValue(1);
  }

  @Test
  void aBodyOverTheLimitIs413WhetherAnnouncedOrChunked() throws Exception {
    TestServer s = start(e -> e, c -> c.maxBodyBytes(64));
    String key = key();
    HttpResponse<String> announced = s.send(s.post("/charges", "{\"pad\":\"" + "x".repeat(100) + "\"}", key));
    assertThat(announced.statusCode()).isEqualTo(413);
    assertThat(announced.body()).contains("\"type\":\"" + IdempotencyWebFilter.PROBLEM_BODY_TOO_LARGE + "\"").contains("Content-Length");
    assertThat(announced.headers().allValues("Idempotency-Key")).containsExactly(key);

    byte[] chunked = ("{\"pad\":\"" + "x".repeat(100) + "\"}").getBytes(StandardCharsets.UTF_8);
    HttpResponse<String> streamed = s.send(s.post("/charges", "", key)
        .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(chunked))));
    assertThat(streamed.statusCode()).isEqualTo(413);
    assertThat(streamed.body()).contains(IdempotencyWebFilter.PROBLEM_BODY_TOO_LARGE).contains("longer than 64 bytes");

    HttpResponse<String> fits = s.send(s.post("/charges", "{\"amount\":1}", key));
    assertThat(fits.statusCode()).as("nothing was kept of the refused attempts").isEqualTo(201);
    assertThat(runs).hasValue(1);
  }

  @Test
  void aServerErrorReleasesTheKeySoThatTheRetryRunsAgain() throws Exception {
    TestServer s = start();
    String key = key();
    HttpResponse<String> first = s.send(s.post("/flaky", "{}", key));
    assertThat(first.statusCode()).isEqualTo(503);
    assertThat(first.body()).isEqualTo("try again");
    HttpResponse<String> retry = s.send(s.post("/flaky", "{}", key));
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    HttpResponse<String> replay = s.send(s.post("/flaky", "{}", key));
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(runs).hasValue(2);
  }

  @Test
  void aHandlerErrorReleasesTheKeyAndGoesOnToErrorHandling() throws Exception {
    TestServer s = start();
    String key = key();
    HttpResponse<String> first = s.send(s.post("/boom", "{}", key));
    assertThat(first.statusCode()).isEqualTo(500);
    assertThat(s.errors()).singleElement().satisfies(e -> assertThat(e).hasMessage("the handler failed"));
    HttpResponse<String> retry = s.send(s.post("/boom", "{}", key));
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo("recovered");
    assertThat(runs).hasValue(2);
  }

  @Test
  void aRequestWithoutAKeyOnAnOptionalRouteRunsUnprotected() throws Exception {
    TestServer s = start();
    assertThat(s.send(s.post("/optional", "{}", null)).body()).isEqualTo("run 1");
    assertThat(s.send(s.post("/optional", "{}", null)).body()).isEqualTo("run 2");
    String key = key();
    assertThat(s.send(s.post("/optional", "{}", key)).body()).isEqualTo("run 3");
    assertThat(s.send(s.post("/optional", "{}", key)).body()).isEqualTo("run 3");
  }

  @Test
  void theHandlerReadsAFormBodyTheFilterAlreadyRead() throws Exception {
    TestServer s = start();
    String key = key();
    HttpRequest.Builder form = HttpRequest.newBuilder(s.uri("/forms"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("amount=10&note=rent"));
    HttpResponse<String> first = s.send(form);
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("amount=10,note=rent");
    HttpRequest.Builder reordered = HttpRequest.newBuilder(s.uri("/forms"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("note=rent&amount=10"));
    HttpResponse<String> retry = s.send(reordered);
    assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).as("a form's fields in another order are the same payload").contains("true");
    assertThat(runs).hasValue(1);
  }

  @Test
  void aBodyDeclaredJsonThatIsNotJsonIs400() throws Exception {
    TestServer s = start();
    HttpResponse<String> r = s.send(s.post("/charges", "{not json", key()));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains(IdempotencyWebFilter.PROBLEM_PAYLOAD_INVALID);
    assertThat(runs).hasValue(0);
  }

  @Test
  void anAnswerOverTheResponseLimitStreamsWholeAndItsRetryIs422WithoutRunning() throws Exception {
    TestServer s = start(e -> e, c -> c.maxResponseBytes(1000));
    String key = key();
    HttpResponse<String> first = s.send(s.post("/large", "{}", key));
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("x".repeat(3000));
    HttpResponse<String> retry = s.send(s.post("/large", "{}", key));
    assertThat(retry.statusCode()).isEqualTo(422);
    assertThat(retry.body()).contains(IdempotencyWebFilter.PROBLEM_RESPONSE_TOO_LARGE).contains("\"originalStatus\":201")
        .contains("\"originalBodyBytes\":3000");
    assertThat(runs).hasValue(1);
  }

  /** The setup docs/reactive.md shows, without Spring Boot: one route that requires a key. */
  @Test
  void theDocumentedSetupProtectsItsRoute() throws Exception {
    // tag::setup[]
    AsyncLeaseIdempotency engine = AsyncLeaseIdempotency.builder(new InMemoryLeaseStore())
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(5)))
        .build();
    IdempotencyWebFilter filter = new IdempotencyWebFilter(IdempotencyWebFilterConfig.builder(engine)
        .requireKey("POST", "/charges")
        .build());
    // end::setup[]
    server = new TestServer(filter, routes());
    String key = key();
    assertThat(server.send(server.post("/charges", "{}", null)).statusCode()).isEqualTo(400);
    assertThat(server.send(server.post("/charges", "{}", key)).statusCode()).isEqualTo(201);
    assertThat(server.send(server.post("/charges", "{}", key)).headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(server.send(server.post("/optional", "{}", null)).statusCode()).as("not a route of this filter").isEqualTo(200);
    assertThat(runs).hasValue(2);
  }

  /** BlockHound is active on the server's event loops: a handler that sleeps there fails, and the key is released. */
  @Test
  void aDeliberatelyBlockingHandlerFails() throws Exception {
    TestServer s = start();
    HttpResponse<String> r = s.send(s.post("/blocking", "{}", key()));
    assertThat(r.statusCode()).isEqualTo(500);
    assertThat(s.errors()).singleElement().satisfies(e -> {
      assertThat(e).isInstanceOf(BlockingOperationError.class);
      assertThat(e).hasMessageContaining("Thread.sleep");
    });
    assertThat(runs).hasValue(1);
  }
}
