package dev.idem.lab;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.HttpOperation;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.OperationResult;
import dev.idem.client.RetryBudget;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.faultproxy.Fault;
import dev.idem.faultproxy.FaultProxy;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The second seed article's six cases, end to end over real HTTP: a notes service (one instance with
 * Idem, one without) behind a {@link FaultProxy} that loses responses after the server wrote them,
 * and a client that retries. Each case counts the notes stored through the service itself, not
 * through the responses the client saw.
 *
 * <table>
 *   <caption>cases</caption>
 *   <tr><th>case</th><th>what happens</th></tr>
 *   <tr><td>new key per attempt</td><td>a home-made retry that makes a new key on every attempt; the first response is lost</td></tr>
 *   <tr><td>same key</td><td>{@link IdempotentHttpClient}: one key for the operation; the first response is lost</td></tr>
 *   <tr><td>two independent saves</td><td>two operations with the same title</td></tr>
 *   <tr><td>other title with an existing key</td><td>a key already used, sent with another title</td></tr>
 *   <tr><td>both responses lost</td><td>two attempts, both responses lost</td></tr>
 *   <tr><td>same key with deduplication disabled</td><td>the same key against the instance without Idem</td></tr>
 * </table>
 *
 * <p>Not thread-safe: run one lab at a time.
 */
public final class HttpLab {

  /**
   * One row of the table.
   *
   * @param name the case
   * @param sends how many POSTs reached the proxy, or -1 where the row counts only the extra send
   * @param notesStored notes with this case's title in the service afterwards
   * @param result what the caller got, in words
   * @param expectedNotes how many notes the article's table shows
   * @param ok whether the measured row matches the article's
   */
  public record Row(String name, int sends, long notesStored, String result, long expectedNotes, boolean ok) {}

  private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*(\\d+)");

  private final URI protectedService;
  private final URI unprotectedService;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final String run = UUID.randomUUID().toString().substring(0, 8);

  /**
   * @param protectedService base URI of a notes service with Idem (POST /notes requires a key)
   * @param unprotectedService base URI of the same service with Idem disabled
   */
  public HttpLab(URI protectedService, URI unprotectedService) {
    this.protectedService = Objects.requireNonNull(protectedService, "protectedService");
    this.unprotectedService = Objects.requireNonNull(unprotectedService, "unprotectedService");
  }

  /**
   * Runs the six cases in order.
   *
   * @return one row per case
   * @throws IOException if a service cannot be reached at all
   * @throws InterruptedException if interrupted
   */
  public List<Row> run() throws IOException, InterruptedException {
    List<Row> rows = new ArrayList<>();
    rows.add(newKeyPerAttempt());
    rows.add(sameKey());
    rows.add(twoIndependentSaves());
    rows.add(otherTitleWithAnExistingKey());
    rows.add(bothResponsesLost());
    rows.add(sameKeyWithoutDeduplication());
    return rows;
  }

  private Row newKeyPerAttempt() throws IOException, InterruptedException {
    String title = title("new-key-per-attempt");
    try (FaultProxy proxy = proxy(protectedService, Map.of(1, Fault.LOSE_RESPONSE))) {
      // The bug of the article: the key is made inside the retry loop, so each attempt is a new operation.
      String result = "error";
      for (int attempt = 1; attempt <= 2; attempt++) {
        try {
          HttpResponse<String> r = post(proxy.uri(), UUID.randomUUID().toString(), title);
          result = attempt == 1 ? "first note, " + idOf(r.body()) : "second note, " + idOf(r.body());
          break;
        } catch (IOException lost) {
          result = "error";
        }
      }
      return row("new key per attempt", proxy.requestsSeen(), count(protectedService, title), result, 2);
    }
  }

  private Row sameKey() throws IOException, InterruptedException {
    return stableKeyFirstResponseLost("same key", protectedService, title("same-key"), 1);
  }

  /** One operation with one key through IdempotentHttpClient; the first response is lost. */
  private Row stableKeyFirstResponseLost(String name, URI service, String title, long expected)
      throws IOException, InterruptedException {
    try (FaultProxy proxy = proxy(service, Map.of(1, Fault.LOSE_RESPONSE))) {
      String result;
      try {
        OperationResult r = client(2).send(save(proxy.uri(), title));
        result = (r.replayed() ? "original note (replayed), " : "second note, ") + idOf(r.bodyAsString());
      } catch (RuntimeException e) {
        result = "error: " + e.getClass().getSimpleName();
      }
      return row(name, proxy.requestsSeen(), count(service, title), result, expected);
    }
  }

  private Row twoIndependentSaves() throws IOException, InterruptedException {
    String title = title("independent");
    try (FaultProxy proxy = proxy(protectedService, Map.of())) {
      IdempotentHttpClient client = client(2);
      long a = idOf(client.send(save(proxy.uri(), title)).bodyAsString());
      long b = idOf(client.send(save(proxy.uri(), title)).bodyAsString());
      String result = a != b ? "distinct ids, " + a + " and " + b : "the same id twice, " + a;
      return row("two independent saves", proxy.requestsSeen(), count(protectedService, title), result, 2);
    }
  }

  private Row otherTitleWithAnExistingKey() throws IOException, InterruptedException {
    String title = title("reused-key");
    String key = "reused-" + run;
    IdempotentHttpClient client = client(2);
    client.send(save(protectedService, title).withKey(key));
    try (FaultProxy proxy = proxy(protectedService, Map.of())) {
      String result;
      try {
        client.send(save(proxy.uri(), title("other-title")).withKey(key));
        result = "accepted (wrong)";
      } catch (IdempotencyKeyReusedException e) {
        result = "rejected (422)";
      }
      long stored = count(protectedService, title) + count(protectedService, title("other-title"));
      return row("other title with an existing key", -1, stored, result, 1);
    }
  }

  private Row bothResponsesLost() throws IOException, InterruptedException {
    String title = title("both-lost");
    try (FaultProxy proxy = proxy(protectedService, Map.of(1, Fault.LOSE_RESPONSE, 2, Fault.LOSE_RESPONSE))) {
      String result;
      try {
        client(2).send(save(proxy.uri(), title));
        result = "a response (wrong)";
      } catch (OutcomeUnknownException e) {
        result = "error after attempt " + e.attempts() + ", outcome unknown";
      }
      return row("both responses lost", proxy.requestsSeen(), count(protectedService, title), result, 1);
    }
  }

  private Row sameKeyWithoutDeduplication() throws IOException, InterruptedException {
    return stableKeyFirstResponseLost("same key with deduplication disabled", unprotectedService, title("no-dedup"), 2);
  }

  private static Row row(String name, int sends, long stored, String result, long expected) {
    boolean ok = stored == expected;
    return new Row(name, sends, stored, result, expected, ok);
  }

  private static IdempotentHttpClient client(int attempts) {
    return IdempotentHttpClient.builder(HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build())
        .retryPolicy(ClientRetryPolicy.builder().maxAttempts(attempts).baseDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(100))
            .attemptTimeout(Duration.ofSeconds(10)).build())
        .retryBudget(RetryBudget.unlimited())
        .build();
  }

  private static FaultProxy proxy(URI service, Map<Integer, Fault> faults) throws IOException {
    FaultProxy.Builder b = FaultProxy.builder().target(service.getHost(), service.getPort());
    faults.forEach(b::fault);
    return b.start();
  }

  private static HttpOperation save(URI base, String title) {
    return HttpOperation.postJson(base.resolve("/notes"), "{\"title\":\"" + title + "\"}");
  }

  private HttpResponse<String> post(URI base, String key, String title) throws IOException, InterruptedException {
    HttpRequest request = HttpRequest.newBuilder(base.resolve("/notes"))
        .timeout(Duration.ofSeconds(10))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"" + title + "\"}"))
        .build();
    return http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  private long count(URI service, String title) throws IOException, InterruptedException {
    HttpResponse<String> r = http.send(
        HttpRequest.newBuilder(service.resolve("/notes")).timeout(Duration.ofSeconds(10)).GET().build(),
        HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    if (r.statusCode() != 200) {
      throw new IOException("GET /notes answered " + r.statusCode());
    }
    Matcher m = Pattern.compile("\"title\"\\s*:\\s*\"" + Pattern.quote(title) + "\"").matcher(r.body());
    long n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  private static long idOf(String body) {
    Matcher m = ID.matcher(body);
    return m.find() ? Long.parseLong(m.group(1)) : -1;
  }

  private String title(String name) {
    return "lab-" + name + "-" + run;
  }
}
