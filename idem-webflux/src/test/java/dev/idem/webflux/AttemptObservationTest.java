package dev.idem.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.r2dbc.R2dbcTransactionalIdempotency;
import dev.idem.r2dbc.R2dbcTransactions;
import dev.idem.testkit.TestDatabase;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.http.server.reactive.observation.ServerRequestObservationContext;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.LoopResources;

/**
 * Spring WebFlux (6.1 and later) keeps the request's observation in the Reactor context, not in a
 * thread local: an engine's listener that starts the attempt's observation ({@link
 * IdemListener#startedAsync}, as the starter's does) found no current observation, and the
 * attempt's observation began a trace of its own. With Micrometer's context-propagation library on
 * the class path (here, as in an application with Micrometer Tracing) the filter makes the request's
 * observation current while the attempt starts, in both modes, and leaves nothing current on the
 * event loop afterwards.
 *
 * <p>A real Reactor Netty server with one event loop, an {@link HttpHandler} built with an
 * observation registry (as Spring Boot builds it), the filter in front of functional routes, and a
 * listener that records what is current when an attempt starts and starts an observation there.
 */
class AttemptObservationTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  private static ConnectionPool pool;

  private final ObservationRegistry registry = ObservationRegistry.create();
  /** The server's observation of each request, as it started. */
  private final Queue<ServerRequestObservationContext> requests = new ConcurrentLinkedQueue<>();
  private final List<Started> started = new CopyOnWriteArrayList<>();

  /** What a listener saw when an attempt started: the current observation, and the attempt's own. */
  private record Started(String mode, @Nullable Observation current, Observation attempt) {}

  /** As the starter's observation listener: an observation per attempt, whose parent is whatever is current. */
  private final IdemListener listener = new IdemListener() {
    @Override
    public Attempt startedAsync(IdempotentRequest request, String mode) {
      Observation current = registry.getCurrentObservation();
      Observation attempt = Observation.start("idem.attempt", registry);
      started.add(new Started(mode, current, attempt));
      return new Attempt() {
        @Override
        public void ended(AttemptResult result) {
          attempt.stop();
        }

        @Override
        public void failed(Throwable error) {
          attempt.error(error).stop();
        }
      };
    }
  };

  AttemptObservationTest() {
    registry.observationConfig().observationHandler(new io.micrometer.observation.ObservationHandler<>() {
      @Override
      public boolean supportsContext(Observation.Context context) {
        return true;
      }

      @Override
      public void onStart(Observation.Context context) {
        if (context instanceof ServerRequestObservationContext request) {
          requests.add(request);
        }
      }
    });
  }

  @BeforeAll
  static void open() {
    pool = new ConnectionPool(ConnectionPoolConfiguration.builder(ConnectionFactories.get(DB.r2dbcUrl()))
        .initialSize(1).maxSize(4).maxAcquireTime(Duration.ofSeconds(30)).build());
  }

  @AfterAll
  static void close() {
    if (pool != null) {
      pool.dispose();
    }
  }

  private IdempotencyWebFilterConfig config(String mode) {
    if (mode.equals("lease")) {
      return IdempotencyWebFilterConfig.builder(AsyncLeaseIdempotency.builder(new InMemoryLeaseStore()).listener(listener).build())
          .requireKey("POST", "/notes").build();
    }
    R2dbcTransactionalIdempotency engine = R2dbcTransactionalIdempotency.builder(pool).listener(listener).build();
    engine.createSchema().block(Duration.ofSeconds(30));
    R2dbcTransactions transactions = R2dbcTransactions.of(pool);
    return IdempotencyWebFilterConfig.builder(TransactionalEngine.of(
            (request, handler) -> engine.execute(transactions, request, connection -> handler), engine.listener()))
        .requireKey("POST", "/notes").build();
  }

  /**
   * POST /notes answers 201; GET /current (not protected) answers what observation is current on
   * the event loop when its handler runs: "none" unless something was left there.
   */
  private RouterFunction<ServerResponse> routes() {
    return RouterFunctions.route()
        .POST("/notes", request -> ServerResponse.status(201).bodyValue("made"))
        .GET("/current", request -> {
          Observation current = registry.getCurrentObservation();
          return ServerResponse.ok().bodyValue(current == null ? "none" : current.getContext().getName());
        })
        .build();
  }

  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void anAttemptsObservationIsAChildOfTheRequestsObservation(String mode) throws Exception {
    HttpHandler handler = WebHttpHandlerBuilder.webHandler(RouterFunctions.toWebHandler(routes()))
        .filter(new IdempotencyWebFilter(config(mode)))
        .observationRegistry(registry)
        .build();
    LoopResources loop = LoopResources.create("observed", 1, 1, true);
    DisposableServer server = HttpServer.create().host("127.0.0.1").port(0).runOn(loop)
        .handle(new ReactorHttpHandlerAdapter(handler)).bindNow(Duration.ofSeconds(10));
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    try {
      String key = UUID.randomUUID().toString();
      for (int i = 0; i < 2; i++) { // a create, then its replay
        HttpResponse<String> answer = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/notes"))
            .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json").header("Idempotency-Key", key)
            .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(answer.statusCode()).isEqualTo(201);
        assertThat(answer.headers().firstValue("Idempotent-Replayed").isPresent()).isEqualTo(i == 1);
      }
      List<ServerRequestObservationContext> posts = requests.stream()
          .filter(r -> r.getCarrier().getPath().value().equals("/notes")).toList();
      assertThat(posts).hasSize(2);
      assertThat(started).hasSize(2);
      for (int i = 0; i < 2; i++) {
        Started attempt = started.get(i);
        ServerRequestObservationContext post = posts.get(i);
        assertThat(attempt.mode()).isEqualTo(mode.equals("lease") ? IdemListener.LEASE_MODE : IdemListener.TRANSACTIONAL_MODE);
        assertThat(attempt.current()).as("the request's observation is current when the attempt starts").isNotNull();
        assertThat(attempt.current().getContext()).isSameAs(post);
        assertThat(attempt.attempt().getContext().getParentObservation()).as("the attempt's observation is the request's child")
            .isNotNull()
            .satisfies(parent -> assertThat(parent.getContextView()).isSameAs(post));
      }

      // nothing stays current on the (only) event loop: a later request's handler finds none
      HttpResponse<String> current = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/current"))
          .timeout(Duration.ofSeconds(20)).GET().build(), HttpResponse.BodyHandlers.ofString());
      assertThat(current.body()).isEqualTo("none");
    } finally {
      server.disposeNow(Duration.ofSeconds(10));
      loop.disposeLater().block(Duration.ofSeconds(10));
    }
  }
}
