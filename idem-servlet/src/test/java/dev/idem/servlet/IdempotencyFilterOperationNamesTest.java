package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Operations named after the handler a request reaches ({@code POST /notes/{id}}) rather than the
 * route that matched it ({@code POST /**}), and the upgrade that changes the name: a retry whose key
 * an earlier version stored under the route's name is answered from that record, never run again.
 */
class IdempotencyFilterOperationNamesTest {

  private static final OperationNamer NOTES = (method, path) -> path.matches("/notes/[^/]+") ? "/notes/{id}" : null;

  private final InMemoryLeaseStore store = new InMemoryLeaseStore();
  private final LeaseIdempotency engine = LeaseIdempotency.builder(store).build();
  private final TestApp app = new TestApp();
  private TestServer server;

  @AfterEach
  void stop() {
    app.release.countDown();
    if (server != null) {
      server.close();
    }
  }

  private void start(IdempotencyFilterConfig config) throws Exception {
    if (server != null) {
      server.close();
    }
    server = new TestServer(config, app, null, new KeyStatusEndpoint(config, store));
  }

  private HttpResponse<byte[]> post(String path, String key, String body) throws Exception {
    return server.send(server.request(path).header(TestServer.USER_HEADER, "alice").header("Idempotency-Key", key)
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString(body)).build());
  }

  private HttpResponse<byte[]> status(String key, String operation) throws Exception {
    return server.send(server.request(KeyStatusEndpoint.DEFAULT_PATH + "/" + key + "?operation=" + java.net.URLEncoder.encode(operation, StandardCharsets.UTF_8).replace("+", "%20"))
        .header(TestServer.USER_HEADER, "alice").GET().build());
  }

  private KeyStatus stored(String operation, String key) {
    return store.status(Scope.of("alice", operation), IdempotencyKey.of(key));
  }

  @Test
  void keysAreScopedByTheHandlersTemplateAndAskedForByIt() throws Exception {
    start(IdempotencyFilterConfig.builder(engine).operationNames(NOTES, store).build());
    assertThat(post("/notes/1", "k-1", "{\"a\":1}").statusCode()).isEqualTo(201);
    assertThat(stored("POST /notes/{id}", "k-1")).isInstanceOf(KeyStatus.Completed.class);
    assertThat(stored("POST /**", "k-1")).isInstanceOf(KeyStatus.Absent.class);
    // one template for every note: the same key on another note is the same operation, refused as reused
    assertThat(post("/notes/2", "k-1", "{\"a\":1}").statusCode()).isEqualTo(422);
    for (String asked : new String[] {"POST /notes/{id}", "POST /notes/1"}) {
      HttpResponse<byte[]> r = status("k-1", asked);
      assertThat(r.statusCode()).as(asked).isEqualTo(200);
      assertThat(new String(r.body(), StandardCharsets.UTF_8)).contains("\"state\":\"completed\"");
    }
    assertThat(app.calls("POST /notes/1")).isEqualTo(1);
  }

  /**
   * The upgrade: version 1 named operations after routes, version 2 after handlers. A retry of a
   * key that version 1 stored is replayed by version 2, a reuse of it with another body is refused,
   * and key status still finds it.
   */
  @Test
  void aRetryOfAKeyStoredUnderTheRoutesNameBeforeTheUpgradeIsReplayedNeverRunAgain() throws Exception {
    start(IdempotencyFilterConfig.builder(engine).build()); // version 1
    HttpResponse<byte[]> first = post("/notes/1", "k-old", "{\"a\":1}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(stored("POST /**", "k-old")).isInstanceOf(KeyStatus.Completed.class);

    start(IdempotencyFilterConfig.builder(engine).operationNames(NOTES, store).build()); // version 2
    HttpResponse<byte[]> retry = post("/notes/1", "k-old", "{\"a\":1}");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(post("/notes/1", "k-old", "{\"a\":2}").statusCode()).as("the old key with another body").isEqualTo(422);
    assertThat(app.calls("POST /notes/1")).as("runs of the handler").isEqualTo(1);
    assertThat(new String(status("k-old", "POST /notes/1").body(), StandardCharsets.UTF_8)).contains("\"state\":\"completed\"");
    // a new key goes under the new name
    assertThat(post("/notes/1", "k-new", "{\"a\":1}").statusCode()).isEqualTo(201);
    assertThat(stored("POST /notes/{id}", "k-new")).isInstanceOf(KeyStatus.Completed.class);
  }

  /** Without looking under the earlier names, the same upgrade runs the retry again: what the look prevents. */
  @Test
  void withoutTheLookUnderEarlierNamesTheRetryWouldRunAgain() throws Exception {
    start(IdempotencyFilterConfig.builder(engine).build());
    post("/notes/1", "k-old", "{\"a\":1}");
    start(IdempotencyFilterConfig.builder(engine).operationNames(NOTES, null).build());
    post("/notes/1", "k-old", "{\"a\":1}");
    assertThat(app.calls("POST /notes/1")).isEqualTo(2);
  }

  @Test
  void aStoreThatCannotTellTheEarlierNameAnswers503AndRunsNothing() throws Exception {
    KeyStatusReader failing = (scope, key) -> {
      throw new dev.idem.core.IdemStoreException("down", null);
    };
    start(IdempotencyFilterConfig.builder(engine).operationNames(NOTES, failing).build());
    assertThat(post("/notes/1", "k-x", "{\"a\":1}").statusCode()).isEqualTo(503);
    assertThat(app.calls("POST /notes/1")).isZero();
  }

  /**
   * The upgrade that also gives a path a route of its own (a policy route before the catch-all, as
   * the Spring starter's idem.routes do). Was: the look under the earlier name asked only under the
   * name of the route that matches now ({@code POST /notes/*}), while version 1 stored the key
   * under the catch-all's ({@code POST /**}), so the retry ran again; and the record must be
   * answered by the engine of the route it was found under, not by the new route's on another store.
   */
  @Test
  void aRetryOfAKeyStoredUnderACatchAllThatANewPolicyRouteNowPrecedesIsReplayedNeverRunAgain() throws Exception {
    start(IdempotencyFilterConfig.builder(engine).build()); // version 1: POST /** and PATCH /**
    HttpResponse<byte[]> first = post("/notes/1", "k-moved", "{\"a\":1}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(stored("POST /**", "k-moved")).isInstanceOf(KeyStatus.Completed.class);

    InMemoryLeaseStore elsewhere = new InMemoryLeaseStore();
    IdempotencyFilterConfig.Route notes = IdempotencyFilterConfig.Route.of("POST", "/notes/*", KeyRequirement.REQUIRED)
        .withEngine(LeaseIdempotency.builder(elsewhere).build(), elsewhere, "lease mode, another store");
    start(IdempotencyFilterConfig.builder(engine).route(notes).route("POST", "/**", KeyRequirement.REQUIRED)
        .operationNames(NOTES, store).build()); // version 2
    HttpResponse<byte[]> retry = post("/notes/1", "k-moved", "{\"a\":1}");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(app.calls("POST /notes/1")).as("runs of the handler").isEqualTo(1);
  }
}
