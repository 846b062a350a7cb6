package dev.idem.cli.steps;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The steps lab's payment service: {@code POST /charges} with a body {@code {"row":"...",
 * "variant":"..."}} writes one row in {@value #CHARGES_TABLE} and answers {@code 201
 * {"charge":"ch_..."}}. With an {@code Idempotency-Key} header it runs behind Idem in transactional
 * mode (the charge and the key in one transaction; a repeated key replays the first answer), as a
 * payment API that honours keys does; without one it charges every time. Loopback only, on a port
 * the system picks. Thread-safe.
 */
final class PaymentService implements AutoCloseable {

  /** One row per charge the service made. */
  static final String CHARGES_TABLE = "idem_slab_charges";
  /** The service's own key table. */
  static final String KEYS_TABLE = "idem_slab_payment_keys";

  private static final Pattern FIELD = Pattern.compile("\"(row|variant)\"\\s*:\\s*\"([a-z0-9-]{1,40})\"");

  private final DataSource db;
  private final JdbcIdempotency idem;
  private final HttpServer server;
  private final ExecutorService executor = Executors.newFixedThreadPool(4);

  private PaymentService(DataSource db) throws IOException {
    this.db = db;
    this.idem = JdbcIdempotency.builder().table(KEYS_TABLE).dataSource(db).build();
    this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
    server.createContext("/charges", this::handle);
    server.setExecutor(executor);
  }

  /**
   * Creates the service's tables in {@code db} (dropping any left by an earlier run) and starts it.
   *
   * @throws SQLException if the tables cannot be made
   * @throws IOException if no loopback port can be bound
   */
  static PaymentService start(DataSource db) throws SQLException, IOException {
    try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + CHARGES_TABLE);
      st.execute("DROP TABLE IF EXISTS " + KEYS_TABLE);
      st.execute("CREATE TABLE " + CHARGES_TABLE
          + " (id VARCHAR(40) PRIMARY KEY, row_name VARCHAR(40) NOT NULL, variant VARCHAR(20) NOT NULL)");
    }
    PaymentService service = new PaymentService(db);
    try (Connection c = db.getConnection()) {
      service.idem.createSchema(c);
    }
    service.server.start();
    return service;
  }

  /** @return the host and port the service listens on */
  InetSocketAddress address() {
    return server.getAddress();
  }

  /** @return {@code http://127.0.0.1:<port>} */
  URI uri() {
    return URI.create("http://" + server.getAddress().getAddress().getHostAddress() + ":" + server.getAddress().getPort());
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      if (!exchange.getRequestMethod().equals("POST")) {
        answer(exchange, StoredResponse.of(405, "{\"error\":\"POST only\"}"));
        return;
      }
      byte[] body;
      try (InputStream in = exchange.getRequestBody()) {
        body = in.readNBytes(4096);
      }
      String text = new String(body, StandardCharsets.UTF_8);
      String row = field(text, "row");
      String variant = field(text, "variant");
      if (row == null || variant == null) {
        answer(exchange, StoredResponse.of(400, "{\"error\":\"row and variant are required\"}"));
        return;
      }
      String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
      try {
        if (key == null) {
          try (Connection c = db.getConnection()) {
            answer(exchange, charge(c, row, variant));
          }
        } else {
          Outcome outcome = idem.execute(IdempotentRequest.ofJson("steps-lab", "POST /charges", key, body),
              ctx -> charge(ctx.connection(), row, variant));
          answer(exchange, outcome.response());
        }
      } catch (IdempotencyKeyReusedException e) {
        answer(exchange, StoredResponse.of(422, "{\"error\":\"key reused with another body\"}"));
      } catch (RequestInProgressException e) {
        answer(exchange, StoredResponse.of(409, "{\"error\":\"a request with this key is in progress\"}"));
      } catch (SQLException | RuntimeException e) {
        answer(exchange, StoredResponse.of(503, "{\"error\":\"cannot charge now\"}"));
      }
    }
  }

  private static StoredResponse charge(Connection c, String row, String variant) throws SQLException {
    String id = "ch_" + UUID.randomUUID().toString().replace("-", "");
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + CHARGES_TABLE + " (id, row_name, variant) VALUES (?, ?, ?)")) {
      ps.setString(1, id);
      ps.setString(2, row);
      ps.setString(3, variant);
      ps.executeUpdate();
    }
    return StoredResponse.builder(201).header("Content-Type", "application/json")
        .body("{\"charge\":\"" + id + "\"}").build();
  }

  private static String field(String json, String name) {
    Matcher m = FIELD.matcher(json);
    while (m.find()) {
      if (m.group(1).equals(name)) {
        return m.group(2);
      }
    }
    return null;
  }

  private static void answer(HttpExchange exchange, StoredResponse response) throws IOException {
    byte[] body = response.body();
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(response.status(), body.length == 0 ? -1 : body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
