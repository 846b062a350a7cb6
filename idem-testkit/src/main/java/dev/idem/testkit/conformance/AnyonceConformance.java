package dev.idem.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.http.ProblemCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystemAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.DynamicTest;

/**
 * Runs the anyonce conformance vectors for the IETF Idempotency-Key header draft (third-party, in
 * this jar under {@code conformance/anyonce-vectors}, Apache-2.0; see the README there) against an
 * Idempotency-Key filter over real HTTP, one dynamic test per vector id. The filter and its server
 * are the caller's ({@link Servers}): idem-servlet runs them on {@code IdempotencyFilter}, idem-webflux
 * on {@code IdempotencyWebFilter}, each behind a fixture with the vectors' API (below) and
 * configured as the Spring Boot starter configures it by default: the routes {@link
 * #REQUIRED_ROUTES}, key required; {@link #MAX_BODY_BYTES}, {@link #MAX_RESPONSE_BYTES}, {@link
 * #MAX_RETRY_AFTER}; fail-fast; {@value #PROBLEM_TYPE_BASE} problem types.
 *
 * <p>The fixture API ({@code schema.json}, {@code fixture}):
 *
 * <ul>
 *   <li>{@code POST /echo}: 201 with the request body, {@code text/plain};
 *   <li>{@code POST /status/{code}}: that status with the body {@code status:{code}};
 *   <li>{@code POST /slow?ms=N}: waits N ms, then 200 with {@code slept:N};
 *   <li>{@code POST /large?bytes=N}: 200 with N bytes ({@code x}), {@code application/octet-stream};
 *   <li>{@code GET /counter}: 200 with {@code {"count":N}}, N the handler invocations so far;
 *   <li>{@code POST /reset}: sets the count to 0, 204.
 * </ul>
 *
 * The four POST handlers each count one invocation when they run; {@code /counter} and {@code
 * /reset} count none; {@link Server#invocations()} reads the same count.
 *
 * <p>Every field of a vector is honoured: the request's method, path, header fields and body; a
 * step's {@code delayMs} (a pause before it is sent) and {@code concurrentWith} (sent {@code
 * delayMs} after the steps it runs beside were sent, while they are in flight: its delay counts
 * from the moment the group's first step reached its handler, so that a slow way to the handler
 * does not swap the two); and each expectation of {@code
 * schema.json}: {@code status}, {@code headers} (a value, {@code present}, {@code absent} or
 * {@code regex}), {@code bodyEquals} (a text or {@code sameAs} another step's body), {@code
 * bodyJson}, {@code bodyBytes} and {@code handlerInvocations} (the fixture's count once the step,
 * and any step it runs beside, answered). A field the runner does not know, in a vector, a step,
 * a request or an expectation, fails the vector: a runner that ignored it would assert nothing. A
 * vector's {@code requires} capability ({@code short-ttl}) is passed to {@link Servers#start},
 * which gives an engine whose retention is short.
 *
 * <p>Where Idem deliberately answers otherwise than a vector expects, a list of deviations names the
 * step, the field, the suite's expectation (checked against the vector, so a changed vector fails
 * here), Idem's documented answer, which is asserted instead, and why. The suite's own expectation
 * is still evaluated for each listed field and must fail: a deviation Idem no longer has fails the
 * test until it is removed from the list. The list is the same for every filter: they answer alike.
 *
 * <p>Requests go over HTTP/1.1 from the JDK's client. Not thread-safe; one run at a time per server.
 */
public final class AnyonceConformance {

  /** The base of Idem's problem type URIs, the filters' default: {@value}. */
  public static final String PROBLEM_TYPE_BASE = "urn:idem:problem:";

  /** The routes a server under test protects, key required: {@code {method, pattern}} pairs. */
  public static final List<List<String>> REQUIRED_ROUTES =
      List.of(List.of("POST", "/echo"), List.of("POST", "/status/*"), List.of("POST", "/slow"), List.of("POST", "/large"));

  /** The request body limit of a server under test, in bytes: the starter's {@code idem.max-body-size}, 1 MiB. */
  public static final int MAX_BODY_BYTES = 1 << 20;

  /** The stored-answer limit of a server under test, in bytes: the starter's {@code idem.max-response-size}, 4 MiB. */
  public static final int MAX_RESPONSE_BYTES = 4 << 20;

  /** The longest {@code Retry-After} of a server under test: the starter's {@code idem.max-retry-after}, 1 s. */
  public static final Duration MAX_RETRY_AFTER = Duration.ofSeconds(1);

  static final String ROOT = "conformance/anyonce-vectors";
  static final ObjectMapper JSON = new ObjectMapper();

  /** Idem's header field marking a replay ({@code IdempotencyHeaders.REPLAYED}). */
  static final String IDEM_REPLAYED = "Idempotent-Replayed";

  /** The anyonce profile's header field marking a replay; the draft names none. */
  static final String SUITE_REPLAYED = "Idempotency-Replayed";

  /** A running server under test: the filter in front of the fixture API, on 127.0.0.1. */
  public interface Server extends AutoCloseable {
    /**
     * @param path a path and query, starting with {@code /}
     * @return its absolute {@code http} URI on this server
     */
    URI uri(String path);

    /** @return how many times a fixture handler ran since the last {@code POST /reset} */
    int invocations();

    /** Stops the server. */
    @Override
    void close();
  }

  /** Starts the servers under test, one per vector. */
  @FunctionalInterface
  public interface Servers {
    /**
     * @param requires the vector's {@code requires} capabilities: with {@code short-ttl}, an
     *     engine whose retention is at most 2 s (and its lease shorter)
     * @return a running server, which the runner closes after the vector
     * @throws Exception if it cannot start
     */
    Server start(Set<String> requires) throws Exception;
  }

  /**
   * One field of one step's expectation that Idem answers otherwise, deliberately.
   *
   * @param vector the vector id
   * @param step the step id
   * @param field {@code status}, {@code bodyEquals}, {@code bodyBytes}, {@code handlerInvocations},
   *     {@code headers.<name>} or {@code bodyJson.<member>}
   * @param suite the suite's expectation there, as JSON text, or {@code null} where it has none
   * @param idem Idem's answer, asserted instead, as JSON text in the same expectation language, or
   *     {@code null} to assert nothing there (only where another entry asserts Idem's answer)
   * @param reason why Idem answers so
   */
  record Deviation(String vector, String step, String field, @Nullable String suite, @Nullable String idem, String reason) {}

  static final String REPLAY_HEADER = "The draft defines no header field that marks a replay (an open question of the"
      + " working group, ietf-wg-httpapi/idempotency issue 46); Idem marks one with Idempotent-Replayed: true, the"
      + " name Stripe's API uses, and sends no Idempotency-Replayed (docs/http.md)";
  static final String PROBLEM_CODE = "The draft asks for a body 'containing a link pointing to relevant documentation'"
      + " and names no member; Idem's RFC 9457 problems identify themselves by their type URI"
      + " (urn:idem:problem:<name>, docs/http.md) and carry no 'code' member";
  static final String RESPONSE_CAP = "The suite's profile caps stored answers at 1 MiB and replays a larger one as an"
      + " empty 200 with Idempotency-Replay: omitted; Idem's default cap (maxResponseBytes, the starter's"
      + " idem.max-response-size) is 4 MiB, so this 1 MiB + 1 byte answer is stored and replayed whole (an answer"
      + " above Idem's cap is refused on retry with 422 response-too-large-to-replay, never replayed empty)";

  /** Idem's documented, deliberate answers where a vector expects another; see the class comment. */
  static final List<Deviation> DEVIATIONS = List.of(
      // the replay header's name
      new Deviation("profile/4xx-replayed", "retry", "headers." + SUITE_REPLAYED, "\"true\"", "{\"absent\":true}", REPLAY_HEADER),
      new Deviation("profile/4xx-replayed", "retry", "headers." + IDEM_REPLAYED, null, "\"true\"", REPLAY_HEADER),
      new Deviation("profile/5xx-not-stored", "retry", "headers." + IDEM_REPLAYED, null, "{\"absent\":true}", REPLAY_HEADER),
      new Deviation("profile/replayed-header", "first", "headers." + IDEM_REPLAYED, null, "{\"absent\":true}", REPLAY_HEADER),
      new Deviation("profile/replayed-header", "retry", "headers." + SUITE_REPLAYED, "\"true\"", "{\"absent\":true}", REPLAY_HEADER),
      new Deviation("profile/replayed-header", "retry", "headers." + IDEM_REPLAYED, null, "\"true\"", REPLAY_HEADER),
      // the stored-answer cap
      new Deviation("profile/omitted-body-replay", "retry", "bodyBytes", "0", "1048577", RESPONSE_CAP),
      new Deviation("profile/omitted-body-replay", "retry", "bodyEquals", null, "{\"sameAs\":\"first\"}", RESPONSE_CAP),
      new Deviation("profile/omitted-body-replay", "retry", "headers." + SUITE_REPLAYED, "\"true\"", "{\"absent\":true}", REPLAY_HEADER),
      new Deviation("profile/omitted-body-replay", "retry", "headers." + IDEM_REPLAYED, null, "\"true\"", REPLAY_HEADER),
      new Deviation("profile/omitted-body-replay", "retry", "headers.Idempotency-Replay", "\"omitted\"", "{\"absent\":true}", RESPONSE_CAP),
      // the problems' identifiers
      new Deviation("profile/problem-code-member", "missing", "bodyJson.code", "\"missing-key\"", null, PROBLEM_CODE),
      new Deviation("profile/problem-code-member", "missing", "bodyJson.type", null,
          "\"" + PROBLEM_TYPE_BASE + ProblemCatalog.KEY_MISSING + "\"", PROBLEM_CODE),
      new Deviation("profile/problem-code-member", "changed", "bodyJson.code", "\"fingerprint-mismatch\"", null, PROBLEM_CODE),
      new Deviation("profile/problem-code-member", "changed", "bodyJson.type", null,
          "\"" + PROBLEM_TYPE_BASE + ProblemCatalog.KEY_REUSED + "\"", PROBLEM_CODE),
      new Deviation("profile/empty-key-rejected", "empty", "bodyJson.code", "\"invalid-key\"", null, PROBLEM_CODE),
      new Deviation("profile/empty-key-rejected", "empty", "bodyJson.type", null,
          "\"" + PROBLEM_TYPE_BASE + ProblemCatalog.KEY_MALFORMED + "\"", PROBLEM_CODE),
      new Deviation("profile/key-too-long", "too-long", "bodyJson.code", "\"invalid-key\"", null, PROBLEM_CODE),
      new Deviation("profile/key-too-long", "too-long", "bodyJson.type", null,
          "\"" + PROBLEM_TYPE_BASE + ProblemCatalog.KEY_MALFORMED + "\"", PROBLEM_CODE));

  /** The capabilities a vector may require, per schema.json. */
  static final Set<String> CAPABILITIES = Set.of("short-ttl");

  private static final Set<String> VECTOR_FIELDS =
      Set.of("id", "tier", "title", "draftRef", "description", "requires", "fixture", "steps");
  private static final Set<String> STEP_FIELDS = Set.of("id", "delayMs", "concurrentWith", "request", "expect");
  private static final Set<String> REQUEST_FIELDS = Set.of("method", "path", "headers", "body");
  private static final Set<String> EXPECT_FIELDS =
      Set.of("status", "headers", "bodyEquals", "bodyJson", "bodyBytes", "handlerInvocations");
  private static final Set<String> METHODS = Set.of("GET", "POST", "PUT", "PATCH", "DELETE");
  private static final Set<String> FIXTURES = Set.of("echo", "status", "slow", "large", "counter");

  private AnyonceConformance() {}

  /**
   * One vector file, read.
   *
   * @param path its path under {@link #ROOT}, such as {@code core/echo.json}
   * @param source where it was read from (a file or a jar entry), for the test report
   * @param json its content
   */
  record VectorFile(String path, URI source, JsonNode json) {}

  /** @return the vectors, core first, by path; never empty. Read from a directory or from this jar. */
  static List<VectorFile> vectorFiles() {
    URL root = AnyonceConformance.class.getClassLoader().getResource(ROOT + "/schema.json");
    assertThat(root).as(ROOT + "/schema.json on the class path").isNotNull();
    try {
      URI uri = root.toURI();
      if (!uri.getScheme().equals("jar")) {
        return vectorFiles(Paths.get(uri).getParent());
      }
      FileSystem jar;
      boolean opened = false;
      try {
        jar = FileSystems.newFileSystem(uri, Map.of());
        opened = true;
      } catch (FileSystemAlreadyExistsException e) {
        jar = FileSystems.getFileSystem(uri);
      }
      try {
        return vectorFiles(jar.getPath("/" + ROOT));
      } finally {
        if (opened) {
          jar.close();
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private static List<VectorFile> vectorFiles(Path dir) throws IOException {
    assertThat(Files.exists(dir.resolve("LICENSE-Apache-2.0.txt"))).as("the vectors' licence beside them").isTrue();
    List<VectorFile> files = new ArrayList<>();
    for (String tier : List.of("core", "profile")) {
      List<Path> paths;
      try (Stream<Path> s = Files.list(dir.resolve(tier))) {
        paths = s.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
      }
      for (Path p : paths) {
        files.add(new VectorFile(tier + "/" + p.getFileName(), p.toUri(), JSON.readTree(Files.readAllBytes(p))));
      }
    }
    assertThat(files).as("conformance vectors").isNotEmpty();
    return files;
  }

  /**
   * The vectors as dynamic tests, each on a server of its own from {@code servers}.
   *
   * @param servers starts the server under test for each vector, never {@code null}
   * @return one dynamic test per vector, then one that checks the deviation list against the vectors
   */
  public static Stream<DynamicTest> tests(Servers servers) {
    List<VectorFile> files = vectorFiles();
    List<DynamicTest> tests = new ArrayList<>();
    for (VectorFile file : files) {
      String id = file.json().path("id").asText(file.path());
      tests.add(DynamicTest.dynamicTest(id, file.source(), () -> run(servers, file)));
    }
    tests.add(DynamicTest.dynamicTest("every listed deviation names a vector step and the suite's expectation there",
        () -> checkDeviationList(files)));
    return tests.stream();
  }

  /** Each deviation points at an existing step whose expectation is as listed. */
  static void checkDeviationList(List<VectorFile> files) {
    Map<String, JsonNode> vectors = new LinkedHashMap<>();
    files.forEach(f -> vectors.put(f.json().path("id").asText(), f.json()));
    for (Deviation d : DEVIATIONS) {
      JsonNode v = vectors.get(d.vector());
      assertThat(v).as("deviation names vector " + d.vector()).isNotNull();
      JsonNode step = stepById(v, d.step());
      assertThat(step).as("deviation names step " + d.vector() + "/" + d.step()).isNotNull();
      assertSuiteValue(d, expectations(step.get("expect")));
    }
  }

  static @Nullable JsonNode stepById(JsonNode vector, String id) {
    for (JsonNode s : vector.get("steps")) {
      if (s.path("id").asText().equals(id)) {
        return s;
      }
    }
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // validation against schema.json: unknown fields fail

  static void validate(VectorFile file) {
    JsonNode v = file.json();
    String where = file.path();
    knownFields(v, VECTOR_FIELDS, "vector " + where);
    String id = text(v, "id", where);
    assertThat(id).as("vector id").matches("^(core|profile)/[a-z0-9]+(-[a-z0-9]+)*$");
    assertThat(file.path()).as("vector file of " + id).isEqualTo(id + ".json");
    String tier = text(v, "tier", id);
    assertThat(tier).as(id + " tier").isIn("core", "profile");
    assertThat(id).as(id + " tier prefix").startsWith(tier + "/");
    if (tier.equals("core")) {
      assertThat(v.has("draftRef")).as(id + ": a core vector has a draftRef").isTrue();
    }
    assertThat(text(v, "fixture", id)).as(id + " fixture").isIn(FIXTURES);
    if (v.has("requires")) {
      for (JsonNode r : v.get("requires")) {
        assertThat(r.asText()).as(id + " requires a capability the runner knows").isIn(CAPABILITIES);
      }
    }
    JsonNode steps = v.get("steps");
    assertThat(steps != null && steps.isArray() && steps.size() > 0).as(id + " has steps").isTrue();
    Set<String> seen = new LinkedHashSet<>();
    for (JsonNode s : steps) {
      knownFields(s, STEP_FIELDS, id + " step");
      String sid = text(s, "id", id + " step");
      assertThat(seen.add(sid)).as(id + ": step id " + sid + " is unique").isTrue();
      JsonNode req = s.get("request");
      assertThat(req).as(id + "/" + sid + " request").isNotNull();
      knownFields(req, REQUEST_FIELDS, id + "/" + sid + " request");
      assertThat(text(req, "method", id + "/" + sid)).isIn(METHODS);
      assertThat(text(req, "path", id + "/" + sid)).startsWith("/");
      JsonNode expect = s.get("expect");
      assertThat(expect).as(id + "/" + sid + " expect").isNotNull();
      knownFields(expect, EXPECT_FIELDS, id + "/" + sid + " expect");
      assertThat(expect.has("status")).as(id + "/" + sid + " expects a status").isTrue();
      if (expect.has("headers")) {
        Iterator<Map.Entry<String, JsonNode>> it = expect.get("headers").fields();
        while (it.hasNext()) {
          Map.Entry<String, JsonNode> h = it.next();
          JsonNode m = h.getValue();
          if (!m.isTextual()) {
            assertThat(m.isObject() && m.size() == 1).as(id + "/" + sid + " header matcher " + h.getKey()).isTrue();
            knownFields(m, Set.of("present", "absent", "regex"), id + "/" + sid + " header matcher " + h.getKey());
          }
        }
      }
      if (expect.has("bodyEquals") && expect.get("bodyEquals").isObject()) {
        knownFields(expect.get("bodyEquals"), Set.of("sameAs"), id + "/" + sid + " bodyEquals");
      }
    }
  }

  static void knownFields(JsonNode node, Set<String> known, String where) {
    assertThat(node.isObject()).as(where + " is an object").isTrue();
    node.fieldNames().forEachRemaining(name -> {
      if (!known.contains(name)) {
        fail(where + " has the field '" + name + "', which this runner does not implement (known: " + known
            + "); implement it rather than ignore it");
      }
    });
  }

  static String text(JsonNode node, String field, String where) {
    JsonNode n = node.get(field);
    assertThat(n != null && n.isTextual()).as(where + ": '" + field + "' is a string").isTrue();
    return n.asText();
  }

  // ---------------------------------------------------------------------------------------------
  // running

  /** The client of every run: HTTP/1.1, as the vectors' requests are written. Thread-safe. */
  private static final HttpClient CLIENT =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  static HttpResponse<byte[]> send(HttpRequest request) throws IOException, InterruptedException {
    return CLIENT.send(request, HttpResponse.BodyHandlers.ofByteArray());
  }

  static void run(Servers servers, VectorFile file) throws Exception {
    validate(file);
    JsonNode vector = file.json();
    String id = vector.get("id").asText();
    Set<String> requires = new LinkedHashSet<>();
    vector.path("requires").forEach(r -> requires.add(r.asText()));
    try (Server server = servers.start(requires)) {
      HttpResponse<byte[]> reset = send(HttpRequest.newBuilder(server.uri("/reset")).timeout(Duration.ofSeconds(20))
          .POST(HttpRequest.BodyPublishers.noBody()).build());
      assertThat(reset.statusCode()).as("POST /reset").isEqualTo(204);

      List<List<JsonNode>> groups = groups(id, vector.get("steps"));
      Map<String, HttpResponse<byte[]>> answers = new LinkedHashMap<>();
      List<String> failures = new ArrayList<>();
      ExecutorService pool = Executors.newCachedThreadPool();
      try {
        for (List<JsonNode> group : groups) {
          JsonNode lead = group.get(0);
          long leadDelay = lead.path("delayMs").asLong(0);
          if (leadDelay > 0) {
            Thread.sleep(leadDelay);
          }
          // The steps beside the lead are timed from the moment its handler runs, not from its
          // send: on a loaded machine the lead's way to its handler (the first request of a cold
          // server, in core/concurrent-409) took longer than the vector's delay, the duplicate
          // claimed the key first, and the two answers swapped (was: a flaky 409 on the lead).
          int invokedBefore = server.invocations();
          Map<String, Future<HttpResponse<byte[]>>> sent = new LinkedHashMap<>();
          Map<String, Long> offsets = new LinkedHashMap<>();
          for (JsonNode step : group) {
            // a step beside others is sent its delayMs after the last of them was sent
            long after = 0;
            for (JsonNode other : step.path("concurrentWith")) {
              after = Math.max(after, offsets.get(other.asText()));
            }
            long delay = step == lead ? 0 : after + step.path("delayMs").asLong(0);
            offsets.put(step.get("id").asText(), delay);
            HttpRequest request = request(server, step.get("request"));
            boolean beside = step != lead;
            sent.put(step.get("id").asText(), pool.submit(() -> {
              if (beside) {
                leadRunning(server, invokedBefore);
              }
              long wait = TimeUnit.MILLISECONDS.toNanos(delay);
              if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
              }
              return send(request);
            }));
          }
          for (Map.Entry<String, Future<HttpResponse<byte[]>>> e : sent.entrySet()) {
            answers.put(e.getKey(), e.getValue().get(30, TimeUnit.SECONDS));
          }
          int invocations = server.invocations();
          for (JsonNode step : group) {
            String sid = step.get("id").asText();
            failures.addAll(checkStep(id, step, answers.get(sid), invocations, answers));
          }
        }
      } finally {
        pool.shutdownNow();
      }
      if (!failures.isEmpty()) {
        fail(id + ":\n  " + String.join("\n  ", failures));
      }
    }
  }

  /**
   * Waits until a fixture handler has run since {@code invokedBefore} was read (the group's lead is
   * in its handler), for at most 10 s; a lead that never reaches a handler (refused by the filter)
   * only delays the steps beside it.
   */
  private static void leadRunning(Server server, int invokedBefore) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (server.invocations() <= invokedBefore && System.nanoTime() < until) {
      Thread.sleep(1);
    }
  }

  /**
   * Splits the steps into groups sent together: a step without {@code concurrentWith} starts a
   * group; one with it joins the group of the steps it names, which must be the current group.
   */
  static List<List<JsonNode>> groups(String id, JsonNode steps) {
    List<List<JsonNode>> groups = new ArrayList<>();
    for (JsonNode step : steps) {
      JsonNode with = step.get("concurrentWith");
      if (with == null) {
        groups.add(new ArrayList<>(List.of(step)));
        continue;
      }
      assertThat(groups).as(id + "/" + step.get("id").asText() + ": concurrentWith needs an earlier step").isNotEmpty();
      List<JsonNode> current = groups.get(groups.size() - 1);
      Set<String> inGroup = new LinkedHashSet<>();
      current.forEach(s -> inGroup.add(s.get("id").asText()));
      for (JsonNode other : with) {
        assertThat(inGroup).as(id + "/" + step.get("id").asText() + " runs beside " + other.asText()
            + ", which must be the step just before it or beside that one").contains(other.asText());
      }
      current.add(step);
    }
    return groups;
  }

  static HttpRequest request(Server server, JsonNode req) {
    HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(req.get("path").asText()));
    JsonNode headers = req.get("headers");
    if (headers != null) {
      headers.fields().forEachRemaining(h -> b.header(h.getKey(), h.getValue().asText()));
    }
    HttpRequest.BodyPublisher body = req.has("body")
        ? HttpRequest.BodyPublishers.ofString(req.get("body").asText(), StandardCharsets.UTF_8)
        : HttpRequest.BodyPublishers.noBody();
    return b.method(req.get("method").asText(), body).timeout(Duration.ofSeconds(30)).build();
  }

  // ---------------------------------------------------------------------------------------------
  // expectations

  /** @return a step's expectations flattened by field ({@code headers.X}, {@code bodyJson.m}), in order */
  static Map<String, JsonNode> expectations(JsonNode expect) {
    Map<String, JsonNode> out = new LinkedHashMap<>();
    expect.fields().forEachRemaining(e -> {
      switch (e.getKey()) {
        case "headers", "bodyJson" -> e.getValue().fields().forEachRemaining(m -> out.put(e.getKey() + "." + m.getKey(), m.getValue()));
        case "status", "bodyEquals", "bodyBytes", "handlerInvocations" -> out.put(e.getKey(), e.getValue());
        default -> fail("unknown expectation '" + e.getKey() + "'");
      }
    });
    return out;
  }

  static void assertSuiteValue(Deviation d, Map<String, JsonNode> suite) {
    JsonNode listed = d.suite() == null ? null : parse(d.suite());
    assertThat(suite.get(d.field())).as("the suite's expectation " + d.vector() + "/" + d.step() + " " + d.field()
        + " as the deviation list has it").isEqualTo(listed);
  }

  static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static List<String> checkStep(String vector, JsonNode step, HttpResponse<byte[]> r,
      int invocations, Map<String, HttpResponse<byte[]>> answers) {
    String sid = step.get("id").asText();
    Map<String, JsonNode> suite = expectations(step.get("expect"));
    Map<String, JsonNode> effective = new LinkedHashMap<>(suite);
    List<String> failures = new ArrayList<>();
    for (Deviation d : DEVIATIONS) {
      if (!d.vector().equals(vector) || !d.step().equals(sid)) {
        continue;
      }
      assertSuiteValue(d, suite);
      if (d.suite() != null) {
        String met = check(d.field(), suite.get(d.field()), r, invocations, answers);
        if (met == null) {
          failures.add(sid + " " + d.field() + ": listed as a deviation, but Idem now meets the suite's expectation "
              + d.suite() + "; remove the deviation");
        }
      }
      if (d.idem() == null) {
        effective.remove(d.field());
      } else {
        effective.put(d.field(), parse(d.idem()));
      }
    }
    for (Map.Entry<String, JsonNode> e : effective.entrySet()) {
      String failure = check(e.getKey(), e.getValue(), r, invocations, answers);
      if (failure != null) {
        failures.add(sid + " " + e.getKey() + ": " + failure);
      }
    }
    if (!failures.isEmpty()) {
      failures.add(sid + " answered " + r.statusCode() + " " + r.headers().map() + " "
          + (r.body().length > 300 ? r.body().length + " bytes" : new String(r.body(), StandardCharsets.UTF_8))
          + "; handler invocations " + invocations);
    }
    return failures;
  }

  /** @return {@code null} when the answer meets the expectation, else what it lacks */
  static String check(String field, JsonNode expected, HttpResponse<byte[]> r, int invocations,
      Map<String, HttpResponse<byte[]>> answers) {
    if (field.equals("status")) {
      return r.statusCode() == expected.asInt() ? null : "expected " + expected.asInt() + ", got " + r.statusCode();
    }
    if (field.equals("handlerInvocations")) {
      return invocations == expected.asInt() ? null : "expected " + expected.asInt() + ", got " + invocations;
    }
    if (field.equals("bodyBytes")) {
      return r.body().length == expected.asInt() ? null : "expected " + expected.asInt() + " bytes, got " + r.body().length;
    }
    if (field.equals("bodyEquals")) {
      byte[] want;
      if (expected.isTextual()) {
        want = expected.asText().getBytes(StandardCharsets.UTF_8);
      } else {
        String other = expected.get("sameAs").asText();
        HttpResponse<byte[]> o = answers.get(other);
        if (o == null) {
          return "sameAs names step '" + other + "', which has not answered before this one";
        }
        want = o.body();
      }
      return Arrays.equals(want, r.body()) ? null
          : "expected the body " + preview(want) + ", got " + preview(r.body());
    }
    if (field.startsWith("headers.")) {
      String name = field.substring("headers.".length());
      List<String> values = r.headers().allValues(name);
      String value = values.isEmpty() ? null : String.join(", ", values);
      if (expected.isTextual()) {
        return expected.asText().equals(value) ? null : "expected " + name + ": " + expected.asText() + ", got " + value;
      }
      if (expected.has("present")) {
        return value != null ? null : "expected " + name + " present, it is absent";
      }
      if (expected.has("absent")) {
        return value == null ? null : "expected " + name + " absent, got " + value;
      }
      if (expected.has("regex")) {
        return value != null && Pattern.compile(expected.get("regex").asText()).matcher(value).find() ? null
            : "expected " + name + " to match /" + expected.get("regex").asText() + "/, got " + value;
      }
      return "unknown header matcher " + expected;
    }
    if (field.startsWith("bodyJson.")) {
      String member = field.substring("bodyJson.".length());
      JsonNode body;
      try {
        body = JSON.readTree(r.body());
      } catch (IOException e) {
        return "expected a JSON body, got " + preview(r.body());
      }
      if (body == null || !body.isObject()) {
        return "expected a JSON object, got " + preview(r.body());
      }
      JsonNode got = body.get(member);
      if (got == null) {
        return "expected the member " + member + " = " + expected + ", it is absent";
      }
      boolean same = expected.isNumber() && got.isNumber()
          ? expected.decimalValue().compareTo(got.decimalValue()) == 0
          : expected.equals(got);
      return same ? null : "expected the member " + member + " = " + expected + ", got " + got;
    }
    return "unknown expectation '" + field + "'";
  }

  static String preview(byte[] body) {
    return body.length > 200 ? body.length + " bytes" : "'" + new String(body, StandardCharsets.UTF_8) + "'";
  }

}
