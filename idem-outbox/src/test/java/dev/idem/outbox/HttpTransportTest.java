package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.outbox.http.HttpTransport;
import dev.idem.testkit.TestDatabase;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** HTTP intents: sent with idem-client, the intent's id as the Idempotency-Key. */
class HttpTransportTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  private HttpServer server;
  private final List<String> keys = new CopyOnWriteArrayList<>();
  private final Map<String, Integer> answers = new ConcurrentHashMap<>();
  private DataSource ds;
  private Outbox outbox;
  private JdbcIdempotency idem;
  private OutboxRelay relay;

  @BeforeEach
  void setUp() throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      keys.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath() + " "
          + exchange.getRequestHeaders().getFirst("Idempotency-Key") + " "
          + new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
      int status = answers.getOrDefault(exchange.getRequestURI().getPath(), 201);
      byte[] body = ("{\"status\":" + status + "}").getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    ds = DB.target().dataSource();
    outbox = Outbox.builder().table("ob_http").build();
    outbox.createSchema(ds);
    idem = JdbcIdempotency.builder().table("k_http").dataSource(ds).build();
    IdempotentHttpClient client = IdempotentHttpClient.builder(HttpClient.newHttpClient())
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(1).build()).build();
    relay = OutboxRelay.builder(outbox, ds).transport(new HttpTransport(client)).maxAttempts(2)
        .backoff(Duration.ZERO, Duration.ZERO).build();
  }

  @AfterEach
  void tearDown() throws Exception {
    server.stop(0);
    try (Connection c = ds.getConnection(); var st = c.createStatement()) {
      st.execute("DROP TABLE ob_http");
      st.execute("DROP TABLE k_http");
    }
  }

  private String record(String key, String path) {
    URI uri = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
    IdempotentRequest r = new IdempotentRequest(Scope.of("shop", "POST /orders"), IdempotencyKey.of(key),
        Fingerprint.ofBytes(new byte[0]));
    String[] id = new String[1];
    idem.execute(r, outbox.effect(r, (c, out) -> {
      id[0] = out.add(Intent.http("POST", uri, "{\"mail\":1}".getBytes(StandardCharsets.UTF_8))
          .withHeader("Content-Type", "application/json"));
      return StoredResponse.of(201, "");
    }));
    return id[0];
  }

  @Test
  void anHttpIntentIsSentWithItsIdAsTheIdempotencyKey() throws Exception {
    String id = record("h-1", "/mail");
    assertThat(relay.drain().sent()).isEqualTo(1);
    // the key travels as a Structured Field string (draft-ietf-httpapi-idempotency-key-header, section 2)
    assertThat(keys).containsExactly("POST /mail \"" + id + "\" {\"mail\":1}");
  }

  @Test
  void aClientErrorIsDeadAtOnceAndAServerErrorIsRetriedThenDead() throws Exception {
    answers.put("/bad", 400);
    answers.put("/down", 503);
    String bad = record("h-2", "/bad");
    String down = record("h-3", "/down");
    OutboxRelay.Round total = relay.drain();
    assertThat(total.dead()).isEqualTo(2);
    try (Connection c = ds.getConnection()) {
      assertThat(outbox.find(c, bad).orElseThrow().lastError()).startsWith("rejected: HTTP 400");
      assertThat(outbox.find(c, bad).orElseThrow().attempts()).isEqualTo(1);
      assertThat(outbox.find(c, down).orElseThrow().lastError()).startsWith("gave up after 2 attempts; last: ").contains("503");
    }
  }
}
