package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.webflux.IdempotencyWebFilter;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * A WebFlux application with the starter and idem-webflux: the starter registers the WebFlux
 * filter from the same idem.* route properties as the servlet filter's, on the non-blocking engine
 * and a non-blocking store, and refuses a store that blocks.
 */
class IdemReactiveWebTest {

  private final AtomicInteger runs = new AtomicInteger();

  private ReactiveWebApplicationContextRunner app() {
    return new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.principal=shared");
  }

  private WebTestClient client(IdempotencyWebFilter filter) {
    RouterFunction<ServerResponse> routes = RouterFunctions.route()
        .POST("/payments", request -> ServerResponse.status(201).bodyValue("paid " + runs.incrementAndGet()))
        .POST("/notes", request -> ServerResponse.status(201).bodyValue("noted " + runs.incrementAndGet()))
        .build();
    return WebTestClient.bindToRouterFunction(routes).webFilter(filter).build();
  }

  @Test
  void theRoutePropertiesProtectAWebFluxApplication() {
    app().withPropertyValues("idem.required-key-routes=post /payments", "idem.lease=5s", "idem.retention=1h")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().hasSingleBean(IdempotencyWebFilter.class);
          assertThat(ctx.getBean(AsyncLeaseIdempotency.class).lease()).isEqualTo(Duration.ofSeconds(5));
          assertThat(ctx.getBean(AsyncLeaseIdempotency.class).retention()).isEqualTo(Duration.ofHours(1));
          WebTestClient client = client(ctx.getBean(IdempotencyWebFilter.class));

          client.post().uri("/payments").exchange()
              .expectStatus().isEqualTo(400)
              .expectHeader().contentType("application/problem+json")
              .expectBody(String.class).value(body -> assertThat(body).contains(IdempotencyWebFilter.PROBLEM_KEY_MISSING));
          client.post().uri("/payments").header("Idempotency-Key", "k-1").bodyValue("{\"amount\":5}").exchange()
              .expectStatus().isEqualTo(201).expectBody(String.class).isEqualTo("paid 1");
          client.post().uri("/payments").header("Idempotency-Key", "k-1").bodyValue("{\"amount\":5}").exchange()
              .expectStatus().isEqualTo(201)
              .expectHeader().valueEquals("Idempotent-Replayed", "true")
              .expectBody(String.class).isEqualTo("paid 1");
          client.post().uri("/notes").bodyValue("{}").exchange()
              .expectStatus().isEqualTo(201); // a route not configured passes through
          assertThat(runs).hasValue(2);
        });
  }

  @Test
  void withoutRoutePropertiesPostAndPatchTakeAnOptionalKey() {
    app().run(ctx -> {
      WebTestClient client = client(ctx.getBean(IdempotencyWebFilter.class));
      client.post().uri("/notes").bodyValue("{}").exchange().expectStatus().isEqualTo(201);
      client.post().uri("/notes").header("Idempotency-Key", "k-2").bodyValue("{}").exchange().expectStatus().isEqualTo(201);
      client.post().uri("/notes").header("Idempotency-Key", "k-2").bodyValue("{}").exchange()
          .expectHeader().valueEquals("Idempotent-Replayed", "true");
      assertThat(runs).hasValue(2);
    });
  }

  @Test
  void anApplicationsAsyncLeaseStoreKeepsTheKeys() {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    app().withBean(InMemoryLeaseStore.class, () -> store).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      client(ctx.getBean(IdempotencyWebFilter.class)).post().uri("/payments").header("Idempotency-Key", "k-3").bodyValue("{}")
          .exchange().expectStatus().isEqualTo(201);
      assertThat(store.size()).isEqualTo(1);
    });
  }

  /**
   * An AsyncLeaseStore bean that is not a LeaseStore: the starter's in-memory LeaseStore (for
   * blocking callers) is an AsyncLeaseStore too, and the filter took it instead, since the lookup
   * found two and used neither.
   */
  @Test
  void anApplicationsAsyncOnlyStoreKeepsTheKeysBesideTheStartersMemoryStore() {
    InMemoryLeaseStore keys = new InMemoryLeaseStore();
    app().withBean(dev.idem.core.spi.AsyncLeaseStore.class, () -> new AsyncOnly(keys)).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      client(ctx.getBean(IdempotencyWebFilter.class)).post().uri("/payments").header("Idempotency-Key", "k-async").bodyValue("{}")
          .exchange().expectStatus().isEqualTo(201);
      assertThat(keys.size()).isEqualTo(1);
    });
  }

  /** A store that is only an AsyncLeaseStore, over an in-memory one. */
  private static final class AsyncOnly implements dev.idem.core.spi.AsyncLeaseStore {
    private final InMemoryLeaseStore memory;

    AsyncOnly(InMemoryLeaseStore memory) {
      this.memory = memory;
    }

    @Override
    public java.util.concurrent.CompletionStage<ClaimResult> claimAsync(IdempotentRequest request, String ownerToken, Duration lease,
        Duration retention) {
      return memory.claimAsync(request, ownerToken, lease, retention);
    }

    @Override
    public java.util.concurrent.CompletionStage<Boolean> completeAsync(Scope scope, IdempotencyKey key, String ownerToken,
        StoredResponse response, Duration retention) {
      return memory.completeAsync(scope, key, ownerToken, response, retention);
    }

    @Override
    public java.util.concurrent.CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String ownerToken) {
      return memory.releaseAsync(scope, key, ownerToken);
    }

    @Override
    public java.util.concurrent.CompletionStage<Long> purgeExpiredAsync(int batchSize) {
      return memory.purgeExpiredAsync(batchSize);
    }
  }

  @Test
  void aStoreThatBlocksIsRefusedAndTheRefusalSaysWhatIsSupported() {
    app().withBean(LeaseStore.class, BlockingStore::new).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemUnsupportedException.class))
          .hasMessageContaining("blocks its caller's thread").hasMessageContaining("AsyncLeaseStore")
          .hasMessageContaining("in-memory store");
    });
  }

  @Test
  void anAutoPrincipalReadsTheExchangesPrincipal() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .run(ctx -> assertThat(ctx).as("Spring Security is on this class path").hasNotFailed().hasSingleBean(IdempotencyWebFilter.class));
  }

  /** A store that is only a LeaseStore: it would block an event loop. */
  private static final class BlockingStore implements LeaseStore {
    private final LeaseStore memory = new InMemoryLeaseStore();

    @Override
    public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
      return memory.claim(request, ownerToken, lease, retention);
    }

    @Override
    public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
      return memory.complete(scope, key, ownerToken, response, retention);
    }

    @Override
    public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
      return memory.release(scope, key, ownerToken);
    }

    @Override
    public long purgeExpired(int batchSize) {
      return memory.purgeExpired(batchSize);
    }
  }
  /**
   * A new user's trial: with a DataSource and {@code idem.store=memory}, {@code idem.mode=auto} is
   * lease mode (as docs/properties.md says), but the WebFlux refusal treated auto beside a
   * DataSource as transactional whatever the store.
   */
  @Test
  void idemStoreMemoryBesideADataSourceWasRefusedAsTransactionalOnWebFlux() {
    org.h2.jdbcx.JdbcDataSource h2 = new org.h2.jdbcx.JdbcDataSource();
    h2.setURL("jdbc:h2:mem:reactive-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1");
    app().withBean("dataSource", javax.sql.DataSource.class, () -> h2)
        .withPropertyValues("idem.store=memory", "idem.required-key-routes=POST /payments")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().hasSingleBean(IdempotencyWebFilter.class);
          WebTestClient client = client(ctx.getBean(IdempotencyWebFilter.class));
          client.post().uri("/payments").header("Idempotency-Key", "k-ds").bodyValue("{}").exchange().expectStatus().isEqualTo(201);
          client.post().uri("/payments").header("Idempotency-Key", "k-ds").bodyValue("{}").exchange()
              .expectHeader().valueEquals("Idempotent-Replayed", "true");
          assertThat(runs).hasValue(1);
        });
  }

  /**
   * A new user's trial: with a DataSource, {@code idem.mode=lease} alone picks the JDBC lease
   * store, which blocks; the refusal now names the property that is still to change.
   */
  @Test
  void leaseModeBesideADataSourceIsRefusedWithTheStorePropertyToSet() {
    org.h2.jdbcx.JdbcDataSource h2 = new org.h2.jdbcx.JdbcDataSource();
    h2.setURL("jdbc:h2:mem:reactive-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1");
    app().withBean("dataSource", javax.sql.DataSource.class, () -> h2)
        .withPropertyValues("idem.mode=lease")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemUnsupportedException.class))
              .hasMessageContaining("blocks its caller's thread").hasMessageContaining("set idem.store=memory")
              .hasMessageContaining("AsyncLeaseStore bean");
        });
  }

  /**
   * A new user's trial: without a principal source the refusal offered idem.principal=servlet and a
   * PrincipalResolver bean, neither of which a WebFlux application can use.
   */
  @Test
  void theMissingPrincipalRefusalOnWebFluxOfferedServletPrincipalsItCannotUse() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withClassLoader(new org.springframework.boot.test.context.FilteredClassLoader("org.springframework.security"))
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          Throwable refusal = IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), dev.idem.spring.IdemConfigurationException.class);
          assertThat(refusal).hasMessageContaining("WebFlux").hasMessageContaining("idem.principal=shared")
              .hasMessageContaining("Spring Security").hasMessageNotContaining("idem.principal=servlet")
              .hasMessageNotContaining("PrincipalResolver");
        });
  }
}
