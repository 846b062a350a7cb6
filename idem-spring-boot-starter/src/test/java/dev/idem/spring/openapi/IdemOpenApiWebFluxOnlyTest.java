package dev.idem.spring.openapi;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.spring.AppWithoutSecurity;
import dev.idem.spring.WebFluxOnly;
import dev.idem.webflux.IdempotencyWebFilter;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * The OpenAPI document of a WebFlux application with springdoc-openapi's WebFlux starter, on the
 * class path of a WebFlux application ({@link WebFluxOnly}): the operations a route of the WebFlux
 * filter protects name the {@code Idempotency-Key} header (required or optional as the route says),
 * the {@code Idempotent-Replayed} response header, Idem's problem answers and how long a key is
 * kept, as on Spring MVC ({@link IdemOpenApiTest}); the others are left alone. The requests sent
 * alongside show that the document says what the filter does. Runs on both Spring Boot lines
 * (springdoc 2.8 and 3.1).
 */
@SpringBootTest(classes = IdemOpenApiWebFluxOnlyTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.MOCK,
    properties = {"spring.main.web-application-type=reactive", "idem.mode=lease", "idem.store=memory",
        "idem.principal=shared", "idem.required-key-routes=POST /orders", "idem.retention=PT12H"})
class IdemOpenApiWebFluxOnlyTest {

  @AppWithoutSecurity
  static class App {
    @RestController
    static class Shop {
      @PostMapping("/orders")
      Mono<String> order() {
        return Mono.just("{}");
      }

      @GetMapping("/orders/{id}")
      Mono<String> get(@PathVariable("id") String id) {
        return Mono.just("{}");
      }

      @PostMapping("/orders/{id}/lines")
      Mono<String> line(@PathVariable("id") String id) {
        return Mono.just("{}");
      }
    }
  }

  @Autowired ApplicationContext context;
  @Autowired HttpHandler handler;
  private WebFluxOnly app;

  @BeforeEach
  void serve() {
    app = new WebFluxOnly(handler);
  }

  @AfterEach
  void stop() {
    app.close();
  }

  @Test
  void theDocumentNamesTheKeyHeaderTheProblemsAndTheRetentionOfEachProtectedOperationOnly() throws Exception {
    assertThat(context.getBeansOfType(IdempotencyWebFilter.class)).as("protected by the WebFlux filter").hasSize(1);
    assertThat(app.post("/orders").statusCode()).as("the filter requires the key on POST /orders").isEqualTo(400);
    assertThat(app.post("/orders/7/lines").statusCode()).as("and lets POST /orders/{id}/lines run without one").isEqualTo(200);

    HttpResponse<String> r = app.get("/v3/api-docs");
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode paths = new ObjectMapper().readTree(r.body()).path("paths");

    JsonNode create = paths.path("/orders").path("post");
    assertThat(keyHeader(create)).as("POST /orders: " + create).isNotNull();
    assertThat(keyHeader(create).path("required").asBoolean()).isTrue();
    assertThat(keyHeader(create).path("description").asText()).contains("kept for PT12H");
    assertThat(create.path("x-idempotency-key").toString()).isEqualTo("{\"required\":true,\"retention\":\"PT12H\"}");
    assertThat(fieldNames(create.path("responses"))).contains("200", "400", "409", "422", "503");
    assertThat(create.path("responses").path("200").path("headers").has("Idempotent-Replayed")).isTrue();
    assertThat(create.path("responses").path("400").path("content").has("application/problem+json")).isTrue();
    assertThat(create.path("responses").path("400").path("description").asText())
        .contains("urn:idem:problem:idempotency-key-missing", "urn:idem:problem:idempotency-key-malformed");
    assertThat(create.path("responses").path("409").path("description").asText()).contains("urn:idem:problem:request-in-progress");
    assertThat(create.path("responses").path("422").path("description").asText()).contains("urn:idem:problem:idempotency-key-reused");
    assertThat(create.path("responses").path("503").path("description").asText())
        .contains("urn:idem:problem:store-unavailable", "urn:idem:problem:outcome-unknown");

    JsonNode line = paths.path("/orders/{id}/lines").path("post");
    assertThat(keyHeader(line)).as("POST /orders/{id}/lines, the default POST /**: " + line).isNotNull();
    assertThat(keyHeader(line).path("required").asBoolean()).isFalse();
    assertThat(line.path("x-idempotency-key").toString()).isEqualTo("{\"required\":false,\"retention\":\"PT12H\"}");
    assertThat(fieldNames(line.path("responses"))).contains("400", "409", "422", "503");

    JsonNode read = paths.path("/orders/{id}").path("get");
    assertThat(read.isMissingNode()).as("GET /orders/{id} is documented").isFalse();
    assertThat(keyHeader(read)).as("GET /orders/{id}, which no route protects: " + read).isNull();
    assertThat(read.has("x-idempotency-key")).isFalse();
    assertThat(fieldNames(read.path("responses"))).doesNotContain("400", "409", "422", "503");
    assertThat(read.toString()).doesNotContain("Idempotent-Replayed", "urn:idem:problem:");
  }

  /** @return the operation's {@code Idempotency-Key} header parameter, or {@code null} */
  static JsonNode keyHeader(JsonNode operation) {
    for (JsonNode p : operation.path("parameters")) {
      if ("header".equals(p.path("in").asText()) && "Idempotency-Key".equals(p.path("name").asText())) {
        return p;
      }
    }
    return null;
  }

  static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
