package dev.idem.redis;

import dev.idem.testkit.TestDatabase;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.support.AsyncConnectionPoolSupport;
import io.lettuce.core.support.AsyncPool;
import io.lettuce.core.support.BoundedAsyncPool;
import io.lettuce.core.support.BoundedPoolConfig;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.ScanIteration;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisURIHelper;

/**
 * A JUnit 5 extension that gives a test class a Redis client and a key prefix of its own ({@code
 * idem-test-<random>:}) and deletes every key with that prefix afterwards.
 *
 * <p>Register it as a static field: {@code @RegisterExtension static final RedisTestServer REDIS =
 * new RedisTestServer();}. The server is {@code IDEM_TEST_REDIS_URL} (default {@value
 * #DEFAULT_URL}). When it cannot be reached the class is skipped with a line on standard error
 * starting with {@code [idem-redis] SKIPPED:}, except under {@code CI=true}, where it fails, as
 * {@link TestDatabase} does for the SQL servers. The same server through Lettuce, for the
 * non-blocking store: {@link #lettuce()} and {@link #lettucePool(int)}.
 */
final class RedisTestServer implements BeforeAllCallback, AfterAllCallback {

  /** The Redis server used when {@code IDEM_TEST_REDIS_URL} is not set. */
  static final String DEFAULT_URL = "redis://127.0.0.1:6379";

  private final String prefix = "idem-test-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12) + ":";
  private String url;
  private RedisClient client;
  private io.lettuce.core.@Nullable RedisClient lettuce;
  private @Nullable StatefulRedisConnection<byte[], byte[]> lettuceConnection;

  /** @return the client; valid between beforeAll and afterAll */
  RedisClient client() {
    if (client == null) {
      throw new IllegalStateException("RedisTestServer is not set up: register it with @RegisterExtension on a static field");
    }
    return client;
  }

  /**
   * @return a Lettuce connection to the same server (byte-array codec), opened on first use and
   *     closed after the class; shared, as an application shares its one connection
   */
  synchronized StatefulRedisConnection<byte[], byte[]> lettuce() {
    client();
    if (lettuceConnection == null) {
      lettuce = io.lettuce.core.RedisClient.create(url);
      lettuceConnection = lettuce.connect(ByteArrayCodec.INSTANCE);
    }
    return lettuceConnection;
  }

  /** @return the Lettuce client of {@link #lettuce()}, for connections of a test's own */
  synchronized io.lettuce.core.RedisClient lettuceClient() {
    lettuce();
    return java.util.Objects.requireNonNull(lettuce);
  }

  /** @return the server's URL, {@code IDEM_TEST_REDIS_URL} or {@value #DEFAULT_URL} */
  String url() {
    client();
    return url;
  }

  /**
   * @param size the most connections at once
   * @return a pool of Lettuce connections to the same server, for the writes that wait for
   *     replicas; closed after the class
   */
  synchronized AsyncPool<StatefulRedisConnection<byte[], byte[]>> lettucePool(int size) {
    lettuce();
    io.lettuce.core.RedisClient c = java.util.Objects.requireNonNull(lettuce);
    BoundedAsyncPool<StatefulRedisConnection<byte[], byte[]>> pool = AsyncConnectionPoolSupport.createBoundedObjectPool(
        () -> c.connectAsync(ByteArrayCodec.INSTANCE, RedisURI.create(url)), BoundedPoolConfig.builder().maxTotal(size).build());
    pools.add(pool);
    return pool;
  }

  private final List<AsyncPool<?>> pools = new ArrayList<>();

  /** @return this class's key prefix, {@code idem-test-<12 hex digits>:} */
  String prefix() {
    return prefix;
  }

  /** @return a store on this class's client and prefix */
  RedisLeaseStore newStore() {
    return RedisLeaseStore.builder(client()).keyPrefix(prefix).build();
  }

  /** @return every key that currently starts with this class's prefix */
  List<String> keys() {
    List<String> keys = new ArrayList<>();
    ScanIteration scan = client().scanIteration(1000, prefix + "*");
    while (!scan.isIterationCompleted()) {
      keys.addAll(scan.nextBatchList());
    }
    return keys;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    String configured = System.getenv("IDEM_TEST_REDIS_URL");
    url = configured == null || configured.isBlank() ? DEFAULT_URL : configured;
    RedisClient candidate = null;
    try {
      URI uri = URI.create(url);
      if (!JedisURIHelper.isValid(uri)) {
        throw new IllegalArgumentException("not a redis:// or rediss:// URL with host and port");
      }
      DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
          .connectionTimeoutMillis(2000)
          .socketTimeoutMillis(5000)
          .user(JedisURIHelper.getUser(uri))
          .password(JedisURIHelper.getPassword(uri));
      if (JedisURIHelper.isRedisSSLScheme(uri)) {
        config.sslOptions(SslOptions.defaults());
      }
      if (JedisURIHelper.hasDbIndex(uri)) {
        config.database(JedisURIHelper.getDBIndex(uri));
      }
      candidate = RedisClient.builder()
          .hostAndPort(JedisURIHelper.getHostAndPort(uri))
          .clientConfig(config.build())
          .build();
      candidate.ping();
      client = candidate;
    } catch (JedisException | IllegalArgumentException e) {
      if (candidate != null) {
        candidate.close();
      }
      String message = "Redis is not reachable at " + withoutCredentials(url) + " (" + e.getMessage() + ")";
      if (TestDatabase.underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      System.err.println("[idem-redis] SKIPPED: " + message + "; start it to run this suite");
      Assumptions.abort(message);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (client == null) {
      return;
    }
    try {
      List<String> keys = keys();
      if (!keys.isEmpty()) {
        client.del(keys.toArray(new String[0]));
      }
    } finally {
      client.close();
      client = null;
      synchronized (this) {
        pools.forEach(AsyncPool::close);
        pools.clear();
        if (lettuceConnection != null) {
          lettuceConnection.close();
        }
        if (lettuce != null) {
          lettuce.shutdown();
        }
        lettuceConnection = null;
        lettuce = null;
      }
    }
  }

  private static String withoutCredentials(String url) {
    int at = url.indexOf('@');
    int scheme = url.indexOf("://");
    return at < 0 || scheme < 0 || at < scheme ? url : url.substring(0, scheme + 3) + url.substring(at + 1);
  }
}
