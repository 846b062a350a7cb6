package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Regression: with spring.mvc.servlet.path=/api the filter matches routes on servletPath +
 * pathInfo ("POST /api/orders") while springdoc's paths leave the servlet path out ("/orders"): the
 * document said the key was optional where the filter refused a request without one (400).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = OpenApiServletPathTest.App.class)
class OpenApiServletPathTest {

  static final Path DIR = TransactionalFilterModeTest.tempDir();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("spring.mvc.servlet.path", () -> "/api");
    r.add("idem.principal", () -> "shared");
    r.add("idem.required-key-routes", () -> "POST /api/orders, POST /api/items/*");
  }

  @AppWithoutSecurity
  static class App {
    @RestController
    static class Shop {
      @PostMapping("/orders")
      String order() {
        return "{}";
      }

      @PostMapping("/items/{id:\\d+}")
      String item(@PathVariable String id) {
        return "{}";
      }
    }
  }

  @LocalServerPort int port;

  private HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
    return HttpClient.newHttpClient().send(b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void theDocumentSaysWhatTheFilterDoes() throws Exception {
    HttpResponse<String> noKey = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/orders"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{}")));
    String doc = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/v3/api-docs"))).body();
    System.out.println("OpenApiServletPathTest: POST /api/orders without a key: " + noKey.statusCode() + " " + noKey.body());
    System.out.println("OpenApiServletPathTest: document: " + doc);
    assertThat(noKey.statusCode()).as("the filter requires the key").isEqualTo(400);
    HttpResponse<String> itemNoKey = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/items/7"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{}")));
    assertThat(itemNoKey.statusCode()).as("the filter requires the key on the route with a '*' segment too").isEqualTo(400);
    assertThat(doc.replaceAll("\\s", "")).contains("\"x-idempotency-key\":{\"required\":true");
  }
}
