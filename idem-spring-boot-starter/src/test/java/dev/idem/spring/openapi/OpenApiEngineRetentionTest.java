package dev.idem.spring.openapi;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.spring.AppWithoutSecurity;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The expiry policy the Spring MVC document publishes is the one the filter's engine keeps. Was:
 * a route without a policy of its own was documented with {@code idem.retention} (24 hours by
 * default) whatever the engine, so an application whose own engine kept keys one hour told its
 * clients that a retry two hours later was still safe, and that retry ran again. The WebFlux
 * side's twin is {@link OpenApiEngineRetentionWebFluxOnlyTest}.
 */
@SpringBootTest(classes = OpenApiEngineRetentionTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.mode=lease", "idem.store=memory", "idem.principal=shared", "idem.required-key-routes=POST /orders"})
class OpenApiEngineRetentionTest {

  @AppWithoutSecurity
  static class App {
    /** The application's own engine, which keeps keys one hour; {@code idem.retention} stays at its default. */
    @Bean
    LeaseIdempotency ownEngine() {
      return LeaseIdempotency.builder(new InMemoryLeaseStore()).retention(Duration.ofHours(1)).build();
    }

    @RestController
    static class Shop {
      @PostMapping("/orders")
      String order() {
        return "{}";
      }
    }
  }

  @LocalServerPort int port;

  @Test
  void theDocumentSaidIdemRetentionWhileTheApplicationsEngineKeptKeysOneHour() throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v3/api-docs")).GET().build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode create = new ObjectMapper().readTree(r.body()).path("paths").path("/orders").path("post");
    assertThat(create.path("x-idempotency-key").toString()).isEqualTo("{\"required\":true,\"retention\":\"PT1H\"}");
    assertThat(IdemOpenApiWebFluxOnlyTest.keyHeader(create).path("description").asText()).contains("kept for PT1H");
  }
}
