package dev.idem.faultproxy;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * What a {@link FaultProxy} did with one HTTP request, as {@link FaultProxy#log()} reports it. A
 * record is written once the proxy is done with the request: the response was relayed, lost or
 * dropped, or the exchange failed.
 *
 * <p>Immutable and thread-safe.
 *
 * @param number the request number, from 1, in the order the proxy finished reading request heads
 *     across all client connections
 * @param method the request method as sent, for example {@code POST}; never {@code null}
 * @param target the request-target as sent, for example {@code /orders?id=1}; never {@code null}
 * @param idempotencyKey the value of the first {@code Idempotency-Key} header (the name is matched
 *     ignoring case, the value is trimmed), or empty if the request had none; never {@code null}
 * @param fault the fault the proxy applied to this request number; never {@code null}
 * @param status the status code of the server's final response if the proxy read one (also for
 *     {@link Fault#LOSE_RESPONSE}), or empty if the server never answered (for example {@link
 *     Fault#DROP_REQUEST}); never {@code null}
 * @param delivered whether the proxy wrote the server's complete response to the client socket
 *     without an error; {@code false} for a lost or dropped response and when the proxy answered
 *     with its own error response
 * @param error why the exchange did not complete as the fault intended, for example {@code
 *     "request body exceeds 1024 bytes"} or {@code "upstream: Connection refused"}, or empty;
 *     never {@code null}
 * @param response the server's final response, delivered or lost, if the proxy was built with
 *     {@link FaultProxy.Builder#recordResponses(boolean) recordResponses(true)} and read one;
 *     otherwise empty; never {@code null}
 */
public record LoggedRequest(
    int number,
    String method,
    String target,
    Optional<String> idempotencyKey,
    Fault fault,
    OptionalInt status,
    boolean delivered,
    Optional<String> error,
    Optional<RecordedResponse> response) {

  /**
   * Checks the components.
   *
   * @param number the request number, from 1
   * @param method the request method
   * @param target the request-target
   * @param idempotencyKey the Idempotency-Key header value, or empty
   * @param fault the fault applied
   * @param status the server's final status code, or empty
   * @param delivered whether the client got the server's response
   * @param error why the exchange failed, or empty
   * @param response the recorded response, or empty
   * @throws NullPointerException if a component other than {@code number} or {@code delivered} is
   *     {@code null}
   * @throws IllegalArgumentException if {@code number} is less than 1
   */
  public LoggedRequest {
    Objects.requireNonNull(response, "response");
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
    Objects.requireNonNull(fault, "fault");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(error, "error");
    if (number < 1) {
      throw new IllegalArgumentException("number must be at least 1, was " + number);
    }
  }

  /**
   * A record without a recorded response, as a proxy that does not record responses logs it.
   *
   * @param number the request number, from 1
   * @param method the request method
   * @param target the request-target
   * @param idempotencyKey the Idempotency-Key header value, or empty
   * @param fault the fault applied
   * @param status the server's final status code, or empty
   * @param delivered whether the client got the server's response
   * @param error why the exchange failed, or empty
   * @throws NullPointerException if a component other than {@code number} or {@code delivered} is
   *     {@code null}
   * @throws IllegalArgumentException if {@code number} is less than 1
   */
  public LoggedRequest(
      int number,
      String method,
      String target,
      Optional<String> idempotencyKey,
      Fault fault,
      OptionalInt status,
      boolean delivered,
      Optional<String> error) {
    this(number, method, target, idempotencyKey, fault, status, delivered, error, Optional.empty());
  }
}
