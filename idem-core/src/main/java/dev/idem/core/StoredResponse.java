package dev.idem.core;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the first execution of an operation answered, kept so that a repeated request gets it back
 * verbatim (a <em>replay</em>).
 *
 * <p>Shape: a status code (for HTTP the response status, 100 to 599; other callers may use 200 for
 * success), an ordered multimap of header fields, and the body bytes. Header names keep the case
 * they were given in; lookups by {@link #header(String)} ignore case, as HTTP field names are
 * case-insensitive (RFC 9110 section 5.1). Which headers are worth storing is the integration's
 * choice: an HTTP layer stores an allowlist and never stores {@code Set-Cookie} or {@code
 * Authorization}.
 *
 * <p>A stored response either holds the body the first execution answered, or stands for an
 * answer whose body was too large to keep ({@link Builder#bodyNotStored(long)}): then it holds the
 * status and header fields of that answer, no body, and the field {@value #BODY_NOT_STORED_HEADER}
 * with the length of the body that was sent. Such a record keeps the key completed, so the effect
 * never runs again, but it cannot be replayed: an integration answers a repetition with an error
 * that says so (see {@link #bodyStored()}).
 *
 * <p>Immutable and thread-safe: the body is copied in and out.
 */
public final class StoredResponse {

  /**
   * The header field that marks a response whose body was not stored ({@link
   * Builder#bodyNotStored(long)}); its value is the length of the body that was sent, in bytes, as
   * decimal digits. Only Idem writes it: HTTP integrations never store a field of this name that a
   * handler set.
   */
  public static final String BODY_NOT_STORED_HEADER = "Idem-Body-Not-Stored";

  /**
   * The prefix of the header fields that keep, with a stored answer, the trace context of the
   * attempt that made it ({@link #traceContext()}): {@code Idem-Trace-traceparent} for the W3C
   * {@code traceparent} field, and so on. Only Idem writes them: HTTP integrations never store
   * a field with this prefix that a handler set, and never replay one ({@code
   * dev.idem.core.http.HeaderRules}).
   */
  public static final String TRACE_CONTEXT_HEADER_PREFIX = "Idem-Trace-";

  private final int status;
  private final Map<String, List<String>> headers;
  private final byte[] body;

  private StoredResponse(int status, Map<String, List<String>> headers, byte[] body) {
    this.status = status;
    this.headers = headers;
    this.body = body;
  }

  /**
   * A response with no headers.
   *
   * @param status 100 to 599
   * @param body the body bytes, copied; never {@code null} (use an empty array)
   * @throws IllegalArgumentException if {@code status} is outside 100..599
   * @throws NullPointerException if {@code body} is {@code null}
   */
  public static StoredResponse of(int status, byte[] body) {
    return builder(status).body(body).build();
  }

  /**
   * A response with no headers whose body is {@code body} encoded as UTF-8.
   *
   * @throws IllegalArgumentException if {@code status} is outside 100..599
   * @throws NullPointerException if {@code body} is {@code null}
   */
  public static StoredResponse of(int status, String body) {
    return of(status, body.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Starts a builder. Builders are not thread-safe; the responses they build are.
   *
   * @param status 100 to 599
   * @throws IllegalArgumentException if {@code status} is outside 100..599
   */
  public static Builder builder(int status) {
    return new Builder(status);
  }

  /** @return the status code, 100 to 599 */
  public int status() {
    return status;
  }

  /**
   * @return the header fields in insertion order, name to values; unmodifiable, never {@code null}
   */
  public Map<String, List<String>> headers() {
    return headers;
  }

  /**
   * The first value of a header field, matched case-insensitively.
   *
   * @param name the field name, never {@code null}
   * @return the first value, or {@code null} when the response has no such field
   */
  public @Nullable String header(String name) {
    for (Map.Entry<String, List<String>> e : headers.entrySet()) {
      if (e.getKey().equalsIgnoreCase(name) && !e.getValue().isEmpty()) {
        return e.getValue().get(0);
      }
    }
    return null;
  }

  /** @return a copy of the body bytes, never {@code null} */
  public byte[] body() {
    return body.clone();
  }

  /** @return the body length in bytes, without copying it; 0 when {@link #bodyStored()} is false */
  public int bodyLength() {
    return body.length;
  }

  /**
   * Whether this response holds the body it answered with, so that it can be replayed verbatim.
   *
   * @return {@code false} for a response built with {@link Builder#bodyNotStored(long)} (it has the
   *     field {@value #BODY_NOT_STORED_HEADER}): the answer was sent once, its body was too large to
   *     keep, and a repetition must be refused rather than answered with an empty body or run again
   */
  public boolean bodyStored() {
    return header(BODY_NOT_STORED_HEADER) == null;
  }

  /**
   * @return the length in bytes of the body the first execution answered with: {@link
   *     #bodyLength()} when {@link #bodyStored()}, otherwise the length recorded by {@link
   *     Builder#bodyNotStored(long)}, or -1 if that record is not a decimal number
   */
  public long answeredBodyLength() {
    String recorded = header(BODY_NOT_STORED_HEADER);
    if (recorded == null) {
      return body.length;
    }
    try {
      long n = Long.parseLong(recorded.trim());
      return n < 0 ? -1 : n;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * The trace context of the attempt that made this answer, kept with the key's record so that a
   * replay can point at the first attempt's trace (the W3C Trace Context fields {@code traceparent}
   * and {@code tracestate}, or whatever fields the application's propagation format uses).
   *
   * @return field name (lower case, without {@value #TRACE_CONTEXT_HEADER_PREFIX}) to its first
   *     value, in the stored order; empty when the record keeps none (it was stored without tracing,
   *     or by an earlier Idem version, which did not keep it); unmodifiable, never {@code null}
   */
  public Map<String, String> traceContext() {
    Map<String, String> context = new LinkedHashMap<>();
    for (Map.Entry<String, List<String>> e : headers.entrySet()) {
      String name = e.getKey();
      if (isTraceContextField(name) && !e.getValue().isEmpty() && name.length() > TRACE_CONTEXT_HEADER_PREFIX.length()) {
        context.putIfAbsent(name.substring(TRACE_CONTEXT_HEADER_PREFIX.length()).toLowerCase(Locale.ROOT), e.getValue().get(0));
      }
    }
    return Collections.unmodifiableMap(context);
  }

  /**
   * A copy of this response that keeps {@code context} as its {@link #traceContext()}, in place
   * of any it kept before.
   *
   * @param context field name to value, such as {@code traceparent} to {@code
   *     00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01}; never {@code null}, may be empty
   * @return the copy, or this response when {@code context} is empty and it keeps none
   * @throws NullPointerException if {@code context} or one of its names or values is {@code null}
   * @throws IllegalArgumentException if a name or value could not be a header field's ({@link
   *     Builder#header})
   */
  public StoredResponse withTraceContext(Map<String, String> context) {
    Objects.requireNonNull(context, "context");
    if (context.isEmpty() && traceContext().isEmpty()) {
      return this;
    }
    Builder copy = new Builder(status);
    headers.forEach((name, values) -> {
      if (!isTraceContextField(name)) {
        values.forEach(v -> copy.header(name, v));
      }
    });
    context.forEach((name, value) -> copy.header(TRACE_CONTEXT_HEADER_PREFIX + name.toLowerCase(Locale.ROOT), value));
    copy.body = body;
    return copy.build();
  }

  private static boolean isTraceContextField(String name) {
    return name.regionMatches(true, 0, TRACE_CONTEXT_HEADER_PREFIX, 0, TRACE_CONTEXT_HEADER_PREFIX.length());
  }

  /** @return the body decoded as UTF-8 (malformed input replaced), never {@code null} */
  public String bodyAsString() {
    return new String(body, StandardCharsets.UTF_8);
  }

  @Override
  public boolean equals(@Nullable Object o) {
    if (!(o instanceof StoredResponse)) {
      return false;
    }
    StoredResponse other = (StoredResponse) o;
    return status == other.status
        && headers.equals(other.headers)
        && Arrays.equals(body, other.body);
  }

  @Override
  public int hashCode() {
    return Objects.hash(status, headers) * 31 + Arrays.hashCode(body);
  }

  @Override
  public String toString() {
    return "StoredResponse[status=" + status + ", headers=" + headers + ", body=" + body.length + " bytes]";
  }

  /** The longest header name or value a stored response keeps, in characters: 16 384. */
  public static final int MAX_HEADER_LENGTH = 16_384;

  /** Builds a {@link StoredResponse}. Not thread-safe; validates each call eagerly. */
  public static final class Builder {
    private final int status;
    private final Map<String, List<String>> headers = new LinkedHashMap<>();
    private byte[] body = new byte[0];

    private Builder(int status) {
      if (status < 100 || status > 599) {
        throw new IllegalArgumentException("status must be between 100 and 599, was " + status);
      }
      this.status = status;
    }

    /**
     * Adds one header field value. A name given twice (in any case) collects both values under the
     * first spelling.
     *
     * @param name a non-empty field name without control characters or ':', at most {@value
     *     #MAX_HEADER_LENGTH} characters
     * @param value the field value, without CR, LF or NUL (RFC 9110 section 5.5), at most {@value
     *     #MAX_HEADER_LENGTH} characters
     * @throws NullPointerException if either argument is {@code null}
     * @throws IllegalArgumentException if the name or the value is malformed
     */
    public Builder header(String name, String value) {
      Objects.requireNonNull(name, "header name");
      Objects.requireNonNull(value, "header value");
      if (name.isEmpty()) {
        throw new IllegalArgumentException("header name must not be empty");
      }
      if (name.length() > MAX_HEADER_LENGTH || value.length() > MAX_HEADER_LENGTH) {
        throw new IllegalArgumentException(
            "header " + (name.length() > 64 ? name.substring(0, 64) + "..." : name)
                + " is longer than " + MAX_HEADER_LENGTH + " characters");
      }
      for (int i = 0; i < name.length(); i++) {
        char c = name.charAt(i);
        if (c <= 0x20 || c >= 0x7F || c == ':') {
          throw new IllegalArgumentException("header name contains an invalid character: " + name);
        }
      }
      for (int i = 0; i < value.length(); i++) {
        char c = value.charAt(i);
        if (c == '\r' || c == '\n' || c == 0) {
          throw new IllegalArgumentException("header value of " + name + " contains CR, LF or NUL");
        }
      }
      String key = name;
      for (String existing : headers.keySet()) {
        if (existing.equalsIgnoreCase(name)) {
          key = existing;
          break;
        }
      }
      headers.computeIfAbsent(key, k -> new ArrayList<>(1)).add(value);
      return this;
    }

    /**
     * Sets the body.
     *
     * @param body the bytes, copied; never {@code null}
     * @throws NullPointerException if {@code body} is {@code null}
     */
    public Builder body(byte[] body) {
      this.body = Objects.requireNonNull(body, "body").clone();
      return this;
    }

    /** Sets the body to {@code body} encoded as UTF-8. */
    public Builder body(String body) {
      return body(Objects.requireNonNull(body, "body").getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Makes this the record of an answer whose body was sent but is too large to keep: empties the
     * body and sets {@value #BODY_NOT_STORED_HEADER} to {@code answeredBytes}. The status and the
     * other header fields describe the answer that was sent, so a {@link ResponsePolicy} decides
     * about it as about the full answer. Storing it keeps the key completed: a repetition runs
     * nothing and is refused ({@link #bodyStored()} is {@code false}).
     *
     * @param answeredBytes the length of the body that was sent, 0 or more
     * @return this builder
     * @throws IllegalArgumentException if {@code answeredBytes} is negative
     */
    public Builder bodyNotStored(long answeredBytes) {
      if (answeredBytes < 0) {
        throw new IllegalArgumentException("answeredBytes must not be negative, was " + answeredBytes);
      }
      this.body = new byte[0];
      headers.keySet().removeIf(name -> name.equalsIgnoreCase(BODY_NOT_STORED_HEADER));
      return header(BODY_NOT_STORED_HEADER, Long.toString(answeredBytes));
    }

    /** @return a new immutable response */
    public StoredResponse build() {
      Map<String, List<String>> copy = new LinkedHashMap<>();
      headers.forEach((k, v) -> copy.put(k, List.copyOf(v)));
      return new StoredResponse(status, Collections.unmodifiableMap(copy), body);
    }
  }
}
