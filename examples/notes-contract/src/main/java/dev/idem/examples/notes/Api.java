package dev.idem.examples.notes;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

/** The real HTTP client of the tests (java.net.http, HTTP/1.1) and the per-class SQLite file. */
final class Api {

  private final HttpClient client = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();
  private final URI base;

  Api(URI base) {
    this.base = base;
  }

  static Api at(int port) {
    return new Api(URI.create("http://127.0.0.1:" + port + "/"));
  }

  /** The service's own JDBC URL shape, on a file in a test's temporary directory. */
  static String sqliteUrl(Path dir) {
    return "jdbc:sqlite:" + dir.resolve("notes.db") + "?journal_mode=WAL&busy_timeout=10000";
  }

  /** {@code POST /notes} with a JSON body and, unless {@code key} is null, an Idempotency-Key. */
  HttpResponse<String> post(String key, String json) throws IOException, InterruptedException {
    return post(key, "application/json", json);
  }

  /** {@code POST /notes} with a body of the given media type ({@code null}: no Content-Type). */
  HttpResponse<String> post(String key, String contentType, String body) throws IOException, InterruptedException {
    return post(key, contentType, body, null);
  }

  /** The same, with an {@code Accept} header field unless {@code accept} is {@code null}. */
  HttpResponse<String> post(String key, String contentType, String body, String accept) throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve("/notes"))
        .timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (contentType != null) {
      b.header("Content-Type", contentType);
    }
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    if (accept != null) {
      b.header("Accept", accept);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** {@code POST /notes} with {@code {"title": ...}}. */
  HttpResponse<String> postTitle(String key, String title) throws IOException, InterruptedException {
    return post(key, "{\"title\":" + jsonString(title) + "}");
  }

  HttpResponse<String> get(String path) throws IOException, InterruptedException {
    return client.send(HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(30)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  static String jsonString(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }
}
