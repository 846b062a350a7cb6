package dev.idem.spring.openapi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.AppWithoutSecurity;
import dev.idem.spring.Idempotent;
import dev.idem.spring.TransactionalFilterModeTest;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.oas.models.Paths;
import io.swagger.v3.oas.models.parameters.Parameter;
import io.swagger.v3.oas.models.responses.ApiResponse;
import io.swagger.v3.oas.models.responses.ApiResponses;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The OpenAPI document of a Spring MVC application with springdoc-openapi: the operations a route
 * protects name the {@code Idempotency-Key} header (required or optional as the route says), the
 * {@code Idempotent-Replayed} response header, Idem's problem answers and how long a key is kept;
 * the others are left alone. Runs on both Spring Boot lines (springdoc 2.8 and 3.1).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = IdemOpenApiTest.App.class)
class IdemOpenApiTest {

  static final Path DIR = TransactionalFilterModeTest.tempDir();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("idem.required-key-routes", () -> "POST /orders");
    r.add("idem.retention", () -> "PT24H");
    r.add("idem.routes.payments.route", () -> "POST /payments");
    r.add("idem.routes.payments.mode", () -> "lease");
    r.add("idem.routes.payments.store", () -> "memory");
    r.add("idem.routes.payments.retention", () -> "PT48H");
  }

  @AppWithoutSecurity
  static class App {
    @RestController
    static class Shop {
      @PostMapping("/orders")
      String order() {
        return "{}";
      }

      @GetMapping("/orders/{id}")
      String get(@PathVariable String id) {
        return "{}";
      }

      @PostMapping("/orders/{id}/lines")
      String line(@PathVariable String id) {
        return "{}";
      }

      @PostMapping("/payments")
      String pay() {
        return "{}";
      }
    }
  }

  @LocalServerPort int port;
  @Autowired IdempotencyFilterConfig filter;

  @Test
  void theDocumentNamesTheKeyHeaderTheProblemsAndTheRetentionOfEachProtectedOperationOnly() throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
        + "/v3/api-docs")).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    String doc = r.body().replaceAll("\\s", "");
    assertThat(doc).contains("\"x-idempotency-key\":{\"required\":true,\"retention\":\"PT24H\"}") // POST /orders
        .contains("\"x-idempotency-key\":{\"required\":false,\"retention\":\"PT24H\"}") // POST /orders/{id}/lines, the default POST /**
        .contains("\"x-idempotency-key\":{\"required\":true,\"retention\":\"PT48H\"}") // POST /payments, its own policy
        .contains("\"name\":\"Idempotency-Key\",\"in\":\"header\"").contains("Idempotent-Replayed")
        .contains("urn:idem:problem:idempotency-key-reused").contains("application/problem+json");
    assertThat(doc.split("\"x-idempotency-key\"", -1)).as("three protected operations, GET /orders/{id} not one").hasSize(4);
  }

  /** The model, operation by operation, as the customizer leaves it. */
  @Test
  void aRequiredRouteGetsARequiredHeaderAndEveryProblemStatusTheOperationDoesNotDescribeItself() {
    Operation create = new Operation().responses(new ApiResponses().addApiResponse("201", new ApiResponse().description("made"))
        .addApiResponse("422", new ApiResponse().description("the application's own 422")));
    Operation read = new Operation().responses(new ApiResponses().addApiResponse("200", new ApiResponse().description("ok")));
    OpenAPI api = new OpenAPI().paths(new Paths().addPathItem("/orders", new PathItem().post(create))
        .addPathItem("/orders/{id}", new PathItem().get(read)));
    new IdemOpenApi(IdemOpenApi.routes(filter), Duration.ofHours(24), null).customise(api);

    Parameter key = create.getParameters().get(0);
    assertThat(key.getName()).isEqualTo("Idempotency-Key");
    assertThat(key.getIn()).isEqualTo("header");
    assertThat(key.getRequired()).isTrue();
    assertThat(key.getDescription()).contains("kept for PT24H");
    assertThat(create.getResponses()).containsKeys("201", "400", "409", "422", "503");
    assertThat(create.getResponses().get("422").getDescription()).isEqualTo("the application's own 422");
    assertThat(create.getResponses().get("201").getHeaders()).containsKey("Idempotent-Replayed");
    assertThat(create.getResponses().get("409").getDescription()).contains("urn:idem:problem:request-in-progress");
    assertThat(create.getExtensions()).containsEntry("x-idempotency-key", Map.of("required", true, "retention", "PT24H"));
    assertThat(read.getParameters()).isNull();
    assertThat(read.getExtensions()).isNull();
    assertThat(read.getResponses()).containsOnlyKeys("200");
  }

  @Test
  void aTemplateVariableStandsForOneSegment() {
    assertThat(IdemOpenApi.concretePath("/orders/{id}/lines/{line}")).isEqualTo("/orders/x/lines/x");
    assertThat(IdemOpenApi.concretePath("/items/{id:[0-9]{3}}")).isEqualTo("/items/x");
  }

  /**
   * Regression: with spring.mvc.servlet.path=/api the filter matches "POST /api/orders", springdoc's
   * path is "/orders": the required route fell through to the optional POST /** in the document.
   */
  @Test
  void theServletPathIsPutInFrontOfTheDocumentsPathsAsTheFilterSeesThem() {
    IdempotencyFilterConfig api = IdempotencyFilterConfig.builder(filter.engine())
        .route("POST", "/api/orders", dev.idem.servlet.KeyRequirement.REQUIRED).build();
    Operation create = new Operation().responses(new ApiResponses().addApiResponse("201", new ApiResponse().description("made")));
    new IdemOpenApi(IdemOpenApi.routes(api), Duration.ofHours(24), "/api/").customise(new OpenAPI().paths(new Paths()
        .addPathItem("/orders", new PathItem().post(create))));
    assertThat(create.getExtensions()).containsEntry("x-idempotency-key", Map.of("required", true, "retention", "PT24H"));
  }
}
