package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.redis.RedisLeaseStore;
import dev.idem.testkit.TestDatabase;
import java.net.URI;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.ScanIteration;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Answers around the default {@link IdempotencyFilterConfig#DEFAULT_MAX_RESPONSE_BYTES} through
 * the filter on every lease store: in memory, SQLite, PostgreSQL, MariaDB and Redis (each server
 * in a database or key prefix of its own; a server that cannot be reached skips its cases, and
 * fails them under {@code CI=true}). Whatever the size, the handler runs once per key.
 */
class IdempotencyFilterLargeAnswerStoresTest {

  static final int LIMIT = IdempotencyFilterConfig.DEFAULT_MAX_RESPONSE_BYTES;

  @RegisterExtension static final TestDatabase SQLITE = TestDatabase.sqlite();
  @RegisterExtension static final TestDatabase POSTGRES = TestDatabase.postgres();
  @RegisterExtension static final TestDatabase MARIADB = TestDatabase.mariadb();

  enum Store { MEMORY, SQLITE, POSTGRESQL, MARIADB, REDIS }

  static final Map<Store, LeaseStore> STORES = new EnumMap<>(Store.class);
  static final String REDIS_PREFIX = "idem-test-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12) + ":";
  static RedisClient redis;

  TestApp app;
  TestServer server;

  static synchronized LeaseStore store(Store kind) {
    return STORES.computeIfAbsent(kind, k -> switch (k) {
      case MEMORY -> new InMemoryLeaseStore();
      case SQLITE -> JdbcLeaseStore.builder(SQLITE.target().dataSource()).build();
      case POSTGRESQL -> JdbcLeaseStore.builder(POSTGRES.target().dataSource()).build();
      case MARIADB -> JdbcLeaseStore.builder(MARIADB.target().dataSource()).build();
      case REDIS -> RedisLeaseStore.builder(redis()).keyPrefix(REDIS_PREFIX).build();
    });
  }

  static RedisClient redis() {
    if (redis == null) {
      String url = System.getenv("IDEM_TEST_REDIS_URL");
      URI uri = URI.create(url == null || url.isBlank() ? "redis://127.0.0.1:6379" : url);
      RedisClient candidate = RedisClient.builder().hostAndPort(uri.getHost(), uri.getPort()).build();
      try {
        candidate.ping();
      } catch (JedisException e) {
        candidate.close();
        String message = "Redis is not reachable at " + uri.getHost() + ":" + uri.getPort() + " (" + e.getMessage() + ")";
        if (TestDatabase.underCi()) {
          throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
        }
        Assumptions.abort(message);
      }
      redis = candidate;
    }
    return redis;
  }

  @AfterAll
  static void removeRedisKeys() {
    if (redis == null) {
      return;
    }
    try {
      List<String> keys = new ArrayList<>();
      ScanIteration scan = redis.scanIteration(1000, REDIS_PREFIX + "*");
      while (!scan.isIterationCompleted()) {
        keys.addAll(scan.nextBatchList());
      }
      if (!keys.isEmpty()) {
        redis.del(keys.toArray(new String[0]));
      }
    } finally {
      redis.close();
      redis = null;
    }
  }

  void start(Store kind) throws Exception {
    app = new TestApp();
    server = new TestServer(IdempotencyFilterConfig.builder(store(kind)).build(), app); // the default limit
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  HttpRequest sized(String key, int bytes) {
    return server.request("/sized?bytes=" + bytes + "&mode=stream").header("Idempotency-Key", key)
        .POST(BodyPublishers.ofString("x")).build();
  }

  void assertStoredAndReplayedByteForByte(Store kind, String name, int bytes) throws Exception {
    start(kind);
    String key = name + "-" + UUID.randomUUID();
    HttpResponse<byte[]> first = server.send(sized(key, bytes));
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo(TestApp.sized(1, bytes));
    HttpResponse<byte[]> replay = server.send(sized(key, bytes));
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(replay.headers().firstValue("Location")).hasValue("/sized/1");
    assertThat(replay.body()).as("byte for byte").isEqualTo(first.body());
    assertThat(app.calls("POST /sized")).isEqualTo(1);
  }

  /** The answer of the report: 2 MiB ran twice under the old 1 MiB default. */
  @ParameterizedTest
  @EnumSource(Store.class)
  void aTwoMebibyteAnswerIsStoredAndReplayedByteForByte(Store kind) throws Exception {
    assertStoredAndReplayedByteForByte(kind, "two-mib", 2 * 1024 * 1024);
  }

  @ParameterizedTest
  @EnumSource(Store.class)
  void anAnswerExactlyAtTheLimitIsStoredAndReplayedByteForByte(Store kind) throws Exception {
    assertStoredAndReplayedByteForByte(kind, "at-limit", LIMIT);
  }

  /** One byte over the limit: sent whole, not stored, and a retry never runs the handler again. */
  @ParameterizedTest
  @EnumSource(Store.class)
  void answerLargerThanTheCapNeverRunsTheEffectTwice(Store kind) throws Exception {
    start(kind);
    String key = "over-limit-" + UUID.randomUUID();
    HttpResponse<byte[]> first = server.send(sized(key, LIMIT + 1));
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo(TestApp.sized(1, LIMIT + 1));
    for (int attempt = 0; attempt < 2; attempt++) {
      IdempotencyFilterResponseLimitTest.assertTooLargeToReplay(server.send(sized(key, LIMIT + 1)), 201, LIMIT + 1, "/sized/1");
    }
    assertThat(app.calls("POST /sized")).as("the effect ran once").isEqualTo(1);
  }
}
