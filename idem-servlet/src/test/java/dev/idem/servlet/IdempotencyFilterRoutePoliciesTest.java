package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatus;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A policy per route: {@code POST /notes} on the configuration's engine and store, {@code POST /notes/*}
 * (standing for a route that calls another system) on an engine of its own, with its own store and
 * retention. Was: one engine for every route, so a service could not keep one route transactional
 * and another in lease mode.
 */
class IdempotencyFilterRoutePoliciesTest {

  private final InMemoryLeaseStore shared = new InMemoryLeaseStore();
  private final InMemoryLeaseStore own = new InMemoryLeaseStore();
  private final TestApp app = new TestApp();
  private TestServer server;

  @AfterEach
  void stop() {
    app.release.countDown();
    if (server != null) {
      server.close();
    }
  }

  private IdempotencyFilterConfig config() {
    LeaseIdempotency defaults = LeaseIdempotency.builder(shared).build();
    LeaseIdempotency ofItsOwn = LeaseIdempotency.builder(own).lease(Duration.ofSeconds(5)).retention(Duration.ofHours(48)).build();
    return IdempotencyFilterConfig.builder(defaults)
        .required("POST", "/notes")
        .route(IdempotencyFilterConfig.Route.of("POST", "/notes/*", KeyRequirement.OPTIONAL)
            .withEngine(ofItsOwn, own, "lease mode, memory, retention 48h"))
        .build();
  }

  private HttpResponse<byte[]> post(String path, String key) throws Exception {
    return server.send(server.request(path).header(TestServer.USER_HEADER, "alice").header("Idempotency-Key", key)
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{\"text\":\"hi\"}")).build());
  }

  @Test
  void eachRouteRunsOnItsOwnEngineAndKeepsItsKeysInItsOwnStore() throws Exception {
    IdempotencyFilterConfig config = config();
    server = new TestServer(config, app, null, new KeyStatusEndpoint(config, shared));
    HttpResponse<byte[]> note = post("/notes", "k-1");
    HttpResponse<byte[]> slow = post("/notes/1", "k-1");
    assertThat(note.statusCode()).isEqualTo(201);
    assertThat(slow.statusCode()).isEqualTo(201);
    assertThat(post("/notes", "k-1").headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(post("/notes/1", "k-1").headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(app.calls("POST /notes")).isEqualTo(1);
    assertThat(app.calls("POST /notes/1")).isEqualTo(1);

    IdempotencyKey key = IdempotencyKey.of("k-1");
    assertThat(shared.status(Scope.of("alice", "POST /notes"), key)).isInstanceOf(KeyStatus.Completed.class);
    assertThat(shared.status(Scope.of("alice", "POST /notes/*"), key)).isInstanceOf(KeyStatus.Absent.class);
    KeyStatus ownStatus = own.status(Scope.of("alice", "POST /notes/*"), key);
    assertThat(ownStatus).isInstanceOf(KeyStatus.Completed.class);
    KeyStatus.Completed completed = (KeyStatus.Completed) ownStatus;
    assertThat(Duration.between(completed.completedAt(), completed.expiresAt())).as("the route's own retention")
        .isGreaterThan(Duration.ofHours(47));

    // The key status endpoint reads each route's keys where its engine keeps them.
    HttpResponse<byte[]> status = server.send(server.request(KeyStatusEndpoint.DEFAULT_PATH + "/k-1?operation=POST%20/notes/*")
        .header(TestServer.USER_HEADER, "alice").GET().build());
    assertThat(status.statusCode()).isEqualTo(200);
    assertThat(new String(status.body(), StandardCharsets.UTF_8)).contains("\"state\":\"completed\"");
  }

  @Test
  void aRouteWithAnEngineOfItsOwnSaysSoAndTheOthersUseTheConfigurationsEngine() {
    IdempotencyFilterConfig config = config();
    IdempotencyFilterConfig.Route notes = config.routeFor("POST", "/notes");
    IdempotencyFilterConfig.Route slow = config.routeFor("POST", "/notes/1");
    assertThat(config.engineFor(notes)).isSameAs(config.engine());
    assertThat(config.engineFor(slow)).isNotSameAs(config.engine());
    assertThat(slow.policy()).hasValue("lease mode, memory, retention 48h");
    assertThat(slow.toString()).isEqualTo("POST /notes/* (optional; lease mode, memory, retention 48h)");
    assertThat(notes.policy()).isEmpty();
  }
}
