package dev.idem.spring.fresh;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spring.BootLine;
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
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The "done when": a fresh Spring Boot application with spring-boot-starter-web,
 * spring-boot-starter-jdbc, a JDBC driver and idem-spring-boot-starter, and no bean of its own for
 * Idem, replays in transactional and in lease mode. It runs on Spring Boot 3.5 (in
 * idem-spring-boot-starter) and 4.x (in idem-spring-boot4-tests), in a class loader over the test
 * class path minus what such an application does not have: Spring Security, and the Jackson major
 * that its Spring Boot line does not bring (Jackson 3 on 3.5, Jackson 2 on 4.x). On Spring Boot 4.1
 * the start failed with "idem.mode: transactional needs one DataSource and one
 * PlatformTransactionManager bean ... found a DataSource and a transaction manager": the starter was
 * ordered after Spring Boot 3's auto-configuration names only.
 */
class FreshApplicationTest {

  /**
   * Spring Security, springdoc-openapi and its swagger models (test dependencies of the OpenAPI
   * tests, which on Spring Boot 4 need the Jackson hidden below), and the Jackson of the other
   * Spring Boot line.
   */
  private static final Pattern HIDDEN = Pattern.compile(".*[/\\\\](spring-security-[a-z]+|spring-boot-starter-security|spring-boot-security)-[^/\\\\]*\\.jar"
      + "|.*[/\\\\](springdoc-openapi-[a-z-]+|swagger-[a-z-]+)-[^/\\\\]*\\.jar"
      + "|" + (BootLine.BOOT_4
          ? ".*[/\\\\]com[/\\\\]fasterxml[/\\\\]jackson[/\\\\](core[/\\\\]jackson-(databind|core)|datatype|module|dataformat)[/\\\\].*"
          : ".*[/\\\\]tools[/\\\\]jackson[/\\\\].*"));

  @TempDir Path dir;

  private static URLClassLoader freshClassPath() throws Exception {
    List<URL> urls = new ArrayList<>();
    int hidden = 0;
    for (String entry : System.getProperty("java.class.path").split(Pattern.quote(File.pathSeparator))) {
      if (entry.isEmpty()) {
        continue;
      }
      if (HIDDEN.matcher(entry).matches()) {
        hidden++;
        continue;
      }
      urls.add(Path.of(entry).toUri().toURL());
    }
    assertThat(hidden).as("Spring Security and the other Jackson were on the test class path to be left out").isGreaterThanOrEqualTo(2);
    return new URLClassLoader("fresh-application", urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> start(URLClassLoader loader, String... args) throws Throwable {
    assertThat(loader.getResource("org/springframework/security/core/Authentication.class")).isNull();
    Thread thread = Thread.currentThread();
    ClassLoader previous = thread.getContextClassLoader();
    thread.setContextClassLoader(loader);
    try {
      Class<?> app = Class.forName(FreshApp.class.getName(), true, loader);
      return (Map<String, Object>) app.getMethod("start", String[].class).invoke(null, (Object) args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    } finally {
      thread.setContextClassLoader(previous);
    }
  }

  private static HttpResponse<String> post(int port, String path, String key, String body) throws Exception {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(20)).header("Content-Type", "text/plain").header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
  }

  @ParameterizedTest
  @ValueSource(strings = {"transactional", "lease"})
  @SuppressWarnings("unchecked")
  void aFreshApplicationReplaysWithNoBeanForIdem(String mode) throws Throwable {
    try (URLClassLoader loader = freshClassPath()) {
      Map<String, Object> app = start(loader, "--server.port=0", "--spring.main.banner-mode=off",
          "--spring.datasource.url=jdbc:sqlite:" + dir.resolve(mode + ".db") + "?journal_mode=WAL&busy_timeout=10000",
          "--idem.mode=" + mode, "--idem.required-key-routes=POST /orders", "--idem.principal=servlet");
      try (Closeable context = (Closeable) app.get("context")) {
        int port = (Integer) app.get("port");
        Supplier<Integer> orders = (Supplier<Integer>) app.get("orders");
        String key = UUID.randomUUID().toString();
        HttpResponse<String> first = post(port, "/orders", key, "a book");
        HttpResponse<String> again = post(port, "/orders", key, "a book");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(again.statusCode()).isEqualTo(201);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(orders.get()).as("one order for one key").isEqualTo(1);

        // @Idempotent methods write JSON with the application's own Jackson major
        assertThat(app.get("json")).isEqualTo(BootLine.BOOT_4 ? "jackson3" : "jackson2");
        String chargeKey = UUID.randomUUID().toString();
        HttpResponse<String> charge = post(port, "/charges", chargeKey, "acct-1");
        assertThat(charge.statusCode()).isEqualTo(200);
        assertThat(post(port, "/charges", chargeKey, "acct-1").body()).isEqualTo(charge.body());
        assertThat(post(port, "/charges", chargeKey, "acct-2").statusCode()).isEqualTo(422);
      }
    }
  }
}
