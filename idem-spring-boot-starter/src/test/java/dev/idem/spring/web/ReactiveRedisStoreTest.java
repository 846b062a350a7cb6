package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.redis.AsyncRedisLeaseStore;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.LocalRedis;
import java.net.URI;
import java.net.http.HttpClient;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.ScanOptions;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.config.EnableWebFlux;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A WebFlux application with idem-webflux, idem-redis and Spring Data Redis on Lettuce, with
 * {@code idem.store=redis}: the starter gives it the non-blocking Redis store instead of refusing
 * the blocking one. The application is served by Reactor Netty on a random port and called over
 * real HTTP; Redis is the real one at 127.0.0.1:6379 ({@link LocalRedis}), under a key prefix of
 * this test's own, deleted afterwards.
 */
class ReactiveRedisStoreTest {

  private final String prefix = "idem-webflux-" + UUID.randomUUID().toString().substring(0, 8) + ":";
  private final AtomicInteger runs = new AtomicInteger();
  private final HttpClient http = HttpClient.newHttpClient();

  /** The application's routes: a payment that takes a while, so that concurrent duplicates overlap. */
  @Configuration(proxyBeanMethods = false)
  @EnableWebFlux
  static class App {
    @Bean
    RouterFunction<ServerResponse> payments(AtomicInteger runs) {
      return RouterFunctions.route()
          .POST("/payments", request -> request.bodyToMono(String.class)
              .flatMap(body -> Mono.delay(Duration.ofMillis(200)).thenReturn(body))
              .flatMap(body -> ServerResponse.status(201).bodyValue("paid " + runs.incrementAndGet())))
          .build();
    }
  }

  @BeforeEach
  void redis() {
    LocalRedis.require();
  }

  @AfterEach
  void cleanUp() {
    app().run(ctx -> {
      RedisConnectionFactory factory = ctx.getBean(RedisConnectionFactory.class);
      List<byte[]> keys = new ArrayList<>();
      try (RedisConnection c = factory.getConnection();
          Cursor<byte[]> found = c.keyCommands().scan(ScanOptions.scanOptions().match(prefix + "*").count(1000).build())) {
        found.forEachRemaining(keys::add);
        if (!keys.isEmpty()) {
          c.keyCommands().del(keys.toArray(new byte[0][]));
        }
      }
    });
  }

  private ReactiveWebApplicationContextRunner app(String... properties) {
    return new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.redis())))
        .withUserConfiguration(App.class)
        .withBean(AtomicInteger.class, () -> runs)
        .withPropertyValues("spring.data.redis.host=" + LocalRedis.HOST, "spring.data.redis.port=" + LocalRedis.PORT,
            "idem.store=redis", "idem.mode=lease", "idem.principal=shared", "idem.in-progress=wait",
            "idem.required-key-routes=post /payments", "idem.redis.key-prefix=" + prefix)
        .withPropertyValues(properties);
  }

  @Test
  void theSameKeyTwiceRunsTheHandlerOnceAndReplaysOnRedis() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(AsyncLeaseStore.class)).isInstanceOf(AsyncRedisLeaseStore.class);
      assertThat(ctx.getBean(AsyncLeaseIdempotency.class)).isNotNull();
      DisposableServer server = serve(ctx);
      try {
        HttpResponse<String> first = post(server, "k-1", "{\"amount\":5}");
        HttpResponse<String> second = post(server, "k-1", "{\"amount\":5}");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).isEqualTo("paid 1");
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(second.statusCode()).isEqualTo(201);
        assertThat(second.body()).isEqualTo("paid 1");
        assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(runs).hasValue(1);
        assertThat(keys(ctx)).as("the record is in Redis, under the configured prefix").hasSize(1);
      } finally {
        server.disposeNow();
      }
    });
  }

  @Test
  void tenConcurrentDuplicatesRunTheHandlerOnce() {
    app().run(ctx -> {
      DisposableServer server = serve(ctx);
      try {
        List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
          all.add(http.sendAsync(request(server, "k-race", "{\"amount\":7}"), HttpResponse.BodyHandlers.ofString()));
        }
        List<HttpResponse<String>> responses = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> f : all) {
          responses.add(f.get(30, TimeUnit.SECONDS));
        }
        assertThat(runs).hasValue(1);
        assertThat(responses).allSatisfy(r -> {
          assertThat(r.statusCode()).isEqualTo(201);
          assertThat(r.body()).isEqualTo("paid 1");
        });
        assertThat(responses).filteredOn(r -> r.headers().firstValue("Idempotent-Replayed").isPresent()).hasSize(9);
      } finally {
        server.disposeNow();
      }
    });
  }

  @Test
  void anotherBodyWithTheSameKeyIs422() {
    app().run(ctx -> {
      DisposableServer server = serve(ctx);
      try {
        assertThat(post(server, "k-reused", "{\"amount\":5}").statusCode()).isEqualTo(201);
        HttpResponse<String> reused = post(server, "k-reused", "{\"amount\":6}");
        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).contains("problem+json"));
        assertThat(runs).hasValue(1);
      } finally {
        server.disposeNow();
      }
    });
  }

  /** Durable writes need connections of their own on WebFlux: the property is refused, naming what to do. */
  @Test
  void durabilityOnTheSharedConnectionIsRefusedAtStartUp() {
    app("idem.redis.durability.replicas=1").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.redis.durability").hasMessageContaining("WAIT")
          .hasMessageContaining("LettuceStoreClient.of(connection, pool)");
    });
  }

  /** Another idem.store keeps its store: idem.store=memory on WebFlux is the in-memory store, Redis or not. */
  @Test
  void anotherStoreIsNotReplaced() {
    app("idem.store=memory").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBeansOfType(AsyncRedisLeaseStore.class)).isEmpty();
      assertThat(ctx.getBean(AsyncLeaseIdempotency.class)).isNotNull();
    });
  }

  /** @return Reactor Netty on a random port, serving the application's WebFlux handler and Idem's filter */
  private static DisposableServer serve(ApplicationContext ctx) {
    HttpHandler handler = WebHttpHandlerBuilder.applicationContext(ctx).build();
    return HttpServer.create().host("127.0.0.1").port(0).handle(new ReactorHttpHandlerAdapter(handler)).bindNow();
  }

  private HttpResponse<String> post(DisposableServer server, String key, String json) throws Exception {
    return http.send(request(server, key, json), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest request(DisposableServer server, String key, String json) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/payments"))
        .header("Idempotency-Key", key).header("Content-Type", "application/json")
        .timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8)).build();
  }

  private List<byte[]> keys(ApplicationContext ctx) {
    List<byte[]> keys = new ArrayList<>();
    try (RedisConnection c = ctx.getBean(RedisConnectionFactory.class).getConnection();
        Cursor<byte[]> found = c.keyCommands().scan(ScanOptions.scanOptions().match(prefix + "*").count(1000).build())) {
      found.forEachRemaining(keys::add);
    }
    return keys;
  }
}
