package dev.idem.client;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * What a server's key status endpoint (Idem's {@code GET /idempotency-keys/{key}?operation=...})
 * said of one of the caller's keys, as {@link IdempotentHttpClient#keyStatus} reads it. Immutable and
 * thread-safe.
 *
 * @param state what the server knows, never {@code null}
 * @param status for {@link State#COMPLETED}: the stored response's status, which a resend with the
 *     same key and request replays; otherwise -1
 * @param completedAt for {@link State#COMPLETED}: when it completed (server clock), or {@code null}
 *     when the server did not say
 * @param expiresAt for {@link State#COMPLETED}: when the server forgets the key; after it the same key
 *     runs as a new operation. {@code null} otherwise
 * @param leaseUntil for {@link State#IN_PROGRESS}: when the running attempt's lease ends; {@code null}
 *     otherwise
 * @param retryAfter for {@link State#IN_PROGRESS}: how long the server suggests waiting before a
 *     resend; {@code null} otherwise
 * @param step for {@link State#IN_PROGRESS}: the step a multi-step operation is in, or {@code null}
 */
public record ServerKeyStatus(State state, int status, @Nullable Instant completedAt, @Nullable Instant expiresAt,
    @Nullable Instant leaseUntil, @Nullable Duration retryAfter, @Nullable String step) {

  /** The three answers of the endpoint. */
  public enum State {
    /** 200 {@code "completed"}: the operation ran and its answer is stored; a resend replays it. */
    COMPLETED,
    /** 200 {@code "in_progress"}: an attempt holds the key; a resend now would get 409. */
    IN_PROGRESS,
    /**
     * 404 with the endpoint's own problem details ({@code "state":"not_found"}): the server has
     * no record of the key for this caller and operation: it never arrived, it failed and was
     * released, or its retention passed. A resend runs the operation. Any other 404 (a server
     * without the endpoint, a proxy's page) is not this answer: the client reads it as a failure.
     */
    NOT_FOUND
  }

  private static final JsonFactory JSON = JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(8).maxStringLength(4096).build())
      .build();
  private static final int MAX_BYTES = 16 * 1024;

  /** @throws NullPointerException if {@code state} is {@code null} */
  public ServerKeyStatus {
    Objects.requireNonNull(state, "state");
  }

  /** @return the {@link State#NOT_FOUND} answer */
  static ServerKeyStatus notFound() {
    return new ServerKeyStatus(State.NOT_FOUND, -1, null, null, null, null, null);
  }

  /** @return {@link #retryAfter()}, as an optional */
  public Optional<Duration> retryAfterHint() {
    return Optional.ofNullable(retryAfter);
  }

  /**
   * Reads an answer's JSON object: a 200 document ({@code "completed"}, {@code "in_progress"}) or
   * the 404 problem details, which carry {@code "state":"not_found"}. The caller checks that the
   * state agrees with the HTTP status.
   *
   * @return the status, or empty when the body is not the endpoint's document (unknown state,
   *     missing or malformed members, longer than 16 KiB)
   */
  static Optional<ServerKeyStatus> parse(byte[] body) {
    if (body.length == 0 || body.length > MAX_BYTES) {
      return Optional.empty();
    }
    String state = null;
    String completedAt = null;
    String expiresAt = null;
    String leaseUntil = null;
    String step = null;
    long status = -1;
    long retryAfterSeconds = -1;
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return Optional.empty();
      }
      for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
          p.skipChildren();
          continue;
        }
        switch (field) {
          case "state" -> state = value == JsonToken.VALUE_STRING ? p.getText() : null;
          case "status" -> status = value == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : -1;
          case "completedAt" -> completedAt = value == JsonToken.VALUE_STRING ? p.getText() : null;
          case "expiresAt" -> expiresAt = value == JsonToken.VALUE_STRING ? p.getText() : null;
          case "leaseUntil" -> leaseUntil = value == JsonToken.VALUE_STRING ? p.getText() : null;
          case "retryAfterSeconds" -> retryAfterSeconds = value == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : -1;
          case "step" -> step = value == JsonToken.VALUE_STRING ? p.getText() : null;
          default -> { }
        }
      }
    } catch (IOException e) {
      return Optional.empty();
    }
    if ("not_found".equals(state)) {
      return Optional.of(notFound());
    }
    try {
      if ("completed".equals(state) && status >= 100 && status <= 599 && expiresAt != null) {
        return Optional.of(new ServerKeyStatus(State.COMPLETED, (int) status, completedAt == null ? null : Instant.parse(completedAt),
            Instant.parse(expiresAt), null, null, null));
      }
      if ("in_progress".equals(state) && leaseUntil != null && retryAfterSeconds >= 0 && retryAfterSeconds <= 86_400) {
        return Optional.of(new ServerKeyStatus(State.IN_PROGRESS, -1, null, null, Instant.parse(leaseUntil),
            Duration.ofSeconds(retryAfterSeconds), step));
      }
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
    return Optional.empty();
  }
}
