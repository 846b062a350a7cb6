package dev.idem.check;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The checker's HTTP side: sends the create request with a given key (or none, or two) and body,
 * never retries on its own, and refuses to send more than the bound. Thread-safe.
 */
final class Exchange {

  /** Header fields java.net.http sets itself and refuses from callers. */
  static final List<String> RESTRICTED = List.of("connection", "content-length", "expect", "host", "upgrade");

  private final HttpClient http;
  private final String method;
  private final List<Map.Entry<String, String>> headers;
  private final Duration timeout;
  private final int bound;
  private final AtomicInteger sends = new AtomicInteger();
  private final AtomicInteger countRequests = new AtomicInteger();

  Exchange(String method, List<Map.Entry<String, String>> headers, Duration timeout, int bound) {
    // HTTP/1.1 only: the fault proxy speaks it, and an h2c upgrade would add a round trip
    this.http = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(timeout)
        .followRedirects(HttpClient.Redirect.NEVER)
        .build();
    this.method = method;
    this.headers = headers;
    this.timeout = timeout;
    this.bound = bound;
  }

  /**
   * Sends the create request.
   *
   * @param url where (the API, or the same path on the fault proxy)
   * @param keys the Idempotency-Key field values, one field each: none, one, or more
   * @param body the body
   * @return the answer, or {@link Answer#failed} if the connection broke or timed out
   * @throws ApiUnreachableException if nothing listens there
   */
  Answer send(URI url, List<String> keys, String body) throws ApiUnreachableException, InterruptedException {
    take(sends);
    HttpRequest.Builder b = HttpRequest.newBuilder(url)
        .timeout(timeout)
        .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    boolean contentType = false;
    for (Map.Entry<String, String> h : headers) {
      b.header(h.getKey(), h.getValue());
      contentType |= h.getKey().equalsIgnoreCase("Content-Type");
    }
    if (!contentType) {
      b.header("Content-Type", "application/json");
    }
    for (String key : keys) {
      b.header("Idempotency-Key", key);
    }
    try {
      return Answer.of(http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray()));
    } catch (ConnectException | HttpConnectTimeoutException | UnresolvedAddressException e) {
      throw unreachable(url, e);
    } catch (IOException e) {
      if (e.getCause() instanceof UnknownHostException || e.getCause() instanceof UnresolvedAddressException) {
        throw unreachable(url, e);
      }
      return Answer.failed(e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
    }
  }

  /**
   * Counts through a GET whose answer is a JSON array (its elements that contain the marker, or
   * all of them) or an object with a numeric {@code total} member.
   */
  long countByUrl(URI url, String marker, boolean byMarker) throws IOException, InterruptedException {
    take(countRequests);
    HttpRequest.Builder b = HttpRequest.newBuilder(url).timeout(timeout).GET();
    for (Map.Entry<String, String> h : headers) {
      if (!h.getKey().equalsIgnoreCase("Content-Type")) {
        b.header(h.getKey(), h.getValue());
      }
    }
    HttpResponse<String> r;
    try {
      r = http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (ConnectException | HttpConnectTimeoutException e) {
      throw unreachable(url, e);
    }
    if (r.statusCode() != 200) {
      throw new IOException("GET " + url + " answered " + r.statusCode() + ", not 200");
    }
    JsonNode node = Json.parse(r.body());
    if (node != null && node.isArray()) {
      if (!byMarker) {
        return node.size();
      }
      long n = 0;
      for (JsonNode e : node) {
        if (Json.compact(e).contains(marker)) {
          n++;
        }
      }
      return n;
    }
    if (node != null && node.isObject() && node.path("total").isIntegralNumber()) {
      return node.get("total").asLong();
    }
    throw new IOException("GET " + url + " answered neither a JSON array nor an object with a numeric \"total\"");
  }

  /** Counts one query to the count function (SQL or a caller's), against the bound. */
  void countedQuery() {
    take(countRequests);
  }

  private void take(AtomicInteger counter) {
    counter.incrementAndGet();
    if (sends.get() + countRequests.get() > bound) {
      throw new IllegalStateException("the checker would send more than its bound of " + bound + " requests");
    }
  }

  private static ApiUnreachableException unreachable(URI url, Exception e) {
    return new ApiUnreachableException("cannot reach " + url + ": " + e, e);
  }

  int sends() {
    return sends.get();
  }

  int countRequests() {
    return countRequests.get();
  }
}
