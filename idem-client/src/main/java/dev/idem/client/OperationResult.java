package dev.idem.client;

import java.net.http.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * The final answer to one operation: the last response, the key it was sent with, how many attempts
 * were made, and whether the server answered from its stored response ({@code Idempotent-Replayed:
 * true}). Immutable and thread-safe.
 *
 * @param key the idempotency key every attempt carried
 * @param attempts how many attempts were sent, at least 1
 * @param status the final response's status
 * @param headers the final response's headers
 * @param body the final response's body bytes (not copied: do not modify)
 * @param replayed whether the server marked the answer as a replay
 */
public record OperationResult(String key, int attempts, int status, HttpHeaders headers, byte[] body, boolean replayed) {

  /** @throws NullPointerException if a reference is {@code null} */
  public OperationResult {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(body, "body");
  }

  /** @return the body decoded as UTF-8 */
  public String bodyAsString() {
    return new String(body, StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return "OperationResult[key=" + key + ", attempts=" + attempts + ", status=" + status + ", replayed=" + replayed + ", body=" + body.length + " bytes]";
  }
}
