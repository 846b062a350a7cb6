package dev.idem.check;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A small HTTP API with idempotency keys, on the JDK's HTTP server, correct or broken on purpose in
 * one way ({@link Flaw}). {@code POST /items} stores a JSON object and answers {@code 201}, {@code
 * Location: /items/{id}} and {@code {"id":n,"item":{...}}}; {@code GET /items} lists every item;
 * {@code GET /empty} is a listing that never shows anything. Keys follow the IETF draft: a missing,
 * malformed or repeated key is 400, a key reused with other content 422, a key in progress 409 with
 * {@code Retry-After}, every error {@code application/problem+json}; a replay carries {@code
 * Idempotent-Replayed: true}. The fingerprint is the JSON with members sorted and numbers compared
 * by exact value. Keys live in memory.
 *
 * <p>{@link #withUniqueMember} makes one member a natural unique key (an order number): a second
 * item with a value already stored is refused with the API's own {@code 409}, whatever its key.
 */
public final class ToyApi implements AutoCloseable {

  /** What is wrong with the API. */
  public enum Flaw {
    /** Nothing: every check passes. */
    NONE,
    /** The stored answer is replayed whatever the content: a key reused with other content is a replay. */
    NO_FINGERPRINT,
    /** No claim: look the key up, run the effect, then store the key; concurrent duplicates all run. */
    CHECK_THEN_INSERT,
    /**
     * A claim in memory while the effect runs, but the key and its answer are stored in a separate
     * transaction after the effect, once the answer is sent ({@link #KEY_STORE_LAG} later): a retry
     * right after a lost answer runs again.
     */
    KEY_STORED_AFTER_EFFECT,
    /** No idempotency at all: keys are ignored, every request runs (as {@code idem.enabled=false}). */
    NO_IDEMPOTENCY,
    /** Correct, but the answers carry neither {@code Location} nor an id. */
    NO_IDS
  }

  /** How long the effect takes: long enough that concurrent duplicates overlap it. */
  static final Duration EFFECT = Duration.ofMillis(300);
  /** How long after its answer {@link Flaw#KEY_STORED_AFTER_EFFECT} stores the key. */
  public static final Duration KEY_STORE_LAG = Duration.ofSeconds(1);

  private static final ObjectMapper JSON = new ObjectMapper()
      .setNodeFactory(JsonNodeFactory.withExactBigDecimals(true))
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

  private record Stored(String fingerprint, byte[] body, String location) {}

  /** One create request as received: its single Idempotency-Key field (or null) and its body. */
  public record Received(String key, String body) {}

  /** The API's own refusal of a unique value already stored: no effect. */
  private static final class Duplicate extends Exception {
    private static final long serialVersionUID = 1L;

    Duplicate(String message) {
      super(message, null, false, false);
    }
  }

  private final Flaw flaw;
  private final String uniqueMember;
  private final Set<String> uniqueValues = new HashSet<>();
  private final List<Received> received = Collections.synchronizedList(new ArrayList<>());
  private final HttpServer server;
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor();
  private final Map<String, Stored> keys = new ConcurrentHashMap<>();
  private final Map<String, Boolean> inFlight = new ConcurrentHashMap<>();
  private final List<String> items = new ArrayList<>();
  private final AtomicLong ids = new AtomicLong();

  private ToyApi(Flaw flaw, String uniqueMember) throws IOException {
    this.flaw = flaw;
    this.uniqueMember = uniqueMember;
    this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    server.setExecutor(threads);
    server.createContext("/", this::handle);
    server.start();
  }

  /**
   * @param flaw what is wrong with it
   * @return the running API on 127.0.0.1 and a free port
   * @throws IOException if it cannot listen
   */
  public static ToyApi start(Flaw flaw) throws IOException {
    return new ToyApi(flaw, null);
  }

  /**
   * @param member a top-level member whose value must be unique among the stored items, as an
   *     order number with a UNIQUE constraint: a second create with a stored value gets {@code
   *     409} and stores nothing (a replay of a stored key is still a replay)
   * @return a correct API (no {@link Flaw}) with that natural unique key
   * @throws IOException if it cannot listen
   */
  public static ToyApi withUniqueMember(String member) throws IOException {
    return new ToyApi(Flaw.NONE, member);
  }

  /** @return every create request received, in order */
  public List<Received> received() {
    synchronized (received) {
      return List.copyOf(received);
    }
  }

  /** @return {@code http://127.0.0.1:<port>/items}, the create endpoint and the listing */
  public URI items() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/items");
  }

  /** @return a listing that is always {@code []} */
  public URI empty() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/empty");
  }

  /** @return how many items exist */
  public int effects() {
    synchronized (items) {
      return items.size();
    }
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
    later.shutdownNow();
  }

  private void handle(HttpExchange ex) throws IOException {
    try (ex) {
      byte[] request = ex.getRequestBody().readAllBytes();
      String path = ex.getRequestURI().getPath();
      if (ex.getRequestMethod().equals("GET") && path.equals("/items")) {
        synchronized (items) {
          send(ex, 200, "application/json", ("[" + String.join(",", items) + "]").getBytes(StandardCharsets.UTF_8), null, false);
        }
      } else if (ex.getRequestMethod().equals("GET") && path.equals("/empty")) {
        send(ex, 200, "application/json", "[]".getBytes(StandardCharsets.UTF_8), null, false);
      } else if (ex.getRequestMethod().equals("POST") && path.equals("/items")) {
        create(ex, request);
      } else {
        problem(ex, 404, "no such resource");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void create(HttpExchange ex, byte[] request) throws IOException, InterruptedException {
    JsonNode body;
    try {
      body = JSON.readTree(request);
    } catch (IOException e) {
      body = null;
    }
    List<String> fields = ex.getRequestHeaders().get("Idempotency-Key");
    received.add(new Received(fields == null || fields.size() != 1 ? null : fields.get(0),
        new String(request, StandardCharsets.UTF_8)));
    if (body == null || !body.isObject()) {
      problem(ex, 400, "the body must be a JSON object");
      return;
    }
    try {
      create(ex, body, fields);
    } catch (Duplicate e) {
      problem(ex, 409, e.getMessage());
    }
  }

  private void create(HttpExchange ex, JsonNode body, List<String> fields)
      throws IOException, InterruptedException, Duplicate {
    if (flaw == Flaw.NO_IDEMPOTENCY) {
      Stored answer = effect(body);
      send(ex, 201, "application/json", answer.body(), answer.location(), false);
      return;
    }
    if (fields == null || fields.isEmpty()) {
      problem(ex, 400, "Idempotency-Key is missing");
      return;
    }
    if (fields.size() > 1) {
      problem(ex, 400, "more than one Idempotency-Key field");
      return;
    }
    String key = parseKey(fields.get(0));
    if (key == null) {
      problem(ex, 400, "Idempotency-Key is malformed");
      return;
    }
    String fingerprint = flaw == Flaw.NO_FINGERPRINT ? "" : canonical(body);
    if (answerStored(ex, key, fingerprint)) {
      return;
    }
    if (flaw == Flaw.CHECK_THEN_INSERT) {
      Stored answer = effect(body);
      keys.put(key, new Stored(fingerprint, answer.body(), answer.location()));
      send(ex, 201, "application/json", answer.body(), answer.location(), false);
      return;
    }
    if (inFlight.putIfAbsent(key, Boolean.TRUE) != null) {
      ex.getResponseHeaders().set("Retry-After", "1");
      problem(ex, 409, "a request with this key is in progress");
      return;
    }
    Stored answer;
    try {
      if (answerStored(ex, key, fingerprint)) {
        return;
      }
      answer = effect(body);
      if (flaw != Flaw.KEY_STORED_AFTER_EFFECT) {
        keys.put(key, new Stored(fingerprint, answer.body(), answer.location()));
      }
    } finally {
      inFlight.remove(key);
    }
    send(ex, 201, "application/json", answer.body(), answer.location(), false);
    if (flaw == Flaw.KEY_STORED_AFTER_EFFECT) {
      Stored stored = new Stored(fingerprint, answer.body(), answer.location());
      later.schedule(() -> keys.put(key, stored), KEY_STORE_LAG.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /** Replays or refuses if the key has a stored answer. */
  private boolean answerStored(HttpExchange ex, String key, String fingerprint) throws IOException {
    Stored s = keys.get(key);
    if (s == null) {
      return false;
    }
    if (!s.fingerprint().equals(fingerprint)) {
      problem(ex, 422, "the key was used with other content");
    } else {
      send(ex, 201, "application/json", s.body(), s.location(), true);
    }
    return true;
  }

  private Stored effect(JsonNode body) throws InterruptedException, Duplicate {
    TimeUnit.MILLISECONDS.sleep(EFFECT.toMillis());
    long id;
    String item;
    synchronized (items) {
      if (uniqueMember != null && body.has(uniqueMember) && !uniqueValues.add(body.get(uniqueMember).asText())) {
        throw new Duplicate("an item with this " + uniqueMember + " exists");
      }
      id = ids.incrementAndGet();
      item = "{\"id\":" + id + ",\"item\":" + body + "}";
      items.add(item);
    }
    if (flaw == Flaw.NO_IDS) {
      return new Stored("", "{\"ok\":true}".getBytes(StandardCharsets.UTF_8), null);
    }
    return new Stored("", item.getBytes(StandardCharsets.UTF_8), "/items/" + id);
  }

  /** The draft's sf-string, or a bare value of visible ASCII without quote, backslash, comma or space. */
  static String parseKey(String field) {
    String v = field.strip();
    if (v.isEmpty()) {
      return null;
    }
    if (v.charAt(0) == '"') {
      if (v.length() < 3 || v.charAt(v.length() - 1) != '"') {
        return null;
      }
      String inner = v.substring(1, v.length() - 1);
      return inner.contains("\"") || inner.contains("\\") ? null : inner;
    }
    for (char c : v.toCharArray()) {
      if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == ',') {
        return null;
      }
    }
    return v;
  }

  /** Members sorted, numbers by exact value (1.0 and 1 are equal, 2^53 and 2^53 + 1 are not). */
  static String canonical(JsonNode node) {
    if (node.isObject()) {
      Map<String, String> sorted = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        sorted.put(e.getKey(), canonical(e.getValue()));
      }
      StringBuilder sb = new StringBuilder("{");
      sorted.forEach((k, v) -> sb.append(JsonNodeFactory.instance.textNode(k)).append(':').append(v).append(','));
      return sb.append('}').toString();
    }
    if (node.isArray()) {
      StringBuilder sb = new StringBuilder("[");
      node.forEach(e -> sb.append(canonical(e)).append(','));
      return sb.append(']').toString();
    }
    if (node.isNumber()) {
      return node.decimalValue().stripTrailingZeros().toPlainString();
    }
    return node.toString();
  }

  private static void problem(HttpExchange ex, int status, String detail) throws IOException {
    String body = "{\"type\":\"about:blank\",\"status\":" + status + ",\"detail\":\"" + detail + "\"}";
    send(ex, status, "application/problem+json", body.getBytes(StandardCharsets.UTF_8), null, false);
  }

  private static void send(HttpExchange ex, int status, String type, byte[] body, String location, boolean replayed)
      throws IOException {
    ex.getResponseHeaders().set("Content-Type", type);
    if (location != null) {
      ex.getResponseHeaders().set("Location", location);
    }
    if (replayed) {
      ex.getResponseHeaders().set("Idempotent-Replayed", "true");
    }
    ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    ex.getResponseBody().write(body);
  }
}
