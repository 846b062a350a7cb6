package dev.idem.redis;

import dev.idem.core.ResponseProtection;
import dev.idem.testclusters.RedisClusterProcesses;
import dev.idem.testkit.TestDatabase;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClusterClient;

/**
 * A JUnit 5 extension that gives a test class a six-node Redis Cluster (three masters, three
 * replicas; {@link RedisClusterProcesses}) started by this JVM with the machine's {@code
 * redis-server}, a {@link RedisClusterClient} on it and a key prefix of its own.
 *
 * <p>The cluster is started once per JVM (the first class that needs it) and stopped when the
 * test run ends (it lives in JUnit's root store); only the processes it started are stopped. A
 * class that kills nodes asks for a cluster of its own with {@link #own()}, started before and
 * stopped after that class. Without {@code redis-server} the class is skipped with a line on
 * standard error starting with {@code [idem-redis] SKIPPED:}, except under {@code CI=true}, where
 * it fails.
 */
final class RedisClusterTestServer implements BeforeAllCallback, AfterAllCallback {

  private final String prefix = "idem-test-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12) + ":";
  private final boolean own;
  private final String[] extraConfig;
  private RedisClusterProcesses cluster;
  private RedisClusterClient client;

  private RedisClusterTestServer(boolean own, String... extraConfig) {
    this.own = own;
    this.extraConfig = extraConfig;
  }

  /** @return an extension on the cluster shared by the whole test run */
  static RedisClusterTestServer shared() {
    return new RedisClusterTestServer(false);
  }

  /**
   * @param extraConfig more {@code redis-server} arguments for every node
   * @return an extension on a cluster of this class's own, which it may kill nodes of
   */
  static RedisClusterTestServer own(String... extraConfig) {
    return new RedisClusterTestServer(true, extraConfig);
  }

  RedisClusterProcesses cluster() {
    return cluster;
  }

  RedisClusterClient client() {
    if (client == null) {
      throw new IllegalStateException("RedisClusterTestServer is not set up: register it with @RegisterExtension on a static field");
    }
    return client;
  }

  String prefix() {
    return prefix;
  }

  RedisLeaseStore newStore(RedisDurability durability) {
    return newStore(durability, ResponseProtection.none());
  }

  RedisLeaseStore newStore(RedisDurability durability, ResponseProtection protection) {
    return RedisLeaseStore.builder(client()).keyPrefix(prefix).durability(durability).responseProtection(protection).build();
  }

  /**
   * @param socketTimeoutMillis the client's socket timeout
   * @return a new cluster client on this cluster; the caller closes it
   */
  RedisClusterClient newClient(int socketTimeoutMillis) {
    Set<HostAndPort> nodes = new LinkedHashSet<>();
    for (int port : cluster.ports()) {
      nodes.add(new HostAndPort("127.0.0.1", port));
    }
    return RedisClusterClient.builder()
        .nodes(nodes)
        .clientConfig(DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(1000)
            .socketTimeoutMillis(socketTimeoutMillis)
            .build())
        .build();
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (!RedisClusterProcesses.available()) {
      String message = "redis-server and redis-cli are not on the PATH (nor in IDEM_TEST_REDIS_SERVER and"
          + " IDEM_TEST_REDIS_CLI), so the Redis Cluster tests cannot start a cluster";
      if (TestDatabase.underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure");
      }
      System.err.println("[idem-redis] SKIPPED: " + message + "; install Redis to run them");
      Assumptions.abort(message);
    }
    if (own) {
      cluster = RedisClusterProcesses.start(3, 1, extraConfig);
    } else {
      cluster = context.getRoot().getStore(ExtensionContext.Namespace.create(RedisClusterTestServer.class))
          .getOrComputeIfAbsent("cluster", k -> new SharedCluster(RedisClusterProcesses.start(3, 1)), SharedCluster.class)
          .cluster;
    }
    client = newClient(5000);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    try {
      if (client != null) {
        client.close();
      }
    } finally {
      client = null;
      if (own && cluster != null) {
        cluster.close();
      }
      cluster = null;
    }
  }

  /** The shared cluster, closed by JUnit when the root store closes (the end of the run). */
  private record SharedCluster(RedisClusterProcesses cluster) implements AutoCloseable {
    @Override
    public void close() {
      cluster.close();
    }
  }
}
