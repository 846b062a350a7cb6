package dev.idem.outbox;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * One outgoing message or call that an effect records in the outbox: a RabbitMQ publish, a
 * JetStream publish, a Kafka record or an HTTP request. The relay delivers it later, at least once, with the
 * intent's deterministic id (see {@link IntentId}) as the message id or idempotency key.
 *
 * <p>Shapes: {@link #target()} is the exchange ({@link Kind#RABBITMQ}, may be {@code ""} for the
 * default exchange), the subject ({@link Kind#JETSTREAM}), the topic ({@link Kind#KAFKA}) or the
 * absolute URI ({@link Kind#HTTP}); {@link #route()} is the routing key (RabbitMQ), the record key
 * that orders an aggregate's records (Kafka, {@code null} when the intent's id is the record key)
 * or the method (HTTP), {@code null} for JetStream. Headers become AMQP message headers, NATS
 * headers, Kafka record headers or HTTP request headers; names are HTTP tokens,
 * values printable without CR, LF or NUL. The body is bytes, copied in and out.
 *
 * <p>Immutable and thread-safe; {@link #withHeader} returns a new instance.
 */
public final class Intent {

  /** Where an intent goes, and so which transport of the relay delivers it. */
  public enum Kind {
    /** A message published to a RabbitMQ exchange with a routing key. */
    RABBITMQ,
    /** A message published to a NATS JetStream subject. */
    JETSTREAM,
    /** A record produced to a Kafka topic. */
    KAFKA,
    /** An HTTP request sent with {@code idem-client}. */
    HTTP
  }

  /** The longest target accepted, in characters: 2000. */
  public static final int MAX_TARGET_LENGTH = 2000;
  /** The longest route accepted, in characters: 255 (the AMQP limit on a routing key). */
  public static final int MAX_ROUTE_LENGTH = 255;

  private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,200}");
  private static final Pattern SUBJECT = Pattern.compile("[^\\s*>]+(\\.[^\\s*>]+)*");
  private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9._-]{1,249}");
  private static final Pattern METHOD = Pattern.compile("[A-Z]{1,16}");

  private final Kind kind;
  private final String target;
  private final @Nullable String route;
  private final List<Map.Entry<String, String>> headers;
  private final byte[] body;

  private Intent(Kind kind, String target, @Nullable String route, List<Map.Entry<String, String>> headers, byte[] body) {
    this.kind = kind;
    this.target = target;
    this.route = route;
    this.headers = List.copyOf(headers);
    this.body = body;
  }

  /**
   * A persistent RabbitMQ message.
   *
   * @param exchange the exchange, {@code ""} for the default exchange (then the routing key is the
   *     queue); at most 255 characters
   * @param routingKey the routing key, at most {@value #MAX_ROUTE_LENGTH} characters, may be empty
   * @param body the message body, copied
   * @throws IllegalArgumentException if a name is too long
   */
  public static Intent rabbitMq(String exchange, String routingKey, byte[] body) {
    Objects.requireNonNull(exchange, "exchange");
    Objects.requireNonNull(routingKey, "routingKey");
    if (exchange.length() > 255) {
      throw new IllegalArgumentException("exchange name longer than 255 characters");
    }
    checkRoute(routingKey);
    return new Intent(Kind.RABBITMQ, exchange, routingKey, List.of(), body(body));
  }

  /**
   * A message published to a JetStream subject; the stream that captures the subject must exist.
   *
   * @param subject a NATS subject without wildcards or white space, for example {@code orders.created}
   * @param body the message body, copied
   * @throws IllegalArgumentException if the subject is not a publishable subject
   */
  public static Intent jetStream(String subject, byte[] body) {
    Objects.requireNonNull(subject, "subject");
    if (!SUBJECT.matcher(subject).matches() || subject.length() > MAX_TARGET_LENGTH) {
      throw new IllegalArgumentException("not a publishable NATS subject: '" + subject + "'");
    }
    return new Intent(Kind.JETSTREAM, subject, null, List.of(), body(body));
  }

  /**
   * A record produced to a Kafka topic, with the intent's id as its record key (and in its {@code
   * message-id} header): records spread over the topic's partitions, in no order relative to each
   * other. Use {@link #kafka(String, String, byte[])} when an aggregate's records must stay in order.
   *
   * @param topic the topic: 1 to 249 of {@code [A-Za-z0-9._-]}; it must exist when the relay
   *     delivers (a missing topic is retried, then the intent ends dead)
   * @param body the record's value, copied
   * @throws IllegalArgumentException if the topic is not a legal Kafka topic name
   */
  public static Intent kafka(String topic, byte[] body) {
    return new Intent(Kind.KAFKA, checkTopic(topic), null, List.of(), body(body));
  }

  /**
   * A record produced to a Kafka topic with the caller's record key, so that all the records of
   * one aggregate (an order id, an account) go to one partition, where consumers read them in the
   * order the relay produced them. The intent's id still travels in the {@code message-id} header,
   * the idempotency key of the consumer.
   *
   * @param topic the topic, as for {@link #kafka(String, byte[])}
   * @param recordKey the record key, 1 to {@value #MAX_ROUTE_LENGTH} characters, sent as UTF-8
   * @param body the record's value, copied
   * @throws IllegalArgumentException if the topic is not a legal topic name or the key is empty or
   *     too long
   */
  public static Intent kafka(String topic, String recordKey, byte[] body) {
    Objects.requireNonNull(recordKey, "recordKey");
    if (recordKey.isEmpty()) {
      throw new IllegalArgumentException("record key must not be empty; use Intent.kafka(topic, body) for none");
    }
    checkRoute(recordKey);
    return new Intent(Kind.KAFKA, checkTopic(topic), recordKey, List.of(), body(body));
  }

  private static String checkTopic(String topic) {
    Objects.requireNonNull(topic, "topic");
    if (!TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
      throw new IllegalArgumentException("not a legal Kafka topic name (1 to 249 of [A-Za-z0-9._-]): '" + topic + "'");
    }
    return topic;
  }

  /**
   * An HTTP request sent with {@code idem-client}; the intent's id travels as its {@code
   * Idempotency-Key}.
   *
   * @param method an upper-case method, for example {@code POST}
   * @param uri an absolute {@code http} or {@code https} URI, at most {@value #MAX_TARGET_LENGTH}
   *     characters
   * @param body the request body, copied; empty for none
   * @throws IllegalArgumentException if the method or URI is not acceptable
   */
  public static Intent http(String method, URI uri, byte[] body) {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(uri, "uri");
    if (!METHOD.matcher(method).matches()) {
      throw new IllegalArgumentException("HTTP method must be upper-case letters, was '" + method + "'");
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!uri.isAbsolute() || !(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
      throw new IllegalArgumentException("HTTP intent needs an absolute http(s) URI, was '" + uri + "'");
    }
    String target = uri.toString();
    if (target.length() > MAX_TARGET_LENGTH) {
      throw new IllegalArgumentException("URI longer than " + MAX_TARGET_LENGTH + " characters");
    }
    return new Intent(Kind.HTTP, target, method, List.of(), body(body));
  }

  /**
   * Restores an intent read from the outbox table. Not for applications.
   */
  static Intent restore(Kind kind, String target, @Nullable String route, List<Map.Entry<String, String>> headers, byte[] body) {
    return new Intent(kind, target, route, headers, body);
  }

  /**
   * @param name an HTTP token (the AMQP, NATS and HTTP header rules all accept it), at most 200
   *     characters; {@code Idempotency-Key}, {@code Nats-Msg-Id} and {@code message-id} are refused
   *     because the relay sets the id itself
   * @param value printable text without CR, LF or NUL, at most 8000 characters
   * @return a copy of this intent with the header added (repeated names are kept in order)
   * @throws IllegalArgumentException if the name or value is not acceptable
   */
  public Intent withHeader(String name, String value) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(value, "value");
    if (!TOKEN.matcher(name).matches()) {
      throw new IllegalArgumentException("header name must be an HTTP token, was '" + name + "'");
    }
    String lower = name.toLowerCase(Locale.ROOT);
    if (lower.equals("idempotency-key") || lower.equals("nats-msg-id") || lower.equals("message-id")) {
      throw new IllegalArgumentException("header " + name + " is set by the relay to the intent's id");
    }
    if (value.length() > 8000 || value.chars().anyMatch(c -> c == '\r' || c == '\n' || c == 0)) {
      throw new IllegalArgumentException("header value must be at most 8000 characters without CR, LF or NUL");
    }
    List<Map.Entry<String, String>> copy = new ArrayList<>(headers);
    copy.add(Map.entry(name, value));
    return new Intent(kind, target, route, copy, body);
  }

  /**
   * @param fields trace fields (lower-case names) to send instead of the stored ones of the same
   *     names, ignoring case; a field the intent does not carry is not added
   * @return a copy of this intent for one delivery ({@link OutboxRelay}), never stored
   */
  Intent withTraceFields(Map<String, String> fields) {
    if (fields.isEmpty()) {
      return this;
    }
    List<Map.Entry<String, String>> copy = new ArrayList<>(headers.size());
    for (Map.Entry<String, String> h : headers) {
      String replacement = fields.get(h.getKey().toLowerCase(Locale.ROOT));
      copy.add(replacement == null || replacement.chars().anyMatch(c -> c == '\r' || c == '\n' || c == 0)
          ? h : Map.entry(h.getKey(), replacement));
    }
    return new Intent(kind, target, route, copy, body);
  }

  /** @return where the intent goes */
  public Kind kind() {
    return kind;
  }

  /** @return the exchange, subject or URI (see the class description), never {@code null} */
  public String target() {
    return target;
  }

  /** @return the routing key (RabbitMQ), the record key (Kafka, when the caller gave one), the method (HTTP), or {@code null} */
  public @Nullable String route() {
    return route;
  }

  /** @return the headers in the order added, immutable, never {@code null} */
  public List<Map.Entry<String, String>> headers() {
    return headers;
  }

  /** @return a copy of the body */
  public byte[] body() {
    return body.clone();
  }

  /** @return the body's length in bytes */
  public int bodyLength() {
    return body.length;
  }

  byte[] bodyShared() {
    return body;
  }

  /** @return the headers as stored: {@code name: value} lines in UTF-8, or {@code null} for none */
  byte @Nullable [] encodedHeaders() {
    if (headers.isEmpty()) {
      return null;
    }
    StringBuilder sb = new StringBuilder();
    for (Map.Entry<String, String> h : headers) {
      sb.append(h.getKey()).append(": ").append(h.getValue()).append('\n');
    }
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  static List<Map.Entry<String, String>> decodeHeaders(byte[] encoded) {
    if (encoded == null || encoded.length == 0) {
      return List.of();
    }
    List<Map.Entry<String, String>> out = new ArrayList<>();
    for (String line : new String(encoded, StandardCharsets.UTF_8).split("\n")) {
      int colon = line.indexOf(": ");
      if (colon > 0) {
        out.add(Map.entry(line.substring(0, colon), line.substring(colon + 2)));
      }
    }
    return out;
  }

  private static void checkRoute(String route) {
    if (route.length() > MAX_ROUTE_LENGTH) {
      throw new IllegalArgumentException("routing key longer than " + MAX_ROUTE_LENGTH + " characters");
    }
  }

  private static byte[] body(byte[] body) {
    return Objects.requireNonNull(body, "body").clone();
  }

  @Override
  public boolean equals(@Nullable Object o) {
    if (!(o instanceof Intent)) {
      return false;
    }
    Intent other = (Intent) o;
    return kind == other.kind && target.equals(other.target) && Objects.equals(route, other.route)
        && headers.equals(other.headers) && Arrays.equals(body, other.body);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, target, route, headers, Arrays.hashCode(body));
  }

  @Override
  public String toString() {
    return kind + " " + target + (route == null ? "" : " " + route) + " (" + body.length + " bytes)";
  }
}
