package dev.idem.client;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * When and how often {@link IdempotentHttpClient} retries one operation. Immutable and thread-safe.
 *
 * <ul>
 *   <li>Bounds: at most {@link #maxAttempts()} attempts and {@link #maxDuration()} in all, counted
 *       from the first attempt; no attempt starts after that deadline.
 *   <li>Backoff: exponential with full jitter: before retry {@code n} (1-based) the client waits a
 *       uniformly random time in {@code [0, min(maxDelay, baseDelay * 2^(n-1))]}. A {@code
 *       Retry-After} from the server (RFC 9110 section 10.2.3) replaces the backoff.
 *   <li>Retried, because the outcome is unknown and the same request may succeed later: I/O errors,
 *       timeouts and lost responses (a connection reset after the request was sent included); the
 *       statuses of {@link #RETRIED_STATUSES}: 408 Request Timeout (RFC 9110 section 15.5.9), 409
 *       Conflict, with or without {@code Retry-After} (draft-ietf-httpapi-idempotency-key-header
 *       section 2.7: a request with the same key is still being processed; the draft, like Stripe,
 *       does not require {@code Retry-After}), 425 Too Early (RFC 8470 section 5.2), 429 (RFC 6585
 *       section 4), 502, 503 and 504 (RFC 9110 sections 15.6.3 to 15.6.5).
 *   <li>Final whatever its status: an answer the server marks as replayed from its store ({@code
 *       Idempotent-Replayed: true}), since every retry would get the same answer again; for example
 *       a 409 "email already registered" that the application answered the first time and the
 *       server stored.
 *   <li>Rejected: a 422 whose body is an RFC 9457 problem ({@code application/problem+json}) whose
 *       {@code type} is one of {@link #keyReusedProblemTypes()} (by default Idem's, {@value
 *       #IDEM_KEY_REUSED_PROBLEM_TYPE}): the key was used with another request, {@link
 *       dev.idem.core.IdempotencyKeyReusedException}.
 *   <li>Final: every other status, a 422 that is not that problem included (for example a
 *       validation error {@code {"errors":{"email":["is invalid"]}}}): it is the server's answer.
 * </ul>
 *
 * <p>When the bounds run out on a retried failure, the outcome is unknown ({@link
 * dev.idem.core.OutcomeUnknownException}); it is never reported as a final answer.
 */
public final class ClientRetryPolicy {

  /**
   * Statuses retried (unless the answer is marked {@code Idempotent-Replayed: true}): 408, 409,
   * 425, 429, 502, 503, 504. Each says that this attempt was not carried out to a final answer, so
   * that the outcome of the operation is still unknown.
   */
  public static final Set<Integer> RETRIED_STATUSES = Set.of(408, 409, 425, 429, 502, 503, 504);

  /**
   * The problem type URI (RFC 9457 section 3.1.1) with which an Idem server (the servlet filter with
   * its default problem type base, {@code urn:idem:problem:}) answers 422 for a key reused
   * with another request: {@value}. The default of {@link Builder#keyReusedProblemTypes}.
   */
  public static final String IDEM_KEY_REUSED_PROBLEM_TYPE = "urn:idem:problem:idempotency-key-reused";

  /** The media type of RFC 9457 section 3 for JSON problem details. */
  static final String PROBLEM_JSON = "application/problem+json";

  /** A problem body longer than this is not read for its type: no server sends one that long. */
  private static final int MAX_PROBLEM_BYTES = 64 * 1024;

  private static final JsonFactory JSON = JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).maxStringLength(MAX_PROBLEM_BYTES).build())
      .build();

  private final int maxAttempts;
  private final Duration maxDuration;
  private final Duration baseDelay;
  private final Duration maxDelay;
  private final Duration attemptTimeout;
  private final Set<String> keyReusedProblemTypes;

  private ClientRetryPolicy(Builder b) {
    this.maxAttempts = b.maxAttempts;
    this.maxDuration = b.maxDuration;
    this.baseDelay = b.baseDelay;
    this.maxDelay = b.maxDelay;
    this.attemptTimeout = b.attemptTimeout;
    this.keyReusedProblemTypes = Set.copyOf(b.keyReusedProblemTypes);
  }

  /**
   * @return a builder with 4 attempts, 30 s in all, delays from 100 ms up to 5 s, 10 s per attempt,
   *     and {@value #IDEM_KEY_REUSED_PROBLEM_TYPE} as the only key-reused problem type
   */
  public static Builder builder() {
    return new Builder();
  }

  /** @return the default policy of {@link #builder()} */
  public static ClientRetryPolicy defaults() {
    return builder().build();
  }

  /** @return the most attempts, first one included */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** @return the most time for all attempts and waits together */
  public Duration maxDuration() {
    return maxDuration;
  }

  /** @return the backoff before the first retry, before jitter */
  public Duration baseDelay() {
    return baseDelay;
  }

  /** @return the cap of the backoff, before jitter */
  public Duration maxDelay() {
    return maxDelay;
  }

  /** @return how long one attempt may take before it counts as timed out */
  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  /**
   * @return the problem type URIs that mark a 422 as "key reused with another request"; unmodifiable,
   *     never {@code null}, empty when no 422 is ever read as one
   */
  public Set<String> keyReusedProblemTypes() {
    return keyReusedProblemTypes;
  }

  /**
   * The full-jitter backoff before retry {@code retry}.
   *
   * @param retry the retry number, 1 for the wait after the first attempt
   * @param random a uniform random number in {@code [0, 1)}
   * @return a delay in {@code [0, min(maxDelay, baseDelay * 2^(retry-1))]}
   * @throws IllegalArgumentException if {@code retry < 1} or {@code random} is outside {@code [0, 1)}
   */
  public Duration backoff(int retry, double random) {
    if (retry < 1) {
      throw new IllegalArgumentException("retry must be at least 1, was " + retry);
    }
    if (!(random >= 0 && random < 1)) {
      throw new IllegalArgumentException("random must be in [0, 1), was " + random);
    }
    long base = baseDelay.toNanos();
    long ceiling = maxDelay.toNanos();
    int shift = Math.min(retry - 1, 62);
    long exponential = base > (ceiling >> shift) ? ceiling : Math.min(ceiling, base << shift);
    return Duration.ofNanos((long) (exponential * random));
  }

  /**
   * Whether an answer leaves the outcome unknown, so that another attempt with the same key is
   * worth making (see the class description).
   *
   * @param status an HTTP status
   * @param replayed whether the server marked the answer as replayed from its store ({@code
   *     Idempotent-Replayed: true}); such an answer is final whatever its status
   * @return {@code true} for a status of {@link #RETRIED_STATUSES} that is not a replay
   */
  public static boolean isRetryableAnswer(int status, boolean replayed) {
    return !replayed && RETRIED_STATUSES.contains(status);
  }

  /**
   * Whether an answer is the server's "idempotency key reused with another request" (draft-ietf-
   * httpapi-idempotency-key-header section 2.7): status 422, media type {@code
   * application/problem+json} (parameters ignored, RFC 9457 section 3), and a top-level {@code type}
   * member equal, character for character, to one of {@link #keyReusedProblemTypes()}. Any other 422
   * (a validation error, another problem type, a problem without a type, which RFC 9457 reads as
   * {@code about:blank}) is not. Never throws: a body that is not JSON, or longer than 64 KiB, is
   * not the problem.
   *
   * @param status the answer's status
   * @param contentType the answer's {@code Content-Type} field value, may be {@code null}
   * @param body the answer's body bytes, never {@code null}
   * @return whether the answer says the key was reused
   */
  public boolean isKeyReused(int status, @Nullable String contentType, byte[] body) {
    if (status != 422 || keyReusedProblemTypes.isEmpty() || !isProblemJson(contentType)) {
      return false;
    }
    return problemMember(body, "type").filter(keyReusedProblemTypes::contains).isPresent();
  }

  /** Whether a Content-Type field value names {@code application/problem+json}, parameters aside. */
  static boolean isProblemJson(@Nullable String contentType) {
    if (contentType == null) {
      return false;
    }
    int semicolon = contentType.indexOf(';');
    String mediaType = (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).trim().toLowerCase(Locale.ROOT);
    return mediaType.equals(PROBLEM_JSON);
  }

  /**
   * A top-level string member of a JSON object, for example a problem's {@code type} or {@code
   * detail}.
   *
   * @return the member's value; empty when the body is not a JSON object, is longer than 64 KiB, or
   *     has no such string member
   */
  static Optional<String> problemMember(byte[] body, String name) {
    if (body.length == 0 || body.length > MAX_PROBLEM_BYTES) {
      return Optional.empty();
    }
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return Optional.empty();
      }
      String found = null;
      for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        if (field.equals(name) && value == JsonToken.VALUE_STRING) {
          found = p.getText();
        } else if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
          p.skipChildren();
        }
      }
      return Optional.ofNullable(found);
    } catch (IOException e) {
      return Optional.empty(); // not JSON: not a problem document
    }
  }

  @Override
  public String toString() {
    return "ClientRetryPolicy[maxAttempts=" + maxAttempts + ", maxDuration=" + maxDuration + ", baseDelay=" + baseDelay
        + ", maxDelay=" + maxDelay + ", attemptTimeout=" + attemptTimeout + ", keyReusedProblemTypes=" + keyReusedProblemTypes + "]";
  }

  /** Builds a {@link ClientRetryPolicy}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private int maxAttempts = 4;
    private Duration maxDuration = Duration.ofSeconds(30);
    private Duration baseDelay = Duration.ofMillis(100);
    private Duration maxDelay = Duration.ofSeconds(5);
    private Duration attemptTimeout = Duration.ofSeconds(10);
    private Set<String> keyReusedProblemTypes = Set.of(IDEM_KEY_REUSED_PROBLEM_TYPE);

    private Builder() {}

    /** @param maxAttempts 1 to 100, the first attempt included */
    public Builder maxAttempts(int maxAttempts) {
      if (maxAttempts < 1 || maxAttempts > 100) {
        throw new IllegalArgumentException("maxAttempts must be between 1 and 100, was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** @param maxDuration positive, at most 24 hours */
    public Builder maxDuration(Duration maxDuration) {
      this.maxDuration = positive("maxDuration", maxDuration, Duration.ofHours(24));
      return this;
    }

    /** @param baseDelay positive, at most 1 hour */
    public Builder baseDelay(Duration baseDelay) {
      this.baseDelay = positive("baseDelay", baseDelay, Duration.ofHours(1));
      return this;
    }

    /** @param maxDelay positive, at most 1 hour; checked against baseDelay by {@link #build()} */
    public Builder maxDelay(Duration maxDelay) {
      this.maxDelay = positive("maxDelay", maxDelay, Duration.ofHours(1));
      return this;
    }

    /** @param attemptTimeout positive, at most 1 hour */
    public Builder attemptTimeout(Duration attemptTimeout) {
      this.attemptTimeout = positive("attemptTimeout", attemptTimeout, Duration.ofHours(1));
      return this;
    }

    /**
     * Sets the problem type URIs with which the servers this client talks to answer 422 for a key
     * reused with another request (see {@link ClientRetryPolicy#isKeyReused}). Replaces the
     * default, {@value ClientRetryPolicy#IDEM_KEY_REUSED_PROBLEM_TYPE}: an Idem server configured
     * with {@code problemTypeBase(URI.create("https://api.example.com/problems/"))} answers with
     * {@code https://api.example.com/problems/idempotency-key-reused}; include the default too if
     * the client also talks to servers with Idem's default. An empty collection makes every 422 a
     * final answer (for servers whose key-reused problem has no type, that is {@code about:blank}).
     *
     * @param types absolute URIs (with a scheme), compared character for character with the
     *     problem's {@code type}; never {@code null}, no {@code null} element
     * @return this builder
     * @throws IllegalArgumentException if a type is not an absolute URI
     */
    public Builder keyReusedProblemTypes(Collection<String> types) {
      Objects.requireNonNull(types, "types");
      Set<String> copy = new LinkedHashSet<>();
      for (String type : types) {
        Objects.requireNonNull(type, "a problem type is null");
        try {
          if (!new URI(type).isAbsolute()) {
            throw new IllegalArgumentException("a problem type must be an absolute URI, was '" + type + "'");
          }
        } catch (URISyntaxException e) {
          throw new IllegalArgumentException("not a URI: '" + type + "': " + e.getMessage(), e);
        }
        copy.add(type);
      }
      this.keyReusedProblemTypes = copy;
      return this;
    }

    /**
     * @return the policy
     * @throws IllegalArgumentException if maxDelay is shorter than baseDelay
     */
    public ClientRetryPolicy build() {
      if (maxDelay.compareTo(baseDelay) < 0) {
        throw new IllegalArgumentException("maxDelay (" + maxDelay + ") must not be shorter than baseDelay (" + baseDelay + ")");
      }
      return new ClientRetryPolicy(this);
    }

    private static Duration positive(String name, Duration d, Duration max) {
      Objects.requireNonNull(d, name);
      if (d.isZero() || d.isNegative() || d.compareTo(max) > 0) {
        throw new IllegalArgumentException(name + " must be positive and at most " + max + ", was " + d);
      }
      return d;
    }
  }
}
