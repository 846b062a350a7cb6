package dev.idem.consumer;

import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * A message as a broker adapter hands it to an {@link IdempotentConsumer}.
 *
 * @param messageId the message's id (AMQP {@code message-id}, JetStream {@code Nats-Msg-Id}), or
 *     {@code null} when it has none
 * @param headers the message's headers (first value of each), names compared case-insensitively;
 *     never {@code null}
 * @param body the body bytes; never {@code null}
 * @param deliveryCount how many times the broker has delivered it, this time included (1 on the
 *     first delivery); 0 when the broker does not say
 * @param source where it came from (queue, stream and consumer), for reasons and logs
 */
public record InboundMessage(@Nullable String messageId, Map<String, String> headers, byte[] body, int deliveryCount, String source) {

  /** Validates and copies the components. */
  public InboundMessage {
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(body, "body");
    if (deliveryCount < 0) {
      throw new IllegalArgumentException("deliveryCount must be 0 or more");
    }
    TreeMap<String, String> copy = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    copy.putAll(headers);
    headers = Collections.unmodifiableMap(copy);
    source = source == null ? "" : source;
  }

  /** @return the header's value (name compared case-insensitively), or {@code null} */
  public @Nullable String header(String name) {
    return headers.get(name.toLowerCase(Locale.ROOT));
  }
}
