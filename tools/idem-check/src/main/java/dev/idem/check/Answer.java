package dev.idem.check;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idem.faultproxy.RecordedResponse;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** One answer of the API to one request, or why there was none. Immutable. */
final class Answer {

  final int status;
  private final List<Map.Entry<String, String>> headers;
  final byte[] body;
  /** Why no answer arrived (status -1), else {@code null}. */
  final String error;
  /** Whether the client never saw it: the fault proxy read and dropped it. */
  final boolean lost;

  private Answer(int status, List<Map.Entry<String, String>> headers, byte[] body, String error, boolean lost) {
    this.status = status;
    this.headers = headers;
    this.body = body;
    this.error = error;
    this.lost = lost;
  }

  static Answer of(HttpResponse<byte[]> r) {
    List<Map.Entry<String, String>> h = r.headers().map().entrySet().stream()
        .flatMap(e -> e.getValue().stream().map(v -> Map.entry(e.getKey(), v)))
        .toList();
    return new Answer(r.statusCode(), h, r.body() == null ? new byte[0] : r.body(), null, false);
  }

  static Answer lost(RecordedResponse r) {
    return new Answer(r.status(), r.headers(), r.body(), null, true);
  }

  static Answer failed(String why) {
    return new Answer(-1, List.of(), new byte[0], why, false);
  }

  boolean answered() {
    return status > 0;
  }

  boolean success() {
    return status >= 200 && status < 300;
  }

  boolean clientError() {
    return status >= 400 && status < 500;
  }

  Optional<String> header(String name) {
    for (Map.Entry<String, String> e : headers) {
      if (e.getKey().equalsIgnoreCase(name)) {
        return Optional.of(e.getValue());
      }
    }
    return Optional.empty();
  }

  /** @return whether it carries {@code Idempotent-Replayed: true} */
  boolean replayed() {
    return header("Idempotent-Replayed").map(v -> v.trim().equalsIgnoreCase("true")).orElse(false);
  }

  /** @return the media type without parameters, lower case, or empty */
  String mediaType() {
    return header("Content-Type").map(v -> v.split(";", 2)[0].trim().toLowerCase(Locale.ROOT)).orElse("");
  }

  String text() {
    return new String(body, StandardCharsets.UTF_8);
  }

  /** @return the body as text, shortened to {@code max} characters, on one line */
  String excerpt(int max) {
    String t = text().replaceAll("\\s+", " ").strip();
    return t.length() <= max ? t : t.substring(0, max - 3) + "...";
  }

  /**
   * What identifies the effect this answer reports: the {@code Location} field, else a top-level
   * {@code id} member of a JSON body; empty if neither.
   */
  Optional<String> identity() {
    Optional<String> location = header("Location");
    if (location.isPresent()) {
      return Optional.of("Location " + location.get());
    }
    try {
      JsonNode node = Json.MAPPER.readTree(body);
      if (node != null && node.isObject() && node.has("id") && node.get("id").isValueNode()) {
        return Optional.of("id " + node.get("id").asText());
      }
    } catch (IOException | RuntimeException notJson) {
      // no identity
    }
    return Optional.empty();
  }

  /** @return the shortest useful way to name what it identifies, for example {@code /notes/3} */
  String shortIdentity() {
    return identity().map(i -> i.substring(i.indexOf(' ') + 1)).orElse("?");
  }

  /** Same status, same body bytes and same Location: the same answer. */
  boolean sameAs(Answer other) {
    return status == other.status
        && Arrays.equals(body, other.body)
        && header("Location").equals(other.header("Location"));
  }

  /** @return for example {@code 201}, {@code 201 replayed}, {@code 201 (lost)} or {@code no answer} */
  String label() {
    if (!answered()) {
      return "no answer";
    }
    return status + (replayed() ? " replayed" : "") + (lost ? " (lost)" : "");
  }
}
