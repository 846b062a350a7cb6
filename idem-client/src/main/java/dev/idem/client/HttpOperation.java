package dev.idem.client;

import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.IdempotencyKey;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * One logical operation to send over HTTP: method, URI, headers and body bytes, plus the
 * idempotency key when the caller has one. Every attempt of the operation sends exactly these
 * bytes and this key.
 *
 * <p>Without a key, {@link IdempotentHttpClient} generates one once, before the first attempt. A
 * key supplied here is never replaced. Immutable and thread-safe; the body is copied in and out.
 */
public final class HttpOperation {

  private final String method;
  private final URI uri;
  private final List<Map.Entry<String, String>> headers;
  private final byte[] body;
  private final @Nullable String key;

  private HttpOperation(Builder b) {
    this.method = b.method;
    this.uri = b.uri;
    this.headers = List.copyOf(b.headers);
    this.body = b.body.clone();
    this.key = b.key;
  }

  /**
   * A POST with a JSON body ({@code Content-Type: application/json}).
   *
   * @param uri the target, absolute http or https
   * @param json the JSON text, sent as UTF-8
   */
  public static HttpOperation postJson(URI uri, String json) {
    return builder("POST", uri).header("Content-Type", "application/json").body(json.getBytes(StandardCharsets.UTF_8)).build();
  }

  /**
   * @param method an HTTP method token, for example {@code POST}
   * @param uri the target, absolute http or https
   * @throws IllegalArgumentException if the method is not a token or the URI is not absolute http(s)
   */
  public static Builder builder(String method, URI uri) {
    return new Builder(method, uri);
  }

  /** @return the method, upper case as given */
  public String method() {
    return method;
  }

  /** @return the target URI */
  public URI uri() {
    return uri;
  }

  /** @return the headers in order, without {@code Idempotency-Key}; unmodifiable */
  public List<Map.Entry<String, String>> headers() {
    return headers;
  }

  /** @return a copy of the body bytes (empty for none), never {@code null} */
  public byte[] body() {
    return body.clone();
  }

  /** @return the caller's idempotency key, if one was supplied */
  public Optional<String> key() {
    return Optional.ofNullable(key);
  }

  /**
   * @param key the key to use, never {@code null}
   * @return the same operation with that key
   * @throws dev.idem.core.InvalidIdempotencyKeyException if the key is malformed
   */
  public HttpOperation withKey(String key) {
    Builder b = new Builder(method, uri);
    headers.forEach(h -> b.header(h.getKey(), h.getValue()));
    return b.body(body).idempotencyKey(key).build();
  }

  /**
   * As {@link #withKey(String)}, for a key already validated: to resume an operation whose outcome
   * is unknown, {@code operation.withKey(e.key())} with the key of a {@link
   * dev.idem.core.OutcomeUnknownException}.
   *
   * @param key the key to use, never {@code null}
   * @return the same operation with that key
   * @throws dev.idem.core.InvalidIdempotencyKeyException if the key is malformed
   */
  public HttpOperation withKey(IdempotencyKey key) {
    return withKey(key.value());
  }

  @Override
  public String toString() {
    return method + " " + uri + (key == null ? "" : " [Idempotency-Key " + key + "]") + " (" + body.length + " bytes)";
  }

  /** Builds an {@link HttpOperation}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final String method;
    private final URI uri;
    private final List<Map.Entry<String, String>> headers = new ArrayList<>();
    private byte[] body = new byte[0];
    private @Nullable String key;

    private Builder(String method, URI uri) {
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(uri, "uri");
      if (!method.matches("[A-Za-z]{1,20}")) {
        throw new IllegalArgumentException("not an HTTP method: " + method);
      }
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
      if (!uri.isAbsolute() || !(scheme.equals("http") || scheme.equals("https"))) {
        throw new IllegalArgumentException("the URI must be absolute http or https: " + uri);
      }
      this.method = method.toUpperCase(Locale.ROOT);
      this.uri = uri;
    }

    /**
     * Adds a header. {@code Idempotency-Key} is refused here: use {@link #idempotencyKey(String)}.
     *
     * @throws IllegalArgumentException if the name is empty or {@code Idempotency-Key}, or the value
     *     has CR or LF
     */
    public Builder header(String name, String value) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
      if (name.isBlank() || name.equalsIgnoreCase(IdempotencyHeaders.KEY)) {
        throw new IllegalArgumentException("invalid header name (set the key with idempotencyKey): " + name);
      }
      if (value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
        throw new IllegalArgumentException("header value contains CR or LF: " + name);
      }
      headers.add(Map.entry(name, value));
      return this;
    }

    /** @param body the body bytes, copied; never {@code null} */
    public Builder body(byte[] body) {
      this.body = Objects.requireNonNull(body, "body").clone();
      return this;
    }

    /**
     * @param key the caller's idempotency key, validated by {@link IdempotencyKey#of(String)}
     * @throws dev.idem.core.InvalidIdempotencyKeyException if malformed
     */
    public Builder idempotencyKey(String key) {
      this.key = IdempotencyKey.of(key).value();
      return this;
    }

    /** @return the immutable operation */
    public HttpOperation build() {
      return new HttpOperation(this);
    }
  }
}
