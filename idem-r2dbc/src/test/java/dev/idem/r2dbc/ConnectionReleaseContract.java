package dev.idem.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * Every operation closes its connection, whatever its end: success, a database failure, a failure
 * of the work after the connection was taken, a caller that cancels. The store runs on a pool of
 * one connection that counts what it hands out and what comes back: a connection kept by one
 * operation would leave every later one waiting. Each database runs it by subclassing.
 */
abstract class ConnectionReleaseContract {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);

  private ConnectionPool pool;
  private final AtomicInteger opened = new AtomicInteger();
  private final AtomicInteger closed = new AtomicInteger();

  /** @return this class's database */
  protected abstract TestDatabase db();

  @BeforeEach
  void open() {
    pool = R2dbcTestDatabases.pool(db(), 1);
  }

  @AfterEach
  void close() {
    pool.dispose();
  }

  /** The pool, seen through a factory that counts the connections it hands out and their closes. */
  private ConnectionFactory counting() {
    return new ConnectionFactory() {
      @Override
      public Publisher<? extends Connection> create() {
        return Mono.from(pool.create()).map(c -> {
          opened.incrementAndGet();
          return counted(c);
        });
      }

      @Override
      public ConnectionFactoryMetadata getMetadata() {
        return pool.getMetadata();
      }
    };
  }

  private Connection counted(Connection c) {
    return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
        (proxy, method, args) -> {
          if (method.getName().equals("close") && method.getParameterCount() == 0) {
            closed.incrementAndGet();
          }
          try {
            return method.invoke(c, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private static IdempotentRequest request(String key, String json) {
    return IdempotentRequest.ofJson("p-" + key, "POST /release", key, json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void everyOperationReturnsItsConnectionOnEveryPath() throws Exception {
    R2dbcLeaseStore store = R2dbcLeaseStore.builder(counting()).table("release_keys").build();
    // no table, none created: every statement fails after the connection was taken
    R2dbcLeaseStore broken = R2dbcLeaseStore.builder(counting()).table("missing_keys").createSchema(false).build();
    List<CompletableFuture<?>> all = new ArrayList<>();
    int cancelled = 0;
    int failed = 0;
    for (int i = 0; i < 40; i++) {
      String key = "k-" + i + "-" + UUID.randomUUID();
      IdempotentRequest r = request(key, "{\"i\":" + i + "}");
      String owner = "owner-" + i;
      // success: claim, complete, then a replay
      all.add(store.claimAsync(r, owner, LEASE, RETENTION).toCompletableFuture()
          .thenCompose(claimed -> store.completeAsync(r.scope(), r.key(), owner, StoredResponse.of(201, "ok"), RETENTION))
          .thenCompose(done -> store.claimAsync(r, "owner-other", LEASE, RETENTION)));
      // a release of a claim that is not there, and one by another owner
      all.add(store.releaseAsync(r.scope(), r.key(), "owner-x").toCompletableFuture());
      // database failures
      all.add(broken.claimAsync(r, "owner-" + i, LEASE, RETENTION).toCompletableFuture());
      all.add(broken.completeAsync(r.scope(), r.key(), "owner-" + i, StoredResponse.of(200, "x"), RETENTION).toCompletableFuture());
      failed += 2;
      // a caller that gives up at once: the operation is cancelled wherever it is
      CompletableFuture<?> gone = store.claimAsync(request("c-" + key, "{}"), "owner-c", LEASE, RETENTION).toCompletableFuture();
      if (gone.cancel(true)) {
        cancelled++;
      }
      all.add(gone);
    }
    all.add(store.purgeExpiredAsync(100).toCompletableFuture());
    all.add(broken.purgeExpiredAsync(100).toCompletableFuture());
    int storeFailures = 0;
    for (CompletableFuture<?> f : all) {
      try {
        f.get(60, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        assertThat(e.getCause()).as("every failure is an IdemStoreException").isInstanceOf(IdemStoreException.class);
        storeFailures++;
      } catch (java.util.concurrent.CancellationException e) {
        // cancelled by the test
      }
    }
    assertThat(storeFailures).isEqualTo(failed);
    assertThat(cancelled).isPositive();

    // a cancelled operation closes its connection when the cancel reaches it: wait for the count
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (closed.get() < opened.get() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(closed).as("connections closed, of %s opened", opened.get()).hasValue(opened.get());
    assertThat(pool.getMetrics().orElseThrow().acquiredSize()).isZero();
    // and the pool's one connection still serves
    IdempotentRequest last = request("k-last", "{}");
    assertThat(store.claimAsync(last, "owner-last", LEASE, RETENTION).toCompletableFuture().get(10, TimeUnit.SECONDS).state())
        .isEqualTo(dev.idem.core.spi.ClaimResult.State.CLAIMED);
  }
}
