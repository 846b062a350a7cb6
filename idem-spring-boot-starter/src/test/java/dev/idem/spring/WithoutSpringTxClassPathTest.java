package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.Closeable;
import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real application ({@link dev.idem.spring.isolated.MinimalApp}) on a class path without
 * spring-jdbc and spring-tx at all (nor a pool, nor Spring Security): a class loader of its own
 * over this test's class path minus those jars, so that nothing can resolve them. With the starter
 * as it was, the start failed with {@code TypeNotPresentException:
 * org.springframework.transaction.PlatformTransactionManager}.
 */
class WithoutSpringTxClassPathTest {

  /**
   * The jars an application with only spring-boot-starter-web, a driver or Jedis, and the starter
   * lacks; Spring AMQP with the RabbitMQ client and idem-rabbitmq too (optional in the starter;
   * spring-rabbit needs spring-tx, so an application with it always has spring-tx), Spring Kafka (likewise: spring-kafka
   * needs spring-tx) with the Kafka client and idem-kafka, and Spring Data Redis with Lettuce
   * (spring-data-redis needs spring-tx too).
   */
  private static final Pattern HIDDEN = Pattern.compile(
      ".*[/\\\\](spring-rabbit|spring-amqp|amqp-client|idem-rabbitmq|spring-kafka|spring-kafka-test|kafka-clients|idem-kafka|spring-tx|spring-jdbc|spring-boot-starter-jdbc|HikariCP|spring-security-[a-z]+|spring-boot-starter-security|spring-boot-jdbc|spring-boot-transaction|spring-boot-security|spring-data-[a-z]+|spring-boot-starter-data-redis|spring-boot-data-redis|lettuce-core)-[^/\\\\]*\\.jar");

  @TempDir Path dir;

  private static URLClassLoader withoutSpringTx() throws Exception {
    String classPath = System.getProperty("java.class.path");
    List<URL> urls = new ArrayList<>();
    int hidden = 0;
    for (String entry : classPath.split(Pattern.quote(File.pathSeparator))) {
      if (entry.isEmpty()) {
        continue;
      }
      if (HIDDEN.matcher(entry).matches()) {
        hidden++;
        continue;
      }
      urls.add(Path.of(entry).toUri().toURL());
    }
    assertThat(hidden).as("spring-tx and spring-jdbc were on the test class path to be left out: " + classPath).isGreaterThanOrEqualTo(2);
    return new URLClassLoader("without-spring-tx", urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
  }

  /** Starts the application inside the loader; returns its port, context and store class. */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> start(URLClassLoader loader, String... args) throws Throwable {
    assertThat(loader.getResource("org/springframework/transaction/PlatformTransactionManager.class")).isNull();
    Thread thread = Thread.currentThread();
    ClassLoader previous = thread.getContextClassLoader();
    thread.setContextClassLoader(loader);
    try {
      Class<?> app = Class.forName("dev.idem.spring.isolated.MinimalApp", true, loader);
      return (Map<String, Object>) app.getMethod("start", String[].class).invoke(null, (Object) args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    } finally {
      thread.setContextClassLoader(previous);
    }
  }

  private static String[] args(String... more) {
    List<String> all = new ArrayList<>(List.of("--server.port=0", "--spring.main.banner-mode=off",
        "--idem.required-key-routes=POST /notes", "--idem.principal=servlet"));
    all.addAll(List.of(more));
    return all.toArray(new String[0]);
  }

  private static HttpResponse<String> post(int port, String path, String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(20)).header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The filter and an @Idempotent method both answer the first result again for a repeated key. */
  private static void replays(Map<String, Object> app) throws Exception {
    int port = (Integer) app.get("port");
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = post(port, "/notes", key, "a note");
    HttpResponse<String> again = post(port, "/notes", key, "a note");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(again.statusCode()).isEqualTo(201);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(again.body()).isEqualTo(first.body());

    String chargeKey = UUID.randomUUID().toString();
    HttpResponse<String> charge = post(port, "/charges", chargeKey, "acct-1");
    assertThat(charge.statusCode()).isEqualTo(200);
    assertThat(post(port, "/charges", chargeKey, "acct-1").body()).isEqualTo(charge.body());
    HttpResponse<String> reused = post(port, "/charges", chargeKey, "acct-2");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
  }

  @Test
  void webStarterAndAJdbcDriverOnlyStartsInsteadOfTypeNotPresentException() throws Throwable {
    try (URLClassLoader loader = withoutSpringTx()) {
      Map<String, Object> app = start(loader, args("--app.store=sqlite",
          "--app.sqlite-url=jdbc:sqlite:" + dir.resolve("driver-only.db") + "?journal_mode=WAL&busy_timeout=10000"));
      try (Closeable context = (Closeable) app.get("context")) {
        assertThat(app.get("store")).isEqualTo("dev.idem.jdbc.JdbcLeaseStore");
        replays(app);
      }
    }
  }

  @Test
  void webStarterAndJedisOnlyStartsInsteadOfTypeNotPresentException() throws Throwable {
    OptionalLibrariesTest.requireRedis();
    try (URLClassLoader loader = withoutSpringTx()) {
      Map<String, Object> app = start(loader, args("--app.store=redis", "--idem.redis.key-prefix=idem-isolated-" + UUID.randomUUID() + ":"));
      try (Closeable context = (Closeable) app.get("context")) {
        assertThat(app.get("store")).isEqualTo("dev.idem.redis.RedisLeaseStore");
        replays(app);
      }
    }
  }

  @Test
  void webStarterAloneStartsOnTheMemoryStore() throws Throwable {
    try (URLClassLoader loader = withoutSpringTx()) {
      Map<String, Object> app = start(loader, args());
      try (Closeable context = (Closeable) app.get("context")) {
        assertThat(app.get("store")).isEqualTo("dev.idem.core.InMemoryLeaseStore");
        replays(app);
      }
    }
  }

  @Test
  void transactionalModeWithoutSpringTxRefusesToStartNamingSpringBootStarterJdbc() throws Throwable {
    try (URLClassLoader loader = withoutSpringTx()) {
      Map<String, Object> app = start(loader, args("--idem.mode=transactional", "--app.store=sqlite",
          "--app.sqlite-url=jdbc:sqlite:" + dir.resolve("refused.db")));
      ((Closeable) app.get("context")).close();
      fail("started in transactional mode without spring-tx");
    } catch (RuntimeException e) {
      Throwable idem = e;
      while (idem != null && !idem.getClass().getName().equals(IdemConfigurationException.class.getName())) {
        idem = idem.getCause();
      }
      assertThat(idem).as("the cause chain of " + e).isNotNull();
      assertThat(idem.getMessage()).startsWith("idem.mode:").contains("spring-boot-starter-jdbc");
    }
  }
}
