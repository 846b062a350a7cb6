package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * The WebFlux counterpart of {@link OpenApiServletPathTest}: with {@code spring.webflux.base-path=/api}
 * the WebFlux filter matches its routes on the path within the application ({@code POST /orders} for
 * a request to {@code /api/orders}), and springdoc's paths leave the base path out too: the document
 * must say that the key is required there, as the filter refuses a request without one (400). Were
 * the base path put in front of the document's paths, as the servlet path is on Spring MVC, these
 * operations would fall to the optional {@code POST /**}. On a WebFlux application's class path
 * ({@link WebFluxOnly}).
 */
@SpringBootTest(classes = OpenApiBasePathWebFluxOnlyTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.MOCK,
    properties = {"spring.main.web-application-type=reactive", "spring.webflux.base-path=/api", "idem.mode=lease",
        "idem.store=memory", "idem.principal=shared", "idem.required-key-routes=POST /orders, POST /items/*"})
class OpenApiBasePathWebFluxOnlyTest {

  @AppWithoutSecurity
  static class App {
    @RestController
    static class Shop {
      @PostMapping("/orders")
      Mono<String> order() {
        return Mono.just("{}");
      }

      @PostMapping("/items/{id:\\d+}")
      Mono<String> item(@PathVariable("id") String id) {
        return Mono.just("{}");
      }
    }
  }

  @Autowired HttpHandler handler;

  @Test
  void theDocumentSaysWhatTheFilterDoes() throws Exception {
    try (WebFluxOnly app = new WebFluxOnly(handler)) {
      HttpResponse<String> noKey = app.post("/api/orders");
      HttpResponse<String> item = app.post("/api/items/12");
      HttpResponse<String> doc = app.get("/api/v3/api-docs");
      System.out.println("OpenApiBasePathWebFluxOnlyTest: POST /api/orders without a key: " + noKey.statusCode() + " " + noKey.body());
      System.out.println("OpenApiBasePathWebFluxOnlyTest: document: " + doc.body());
      assertThat(noKey.statusCode()).as("the filter requires the key").isEqualTo(400);
      assertThat(item.statusCode()).as("on POST /api/items/{id} too").isEqualTo(400);
      assertThat(doc.statusCode()).isEqualTo(200);
      JsonNode paths = new ObjectMapper().readTree(doc.body()).path("paths");
      assertThat(paths.has("/orders")).as("springdoc leaves the base path out: " + paths).isTrue();
      assertThat(paths.path("/orders").path("post").path("x-idempotency-key").toString())
          .isEqualTo("{\"required\":true,\"retention\":\"PT24H\"}");
      assertThat(paths.path("/items/{id}").path("post").path("x-idempotency-key").toString())
          .isEqualTo("{\"required\":true,\"retention\":\"PT24H\"}");
    }
  }
}
