package dev.idem.core.http;

import dev.idem.core.AttemptResult;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.StoredResponse;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * Idem's own answers over HTTP, in one place for every HTTP integration: each problem's name,
 * status, title and detail in English, and the one mapping from an engine's {@link AttemptResult}
 * to a problem and its {@code Retry-After}. An integration puts the name under its problem type
 * base (RFC 9457 section 3.1.1) and writes it its own way; the servlet filter's {@code
 * dev.idem.servlet.IdemProblems} and the WebFlux filter take their problems from here, so that the
 * same event gets the same answer on both stacks.
 *
 * <p>Statuses follow draft-ietf-httpapi-idempotency-key-header-07 section 2.7: 400 for a missing
 * or malformed key, 409 for a request still in progress, 422 for a key reused with another
 * payload. Idem's own failures answer 503 when a retry with the same key is safe and may succeed
 * (a {@code Retry-After} field says when), 500 when a retry cannot help. Stateless and thread-safe.
 */
public final class ProblemCatalog {

  /** A required key is absent: 400. */
  public static final String KEY_MISSING = "idempotency-key-missing";
  /** The key field is not a valid key: 400. */
  public static final String KEY_MALFORMED = "idempotency-key-malformed";
  /** The body does not parse as its declared media type: 400. */
  public static final String PAYLOAD_INVALID = "payload-invalid";
  /** A request with the same key is still being processed: 409, with {@code Retry-After}. */
  public static final String IN_PROGRESS = "request-in-progress";
  /** The request body is over the limit: 413. */
  public static final String BODY_TOO_LARGE = "body-too-large";
  /** The key was used with another payload: 422. */
  public static final String KEY_REUSED = "idempotency-key-reused";
  /** The key could not be checked or the transaction not committed, nothing kept: 503. */
  public static final String STORE_UNAVAILABLE = "store-unavailable";
  /** The key's first answer was too large to store, so it cannot be replayed, and it is not run again: 422. */
  public static final String RESPONSE_TOO_LARGE = "response-too-large-to-replay";
  /** Whether the request took effect cannot be told; a retry with the same key settles it: 503. */
  public static final String OUTCOME_UNKNOWN = "outcome-unknown";
  /** The request failed by itself and was rolled back: 500. */
  public static final String REQUEST_FAILED = "request-failed";
  /** The key's stored response cannot be authenticated or decoded: 500. */
  public static final String STORED_RESPONSE_UNREADABLE = "stored-response-unreadable";

  private ProblemCatalog() {}

  /**
   * One of Idem's problems before an integration gives it a type: immutable.
   *
   * @param name the stable name, one of the constants above; never {@code null}
   * @param title a short summary in English, never {@code null}
   * @param status the HTTP status code, 400 to 599
   * @param detail the explanation of this occurrence in English, never {@code null}
   * @param extensions more members in order, name to a {@link String} or a {@link Number}; never
   *     {@code null}, copied
   */
  public record Entry(String name, String title, int status, String detail, Map<String, Object> extensions) {
    /** @throws NullPointerException if a member is {@code null} */
    public Entry {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(title, "title");
      Objects.requireNonNull(detail, "detail");
      extensions = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(extensions, "extensions")));
    }

    /**
     * @param typeBase the problem type base (an absolute URI ending in {@code /}), or {@code null}
     *     for {@code about:blank} problem types
     * @return the RFC 9457 problem details: type {@code typeBase + name} and this title, or with
     *     {@code about:blank} types no type and the status code's reason phrase as title (RFC 9457
     *     section 4.2.1)
     */
    public ProblemDetails details(@Nullable String typeBase) {
      return typeBase == null
          ? new ProblemDetails(null, ProblemDetails.reasonPhrase(status), status, detail, extensions)
          : new ProblemDetails(typeBase + name, title, status, detail, extensions);
    }
  }

  /**
   * A problem and the {@code Retry-After} field to send with it.
   *
   * @param problem never {@code null}
   * @param retryAfterSeconds the delay in whole seconds (RFC 9110 section 10.2.3), or empty for none
   */
  public record Answer(Entry problem, OptionalLong retryAfterSeconds) {
    /** @throws NullPointerException if an argument is {@code null} */
    public Answer {
      Objects.requireNonNull(problem, "problem");
      Objects.requireNonNull(retryAfterSeconds, "retryAfterSeconds");
    }
  }

  /**
   * @param subject what requires the key, such as {@code "POST /orders"}, never {@code null}
   * @return 400 {@value #KEY_MISSING}
   */
  public static Entry keyMissing(String subject) {
    return entry(KEY_MISSING, "Idempotency-Key is missing", 400, subject
        + " requires an Idempotency-Key request header field: send a unique key, such as a UUID, and the same key on every retry");
  }

  /**
   * @param reason the broken rule, which never quotes the key, never {@code null}
   * @return 400 {@value #KEY_MALFORMED}
   */
  public static Entry keyMalformed(String reason) {
    return entry(KEY_MALFORMED, "Idempotency-Key is malformed", 400, reason);
  }

  /**
   * @param detail why the body cannot be read as its media type, never {@code null}
   * @return 400 {@value #PAYLOAD_INVALID}
   */
  public static Entry payloadInvalid(String detail) {
    return entry(PAYLOAD_INVALID, "Request body does not match its media type", 400, detail);
  }

  /**
   * @param detail which limit the body is over, never {@code null}
   * @return 413 {@value #BODY_TOO_LARGE} (RFC 9110 section 15.5.14)
   */
  public static Entry bodyTooLarge(String detail) {
    return entry(BODY_TOO_LARGE, "Request body is too large", 413, detail);
  }

  /** @return 422 {@value #KEY_REUSED} */
  public static Entry keyReused() {
    return entry(KEY_REUSED, "Idempotency-Key is already used", 422, "this Idempotency-Key was already used with a different"
        + " request (method, target, media type or body); use a new key for a new request");
  }

  /** @return 422 {@value #KEY_REUSED} in the words of a method call, whose payload is its arguments */
  public static Entry keyReusedWithOtherArguments() {
    return entry(KEY_REUSED, "Idempotency-Key is already used", 422, "this Idempotency-Key was already used for this"
        + " operation with other arguments; use a new key for a new call");
  }

  /** @return 409 {@value #IN_PROGRESS}, to send with {@code Retry-After: seconds} */
  public static Entry inProgress(long seconds) {
    return entry(IN_PROGRESS, "A request is outstanding for this Idempotency-Key", 409,
        "a request with the same Idempotency-Key is still being processed; retry after " + seconds(seconds));
  }

  /** @return 503 {@value #STORE_UNAVAILABLE}: the key could not be checked, the request was not processed */
  public static Entry storeUnavailable() {
    return entry(STORE_UNAVAILABLE, "Idempotency store is unavailable", 503,
        "the request was not processed because its Idempotency-Key could not be checked; retry later with the same key");
  }

  /** @return 503 {@value #STORE_UNAVAILABLE} for a store failure that kept nothing of a method call */
  public static Entry storeFailed() {
    return entry(STORE_UNAVAILABLE, "Idempotency store is unavailable", 503, "the request was not processed: the idempotency"
        + " store could not be used, and nothing of the request was kept; retry later with the same key");
  }

  /** @return 503 {@value #STORE_UNAVAILABLE}: the transaction did not commit, nothing was kept */
  public static Entry notCommitted() {
    return entry(STORE_UNAVAILABLE, "Idempotency store is unavailable", 503,
        "the request was not processed: its transaction could not be committed; retry later with the same key");
  }

  /**
   * @param seconds the {@code Retry-After} to send with it, at least 1
   * @param phase which write is in doubt, never {@code null}
   * @return 503 {@value #OUTCOME_UNKNOWN}: a retry with the same key is safe, one with a new key is not
   */
  public static Entry outcomeUnknown(long seconds, OutcomeUnknownException.Phase phase) {
    if (phase == OutcomeUnknownException.Phase.PARTIAL) {
      return entry(OUTCOME_UNKNOWN, "Outcome of the request is unknown", 503, "the request was processed in part and stopped;"
          + " its completed steps are recorded. Retry with the same Idempotency-Key after " + seconds(seconds) + ": the retry"
          + " resumes it after its last completed step and returns its answer. Do not send it with a new key");
    }
    String detail = phase == OutcomeUnknownException.Phase.COMPLETION
        ? "the request was processed, but its result could not be recorded, so its outcome cannot be confirmed; retry with the same"
            + " Idempotency-Key after " + seconds(seconds) + ": the retry gets the recorded answer or completes the same operation."
            + " Do not send it with a new key"
        : "the outcome of the request is unknown: its transaction was sent for commit but the acknowledgement was lost."
            + " A retry with the same Idempotency-Key is safe: it returns the stored response if the request was"
            + " committed, and processes it once if it was not";
    return entry(OUTCOME_UNKNOWN, "Outcome of the request is unknown", 503, detail);
  }

  /** @return 500 {@value #REQUEST_FAILED}: the request itself failed and was rolled back */
  public static Entry requestFailed() {
    return entry(REQUEST_FAILED, "The request failed", 500,
        "the request failed and was rolled back: nothing of it was kept and nothing was stored for its Idempotency-Key."
            + " The same request would fail the same way");
  }

  /** @return 500 {@value #STORED_RESPONSE_UNREADABLE}: never replayed, never run again */
  public static Entry storedResponseUnreadable() {
    return entry(STORED_RESPONSE_UNREADABLE, "The stored response cannot be read", 500,
        "the request with this Idempotency-Key was already processed, but its recorded answer cannot be read;"
            + " it is not run again and no answer is replayed");
  }

  /**
   * The answer to a retry whose first answer was too large to store: never an empty or cut body
   * under the original status, and never a second run.
   *
   * @param stored the key's record, without its body ({@link StoredResponse#bodyStored()} false)
   * @return 422 {@value #RESPONSE_TOO_LARGE}, with the members {@code originalStatus}, and where
   *     known {@code originalBodyBytes} and {@code originalLocation}
   */
  public static Entry responseTooLarge(StoredResponse stored) {
    long bytes = stored.answeredBodyLength();
    String location = stored.header("Location");
    Map<String, Object> members = new LinkedHashMap<>();
    members.put("originalStatus", stored.status());
    if (bytes >= 0) {
      members.put("originalBodyBytes", bytes);
    }
    if (location != null) {
      members.put("originalLocation", location);
    }
    return new Entry(RESPONSE_TOO_LARGE, "The stored response is too large to replay", 422,
        "the request with this Idempotency-Key was already processed and answered with status " + stored.status()
            + (bytes >= 0 ? " and a body of " + bytes + " bytes" : "") + ", too large to be stored for replays;"
            + " it is not run again, and its answer cannot be sent again, so do not resend this key"
            + (location != null ? ": the answer's Location was " + location : ": look its result up another way"),
        members);
  }

  /**
   * @param originalStatus the status the operation answered the first time
   * @return 422 {@value #RESPONSE_TOO_LARGE} for a method call whose answer was too large to store,
   *     with the member {@code originalStatus}
   */
  public static Entry responseNotStored(int originalStatus) {
    return new Entry(RESPONSE_TOO_LARGE, "The stored response is too large to replay", 422,
        "the operation of this idempotency key already ran and answered with status " + originalStatus
            + ", but its answer was too large to store; it is not run again: look the result up another way",
        Map.of("originalStatus", originalStatus));
  }

  /**
   * The one mapping from an engine's result to Idem's answer, for a result that is not the
   * handler's own answer.
   *
   * @param result a result of kind {@code KEY_REUSED}, {@code IN_PROGRESS}, {@code
   *     OUTCOME_UNKNOWN}, {@code ROLLED_BACK}, {@code REQUEST_FAILED}, {@code
   *     STORED_RESPONSE_UNREADABLE} or {@code STORE_UNAVAILABLE}
   * @param inProgressSeconds the {@code Retry-After} of an in-progress answer from the rest of the
   *     owner's lease (an integration bounds it, see {@link #retryAfterSeconds})
   * @return the problem and its {@code Retry-After}, never {@code null}
   * @throws IllegalArgumentException if the result is an answer ({@code EXECUTED}, {@code
   *     RELEASED}, {@code REPLAYED}), which has no problem
   */
  public static Answer forResult(AttemptResult result, ToLongFunction<Duration> inProgressSeconds) {
    switch (result.kind()) {
      case KEY_REUSED:
        return plain(keyReused());
      case IN_PROGRESS: {
        long seconds = inProgressSeconds.applyAsLong(result.retryAfter());
        return new Answer(inProgress(seconds), OptionalLong.of(seconds));
      }
      case OUTCOME_UNKNOWN: {
        long seconds = Math.max(1, result.retryAfter().toSeconds());
        return new Answer(outcomeUnknown(seconds, phaseOf(result)), OptionalLong.of(seconds));
      }
      case REQUEST_FAILED:
        return plain(requestFailed());
      case ROLLED_BACK:
        return plain(notCommitted());
      case STORED_RESPONSE_UNREADABLE:
        return plain(storedResponseUnreadable());
      case STORE_UNAVAILABLE:
        return plain(storeUnavailable());
      default:
        throw new IllegalArgumentException("a " + result.kind() + " result is an answer, not a problem");
    }
  }

  /**
   * @return the phase of an {@code OUTCOME_UNKNOWN} result: its exception's, or {@code COMPLETION}
   *     for a lease taken over before the completion
   */
  public static OutcomeUnknownException.Phase phaseOf(AttemptResult result) {
    return result.failure().filter(OutcomeUnknownException.class::isInstance).map(OutcomeUnknownException.class::cast)
        .map(OutcomeUnknownException::phase).orElse(OutcomeUnknownException.Phase.COMPLETION);
  }

  /**
   * The {@code Retry-After} value (RFC 9110 section 10.2.3: a whole number of seconds) of a 409 "in
   * progress" answer: the time left on the first attempt's lease, rounded up to whole seconds, then
   * bounded to at least 1 and at most {@code max}.
   *
   * @param leaseRemaining the rest of the first attempt's lease; {@code null} or negative counts as zero
   * @param max the cap, at least 1 second, never {@code null}
   * @return seconds, from 1 to {@code max.toSeconds()}
   */
  public static long retryAfterSeconds(@Nullable Duration leaseRemaining, Duration max) {
    long millis = leaseRemaining == null || leaseRemaining.isNegative() ? 0 : saturatedMillis(leaseRemaining);
    long seconds = millis / 1000 + (millis % 1000 == 0 ? 0 : 1);
    return Math.max(1, Math.min(seconds, max.toSeconds()));
  }

  private static long saturatedMillis(Duration d) {
    try {
      return d.toMillis();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  /** @return {@code problem} without a {@code Retry-After} field */
  public static Answer plain(Entry problem) {
    return new Answer(problem, OptionalLong.empty());
  }

  private static Entry entry(String name, String title, int status, String detail) {
    return new Entry(name, title, status, detail, Map.of());
  }

  /** @return "1 second" or "N seconds" */
  static String seconds(long seconds) {
    return seconds == 1 ? "1 second" : seconds + " seconds";
  }
}
