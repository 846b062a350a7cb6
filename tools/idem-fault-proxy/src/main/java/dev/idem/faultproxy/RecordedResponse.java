package dev.idem.faultproxy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The server's final response to one request, as a {@link FaultProxy} built with {@link
 * FaultProxy.Builder#recordResponses(boolean) recordResponses(true)} read it: also, and above all,
 * when the proxy then lost it ({@link Fault#LOSE_RESPONSE}), so that a test can compare the answer
 * the client never saw with the answer to its retry.
 *
 * <p>Immutable and thread-safe.
 */
public final class RecordedResponse {

  private final int status;
  private final List<Map.Entry<String, String>> headers;
  private final byte[] body;

  /**
   * @param status the status code, 200 to 999
   * @param headers the header fields in the order received, names as sent, values trimmed; copied
   * @param body the payload: the body without chunk framing or trailer fields; copied
   * @throws NullPointerException if {@code headers} or {@code body} is {@code null}
   * @throws IllegalArgumentException if {@code status} is out of range
   */
  public RecordedResponse(int status, List<Map.Entry<String, String>> headers, byte[] body) {
    if (status < 200 || status > 999) {
      throw new IllegalArgumentException("a final status code is 200 to 999, was " + status);
    }
    List<Map.Entry<String, String>> copy = new ArrayList<>(headers.size());
    for (Map.Entry<String, String> e : headers) {
      copy.add(Map.entry(e.getKey(), e.getValue()));
    }
    this.status = status;
    this.headers = List.copyOf(copy);
    this.body = Objects.requireNonNull(body, "body").clone();
  }

  static RecordedResponse of(Http1.Head head, byte[] payload) {
    List<Map.Entry<String, String>> fields = new ArrayList<>();
    for (String[] f : head.allFields()) {
      fields.add(Map.entry(f[0], f[1]));
    }
    return new RecordedResponse(head.status(), fields, payload);
  }

  /** @return the status code */
  public int status() {
    return status;
  }

  /** @return every header field as name and value, in the order received; immutable */
  public List<Map.Entry<String, String>> headers() {
    return headers;
  }

  /**
   * @param name a field name, matched ignoring case
   * @return the first value of that field, or empty; never {@code null}
   */
  public Optional<String> header(String name) {
    Objects.requireNonNull(name, "name");
    for (Map.Entry<String, String> e : headers) {
      if (e.getKey().equalsIgnoreCase(name)) {
        return Optional.of(e.getValue());
      }
    }
    return Optional.empty();
  }

  /** @return a copy of the payload bytes; empty for a response without a body */
  public byte[] body() {
    return body.clone();
  }

  /** @return the payload decoded as UTF-8 (malformed input replaced) */
  public String bodyAsString() {
    return new String(body, StandardCharsets.UTF_8);
  }

  /** @return the status and the body's length, for logs */
  @Override
  public String toString() {
    return "RecordedResponse[" + status + ", " + body.length + " body bytes]";
  }
}
