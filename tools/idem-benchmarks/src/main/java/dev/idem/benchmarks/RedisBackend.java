package dev.idem.benchmarks;

import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;
import redis.clients.jedis.util.JedisURIHelper;

/**
 * The Redis server for one harness run: every key the run writes starts with {@code
 * idem-bench-<random>:}, and {@link #close()} deletes them all. Each client gets its own
 * connection ({@link #connect()}).
 */
final class RedisBackend implements AutoCloseable {

  final String prefix = "idem-bench-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12) + ":";
  private final HostAndPort hostAndPort;
  private final JedisClientConfig config;
  private final UnifiedJedis admin;
  private boolean closed;

  private RedisBackend(HostAndPort hostAndPort, JedisClientConfig config) {
    this.hostAndPort = hostAndPort;
    this.config = config;
    this.admin = connect();
  }

  /**
   * @throws RuntimeException (a Jedis exception) if the server cannot be reached
   */
  static RedisBackend create(Options options) {
    URI uri = URI.create(options.redisUrl);
    if (!JedisURIHelper.isValid(uri)) {
      throw new IllegalArgumentException("not a redis:// URL with host and port: " + options.redisUrl);
    }
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
        .connectionTimeoutMillis(2000)
        .socketTimeoutMillis(30_000)
        .user(JedisURIHelper.getUser(uri))
        .password(JedisURIHelper.getPassword(uri));
    if (JedisURIHelper.hasDbIndex(uri)) {
      config.database(JedisURIHelper.getDBIndex(uri));
    }
    RedisBackend backend = new RedisBackend(JedisURIHelper.getHostAndPort(uri), config.build());
    try {
      backend.admin.ping();
    } catch (RuntimeException e) {
      backend.admin.close();
      throw e;
    }
    return backend;
  }

  /**
   * @return a client with one connection of its own (a Jedis pool of at most one connection, so the
   *     usual pooled client, never sharing a connection with another client); close it after use
   */
  UnifiedJedis connect() {
    ConnectionPoolConfig pool = new ConnectionPoolConfig();
    pool.setMaxTotal(1);
    pool.setMaxIdle(1);
    pool.setMinIdle(0);
    return RedisClient.builder().hostAndPort(hostAndPort).clientConfig(config).poolConfig(pool).build();
  }

  /** @return the harness's own client; one thread at a time */
  UnifiedJedis admin() {
    return admin;
  }

  String version() {
    return "Redis " + info("redis_version");
  }

  Map<String, String> settings() {
    Map<String, String> s = new LinkedHashMap<>();
    try (Jedis jedis = new Jedis(hostAndPort, config)) {
      for (String name : List.of("appendonly", "appendfsync", "save", "maxmemory-policy")) {
        try {
          String value = jedis.configGet(name).getOrDefault(name, "?");
          s.put(name, value.isEmpty() ? "\"\"" : value);
        } catch (RuntimeException e) {
          s.put(name, "(CONFIG GET refused)");
        }
      }
    }
    s.put("key prefix", prefix);
    return s;
  }

  private String info(String field) {
    for (String line : admin.info("server").split("\r?\n")) {
      if (line.startsWith(field + ":")) {
        return line.substring(field.length() + 1).strip();
      }
    }
    return "?";
  }

  /** Deletes every key of this run's prefix; returns how many. */
  long deleteKeys() {
    long deleted = 0;
    String cursor = ScanParams.SCAN_POINTER_START;
    ScanParams params = new ScanParams().match(prefix + "*").count(1000);
    do {
      ScanResult<String> page = admin.scan(cursor, params);
      List<String> keys = page.getResult();
      if (!keys.isEmpty()) {
        deleted += admin.del(keys.toArray(new String[0]));
      }
      cursor = page.getCursor();
    } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
    return deleted;
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      deleteKeys();
    } catch (RuntimeException e) {
      System.err.println("warning: could not delete the keys " + prefix + "*: " + e.getMessage());
    } finally {
      admin.close();
    }
  }
}
