package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.HttpOperation;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.OperationResult;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InMemoryLeaseStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Idem's client against Idem's filter: the client reads the filter's problems as the filter means them. */
class IdempotencyFilterClientTest {

  private TestServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  @Test
  void theClientsDefaultKeyReusedTypeIsTheFiltersDefault() {
    assertThat(ClientRetryPolicy.IDEM_KEY_REUSED_PROBLEM_TYPE).isEqualTo(IdempotencyFilter.PROBLEM_KEY_REUSED);
    assertThat(ClientRetryPolicy.defaults().keyReusedProblemTypes()).containsExactly(IdempotencyFilter.PROBLEM_KEY_REUSED);
  }

  @Test
  void aKeyReusedWithAnotherBodyIsIdempotencyKeyReusedExceptionForTheClient() throws Exception {
    server = new TestServer(IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).build(), new TestApp());
    IdempotentHttpClient client = IdempotentHttpClient.builder(HttpClient.newHttpClient()).build();
    OperationResult first = client.send(HttpOperation.postJson(server.uri("/notes"), "{\"title\":\"a\"}").withKey("reused"));
    assertThat(first.status()).isEqualTo(201);
    assertThatThrownBy(() -> client.send(HttpOperation.postJson(server.uri("/notes"), "{\"title\":\"b\"}").withKey("reused")))
        .isInstanceOf(IdempotencyKeyReusedException.class)
        .hasMessageContaining("different request");
  }

  @Test
  void underAnotherProblemTypeBaseTheClientNeedsThatTypeConfigured() throws Exception {
    URI base = URI.create("https://api.example.com/problems/");
    server = new TestServer(IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).problemTypeBase(base).build(), new TestApp());
    IdempotentHttpClient defaults = IdempotentHttpClient.builder(HttpClient.newHttpClient()).build();
    defaults.send(HttpOperation.postJson(server.uri("/notes"), "{\"title\":\"a\"}").withKey("reused"));
    OperationResult other = defaults.send(HttpOperation.postJson(server.uri("/notes"), "{\"title\":\"b\"}").withKey("reused"));
    assertThat(other.status()).as("an unknown problem type is a final 422, not a key reuse").isEqualTo(422);

    IdempotentHttpClient configured = IdempotentHttpClient.builder(HttpClient.newHttpClient())
        .retryPolicy(ClientRetryPolicy.builder().keyReusedProblemTypes(List.of(base + "idempotency-key-reused")).build()).build();
    assertThatThrownBy(() -> configured.send(HttpOperation.postJson(server.uri("/notes"), "{\"title\":\"b\"}").withKey("reused")))
        .isInstanceOf(IdempotencyKeyReusedException.class);
  }
}
