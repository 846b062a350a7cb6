package dev.idem.spring.openapi;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.spring.AppWithoutSecurity;
import dev.idem.spring.WebFluxOnly;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * The expiry policy the WebFlux document publishes is the one the filter's engine keeps. Was: the
 * document always said {@code idem.retention} (24 hours by default), so an application whose own
 * engine kept keys one hour told its clients that a retry two hours later was still safe, and that
 * retry ran again. On a WebFlux application's class path ({@link WebFluxOnly}).
 */
@SpringBootTest(classes = OpenApiEngineRetentionWebFluxOnlyTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.MOCK,
    properties = {"spring.main.web-application-type=reactive", "idem.mode=lease", "idem.store=memory",
        "idem.principal=shared", "idem.required-key-routes=POST /orders"})
class OpenApiEngineRetentionWebFluxOnlyTest {

  @AppWithoutSecurity
  static class App {
    /** The application's own engine, which keeps keys one hour; {@code idem.retention} stays at its default. */
    @Bean
    AsyncLeaseIdempotency ownEngine() {
      return AsyncLeaseIdempotency.builder(new InMemoryLeaseStore()).retention(Duration.ofHours(1)).build();
    }

    @RestController
    static class Shop {
      @PostMapping("/orders")
      Mono<String> order() {
        return Mono.just("{}");
      }
    }
  }

  @Autowired HttpHandler handler;

  @Test
  void theDocumentSaidIdemRetentionWhileTheApplicationsEngineKeptKeysOneHour() throws Exception {
    try (WebFluxOnly app = new WebFluxOnly(handler)) {
      HttpResponse<String> r = app.get("/v3/api-docs");
      assertThat(r.statusCode()).isEqualTo(200);
      JsonNode create = new ObjectMapper().readTree(r.body()).path("paths").path("/orders").path("post");
      assertThat(create.path("x-idempotency-key").toString()).isEqualTo("{\"required\":true,\"retention\":\"PT1H\"}");
      assertThat(IdemOpenApiWebFluxOnlyTest.keyHeader(create).path("description").asText()).contains("kept for PT1H");
    }
  }
}
