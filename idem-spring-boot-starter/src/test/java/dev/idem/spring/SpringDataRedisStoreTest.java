package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.spi.LeaseStore;
import dev.idem.redis.RedisLeaseStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.ScanOptions;

/**
 * idem.store=redis (and auto) on Spring Data Redis: an application with spring-boot-starter-data-redis
 * and idem-redis sets only spring.data.redis.host and port, writes no bean, and gets the Redis store
 * on Spring Boot's own connection factory, with Lettuce (Spring Boot's default) and with Jedis
 * (spring.data.redis.client-type=jedis). Real Redis at 127.0.0.1:6379 ({@link LocalRedis}).
 */
class SpringDataRedisStoreTest {

  /** A charge that takes a while, so that concurrent duplicates overlap; counts its real runs. */
  public static class SlowCharges {
    final AtomicInteger runs = new AtomicInteger();

    @Idempotent(operation = "charge")
    public Map<String, Object> charge(@Idempotent.Key String key, String account, long cents) throws InterruptedException {
      int n = runs.incrementAndGet();
      Thread.sleep(150);
      return Map.of("run", n, "account", account, "cents", cents);
    }

    public int runs() {
      return runs.get();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    SlowCharges slowCharges() {
      return new SlowCharges();
    }
  }

  private final String prefix = "idem-spring-" + UUID.randomUUID().toString().substring(0, 8) + ":";

  @BeforeEach
  void redis() {
    LocalRedis.require();
  }

  private ApplicationContextRunner app(String... properties) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.plus(BootLine.redis(), AopAutoConfiguration.class))))
        .withUserConfiguration(App.class)
        .withPropertyValues("spring.data.redis.host=" + LocalRedis.HOST, "spring.data.redis.port=" + LocalRedis.PORT,
            "idem.principal=shared", "idem.in-progress=wait", "idem.redis.key-prefix=" + prefix)
        .withPropertyValues(properties);
  }

  @Test
  void theRedisStoreUsesSpringDataRedisSettingsWithoutAHandWrittenBean() {
    app("idem.store=redis").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(RedisConnectionFactory.class).getClass().getSimpleName()).isEqualTo("LettuceConnectionFactory");
      worksEndToEnd(ctx, true);
    });
  }

  @Test
  void theRedisStoreRunsOnSpringDataRedisWithJedisAsSpringsClient() {
    app("idem.store=redis", "spring.data.redis.client-type=jedis").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(RedisConnectionFactory.class).getClass().getSimpleName()).isEqualTo("JedisConnectionFactory");
      worksEndToEnd(ctx, true);
    });
  }

  @Test
  void aRedisStoreLeavesTheApplicationsDataSourceAlone(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    // Issue 35: an instance in lease mode with idem.store=redis still created idem_keys in its
    // DataSource at start-up. The key table is made there only when the JDBC store is used.
    String[][] redisStores = {{"idem.mode=lease", "idem.store=redis"}, {"idem.mode=auto", "idem.store=redis"},
        {"idem.mode=lease", "idem.store=auto"}};
    for (int i = 0; i < redisStores.length; i++) {
      String url = "jdbc:sqlite:" + dir.resolve("app" + i + ".db");
      withDataSource(url).withPropertyValues(redisStores[i]).run(ctx -> {
        assertThat(ctx).hasNotFailed();
        assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(RedisLeaseStore.class);
        worksEndToEnd(ctx, true);
      });
      assertThat(tables(url)).as(String.join(" ", redisStores[i])).doesNotContain("idem_keys");
    }
    // The JDBC store beside a Redis client still gets its table at start-up.
    String url = "jdbc:sqlite:" + dir.resolve("jdbc.db");
    withDataSource(url).withPropertyValues("idem.mode=lease", "idem.store=jdbc").run(ctx -> assertThat(ctx).hasNotFailed());
    assertThat(tables(url)).contains("idem_keys");
  }

  private ApplicationContextRunner withDataSource(String url) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.plus(BootLine.plus(BootLine.redis(), BootLine.jdbc()),
            AopAutoConfiguration.class))))
        .withUserConfiguration(App.class)
        .withPropertyValues("spring.data.redis.host=" + LocalRedis.HOST, "spring.data.redis.port=" + LocalRedis.PORT,
            "idem.principal=shared", "idem.in-progress=wait", "idem.redis.key-prefix=" + prefix,
            "spring.datasource.url=" + url, "spring.datasource.hikari.maximum-pool-size=2");
  }

  private static List<String> tables(String url) throws java.sql.SQLException {
    List<String> names = new ArrayList<>();
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(url);
        java.sql.ResultSet rs = c.createStatement().executeQuery("SELECT name FROM sqlite_master WHERE type = 'table'")) {
      while (rs.next()) {
        names.add(rs.getString(1));
      }
    }
    return names;
  }

  @Test
  void storeAutoCountsSpringsRedisConnectionFactoryAsARedisClient() {
    for (String client : List.of("lettuce", "jedis")) {
      app("spring.data.redis.client-type=" + client).run(ctx -> {
        assertThat(ctx).hasNotFailed();
        assertThat(ctx.getBean(LeaseStore.class)).as(client).isInstanceOf(RedisLeaseStore.class);
        worksEndToEnd(ctx, true);
      });
    }
  }

  @Test
  void theSpringDataRedisPortIsTheOneTheStoreUses() {
    for (String client : List.of("lettuce", "jedis")) {
      app("idem.store=redis", "spring.data.redis.port=1", "spring.data.redis.timeout=500ms",
          "spring.data.redis.connect-timeout=500ms", "spring.data.redis.client-type=" + client).run(ctx -> {
        assertThat(ctx).hasNotFailed(); // connecting is the first call's business, as with a Jedis bean
        assertThat(port(ctx.getBean(RedisConnectionFactory.class))).as(client).isEqualTo(1);
        assertThatThrownBy(() -> ctx.getBean(SlowCharges.class).charge("k-" + UUID.randomUUID(), "acct", 1))
            .as(client).isInstanceOf(IdemStoreException.class);
        assertThat(ctx.getBean(SlowCharges.class).runs()).isZero();
      });
    }
  }

  /**
   * spring.data.redis.cluster.nodes: Spring's cluster connection runs the store's scripts on the
   * node that owns each record's slot (the braces of the record's key are its hash tag), with
   * Lettuce and with Jedis. A Redis Cluster of three masters started from the machine's
   * redis-server on loopback ports.
   */
  @Test
  void theRedisStoreRunsOnSpringDataRedisClusterNodesWithBothClients() {
    if (!dev.idem.testclusters.RedisClusterProcesses.available()) {
      String message = "redis-server and redis-cli are not on the PATH: the Redis Cluster test needs them";
      if (dev.idem.testkit.TestDatabase.underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure");
      }
      org.junit.jupiter.api.Assumptions.abort(message);
    }
    try (dev.idem.testclusters.RedisClusterProcesses cluster = dev.idem.testclusters.RedisClusterProcesses.start(3, 0)) {
      String nodes = cluster.ports().stream().map(p -> "127.0.0.1:" + p).collect(java.util.stream.Collectors.joining(","));
      for (String client : List.of("lettuce", "jedis")) {
        app("idem.store=redis", "spring.data.redis.cluster.nodes=" + nodes, "spring.data.redis.client-type=" + client).run(ctx -> {
          assertThat(ctx).as(client).hasNotFailed();
          worksEndToEnd(ctx, false);
        });
      }
    }
  }

  /**
   * spring.data.redis.sentinel.*: Spring's factory asks the Sentinel for the master and runs the
   * store there, with Lettuce and with Jedis. A master and one Sentinel started from the machine's
   * redis-server on free loopback ports.
   */
  @Test
  void theRedisStoreRunsOnAMasterFoundThroughSentinelWithBothClients(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    if (dev.idem.testclusters.RedisClusterProcesses.serverExecutable() == null) {
      String message = "redis-server is not on the PATH: the Sentinel test needs it";
      if (dev.idem.testkit.TestDatabase.underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure");
      }
      org.junit.jupiter.api.Assumptions.abort(message);
    }
    String server = dev.idem.testclusters.RedisClusterProcesses.serverExecutable();
    int masterPort = freePort();
    int sentinelPort = freePort();
    java.nio.file.Path conf = dir.resolve("sentinel.conf");
    java.nio.file.Files.writeString(conf, "port " + sentinelPort + "\nbind 127.0.0.1\ndir " + dir + "\n"
        + "sentinel monitor idem-master 127.0.0.1 " + masterPort + " 1\n");
    Process master = new ProcessBuilder(server, "--port", Integer.toString(masterPort), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", dir.toString()).redirectErrorStream(true).redirectOutput(dir.resolve("master.log").toFile()).start();
    Process sentinel = null;
    try {
      awaitPing(masterPort);
      sentinel = new ProcessBuilder(server, conf.toString(), "--sentinel").redirectErrorStream(true)
          .redirectOutput(dir.resolve("sentinel.log").toFile()).start();
      awaitPing(sentinelPort);
      String nodes = "127.0.0.1:" + sentinelPort;
      for (String client : List.of("lettuce", "jedis")) {
        app("idem.store=redis", "spring.data.redis.sentinel.master=idem-master", "spring.data.redis.sentinel.nodes=" + nodes,
            "spring.data.redis.client-type=" + client).run(ctx -> {
              assertThat(ctx).as(client).hasNotFailed();
              RedisConnectionFactory factory = ctx.getBean(RedisConnectionFactory.class);
              assertThat(factory.getClass().getMethod("getSentinelConfiguration").invoke(factory)).as(client).isNotNull();
              worksEndToEnd(ctx, false);
            });
      }
      // the records are on the master the Sentinel named (two keys per client), not on the server at 6379
      assertThat(command(masterPort, "DBSIZE")).isEqualTo(":4");
    } finally {
      if (sentinel != null) {
        sentinel.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
      master.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }

  private static int freePort() throws java.io.IOException {
    try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  /** @return the first line of the server's answer to an inline command */
  private static String command(int port, String command) throws java.io.IOException {
    try (java.net.Socket socket = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), port)) {
      socket.setSoTimeout(5000);
      socket.getOutputStream().write((command + "\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      return new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(), java.nio.charset.StandardCharsets.US_ASCII))
          .readLine();
    }
  }

  /** Waits up to 20 s for a PONG on the port. */
  private static void awaitPing(int port) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      try (java.net.Socket socket = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), port)) {
        socket.setSoTimeout(1000);
        socket.getOutputStream().write("PING\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        byte[] reply = new byte[7];
        if (socket.getInputStream().read(reply) > 0 && new String(reply, java.nio.charset.StandardCharsets.US_ASCII).startsWith("+PONG")) {
          return;
        }
      } catch (java.io.IOException notYet) {
        // not listening yet
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException("nothing answered PING on 127.0.0.1:" + port + " within 20 s");
  }

  @Test
  void durableWritesOnSpringDataRedisWaitOnTheScriptsOwnConnection() {
    // the server has no replica: WAIT 1 answers 0 after the timeout, and the write is an unknown outcome, not a success
    for (String client : List.of("lettuce", "jedis")) {
      app("idem.store=redis", "idem.redis.durability.replicas=1", "idem.redis.durability.timeout=50ms",
          "spring.data.redis.client-type=" + client).run(ctx -> {
        assertThat(ctx).hasNotFailed();
        assertThatThrownBy(() -> ctx.getBean(SlowCharges.class).charge("k-" + UUID.randomUUID(), "acct", 1))
            .as(client).isInstanceOf(IdemStoreException.class)
            .hasMessageContaining("acknowledged by 0 of 1 replicas").hasMessageContaining("outcome is unknown");
        assertThat(ctx.getBean(SlowCharges.class).runs()).isZero();
      });
    }
    cleanUp();
  }

  @Test
  void durabilityOnRedisClusterThroughSpringDataRedisStopsTheStartNamingTheProperty() {
    app("idem.store=redis", "idem.redis.durability.replicas=1", "spring.data.redis.cluster.nodes=127.0.0.1:1")
        .run(ctx -> assertThat(ctx).hasFailed().getFailure()
            .rootCause().isInstanceOf(IdemConfigurationException.class)
            .hasMessageContaining("idem.redis.durability").hasMessageContaining("UnifiedJedis"));
  }

  @Test
  void anApplicationsOwnUnifiedJedisBeanWinsOverSpringsConnectionFactory() {
    // Spring's factory points at a dead port; the application's own Jedis client at the server
    app("idem.store=redis", "spring.data.redis.port=1")
        .withUserConfiguration(OptionalLibrariesTest.Jedis.class)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          worksEndToEnd(ctx, false);
          redis.clients.jedis.RedisClient own = ctx.getBean(redis.clients.jedis.RedisClient.class);
          assertThat(own.keys(prefix + "*")).hasSize(2);
          own.del(own.keys(prefix + "*").toArray(new String[0]));
        });
  }

  @Test
  void idemStoreRedisWithoutARedisClientNamesTheDependenciesToAdd() {
    ApplicationContextRunner withoutRedisAutoConfiguration = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(AopAutoConfiguration.class)))
        .withPropertyValues("idem.store=redis", "idem.principal=shared");
    withoutRedisAutoConfiguration
        .withClassLoader(new FilteredClassLoader("org.springframework.data.redis"))
        .run(ctx -> assertThat(ctx).hasFailed().getFailure().rootCause()
            .isInstanceOf(IdemConfigurationException.class)
            .hasMessageContaining("idem.store")
            .hasMessageContaining("add the dependency org.springframework.boot:spring-boot-starter-data-redis")
            .hasMessageNotContaining("idem-redis"));
    withoutRedisAutoConfiguration
        .withClassLoader(new FilteredClassLoader("org.springframework.data.redis", "dev.idem.redis"))
        .run(ctx -> assertThat(ctx).hasFailed().getFailure().rootCause()
            .isInstanceOf(IdemConfigurationException.class)
            .hasMessageContaining("add the dependencies dev.idem:idem-redis and org.springframework.boot:spring-boot-starter-data-redis"));
    withoutRedisAutoConfiguration
        .run(ctx -> assertThat(ctx).hasFailed().getFailure().rootCause()
            .isInstanceOf(IdemConfigurationException.class)
            .hasMessageContaining("no single RedisConnectionFactory bean"));
  }

  /** Claim, complete, replay; the key reused for another request; concurrent duplicates run once. */
  private void worksEndToEnd(ApplicationContext ctx, boolean throughSpringsFactory) throws Exception {
    assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(RedisLeaseStore.class);
    assertThat(((RedisLeaseStore) ctx.getBean(LeaseStore.class)).keyPrefix()).isEqualTo(prefix);
    SlowCharges charges = ctx.getBean(SlowCharges.class);
    int before = charges.runs();
    String key = "k-" + UUID.randomUUID();
    Map<String, Object> first = charges.charge(key, "acct-1", 100);
    assertThat(charges.charge(key, "acct-1", 100)).as("the replay").isEqualTo(first);
    assertThat(charges.runs() - before).isEqualTo(1);
    assertThatThrownBy(() -> charges.charge(key, "acct-2", 100)).as("the key reused for another request")
        .isInstanceOf(IdempotencyKeyReusedException.class);
    assertThat(charges.runs() - before).isEqualTo(1);

    String concurrent = "k-" + UUID.randomUUID();
    int callers = 8;
    CyclicBarrier start = new CyclicBarrier(callers);
    ExecutorService pool = Executors.newFixedThreadPool(callers);
    try {
      List<Future<Map<String, Object>>> results = new ArrayList<>();
      for (int i = 0; i < callers; i++) {
        Callable<Map<String, Object>> call = () -> {
          start.await(5, TimeUnit.SECONDS);
          return charges.charge(concurrent, "acct-3", 300);
        };
        results.add(pool.submit(call));
      }
      Set<Map<String, Object>> answers = new java.util.HashSet<>();
      for (Future<Map<String, Object>> r : results) {
        answers.add(r.get(30, TimeUnit.SECONDS));
      }
      assertThat(answers).as("every duplicate gets the one result").hasSize(1);
      assertThat(charges.runs() - before).as("exactly one execution of the concurrent duplicates").isEqualTo(2);
    } finally {
      pool.shutdownNow();
    }
    if (!throughSpringsFactory) {
      return; // the keys are deleted by the next clean-up of a test on Spring's factory
    }
    assertThat(keys(ctx.getBean(RedisConnectionFactory.class))).hasSize(2)
        .allMatch(k -> k.matches(java.util.regex.Pattern.quote(prefix) + "\\{[0-9a-f]{64}\\}"));
    cleanUp();
  }

  private static int port(RedisConnectionFactory factory) throws ReflectiveOperationException {
    return (Integer) factory.getClass().getMethod("getPort").invoke(factory);
  }

  private List<String> keys(RedisConnectionFactory factory) {
    List<String> keys = new ArrayList<>();
    try (RedisConnection c = factory.getConnection();
        Cursor<byte[]> found = c.keyCommands().scan(ScanOptions.scanOptions().match(prefix + "*").count(1000).build())) {
      found.forEachRemaining(k -> keys.add(new String(k, java.nio.charset.StandardCharsets.UTF_8)));
    }
    return keys;
  }

  private void cleanUp() {
    app().run(ctx -> {
      RedisConnectionFactory factory = ctx.getBean(RedisConnectionFactory.class);
      List<String> keys = keys(factory);
      if (!keys.isEmpty()) {
        try (RedisConnection c = factory.getConnection()) {
          c.keyCommands().del(keys.stream().map(k -> k.getBytes(java.nio.charset.StandardCharsets.UTF_8)).toArray(byte[][]::new));
        }
      }
    });
  }
}
