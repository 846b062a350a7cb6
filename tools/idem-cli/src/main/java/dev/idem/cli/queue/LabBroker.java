package dev.idem.cli.queue;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.outbox.Intent;
import dev.idem.outbox.spi.IntentTransport;
import java.time.Duration;
import java.util.List;

/**
 * A real broker for the queue lab. A destination is a name such as {@code idem.lab.1a2b3c4d.relay}:
 * on RabbitMQ a direct exchange with two quorum queues bound to it (one per variant, so each gets a
 * copy of every message) and a dead-letter queue; on JetStream a stream on that subject (2-minute
 * duplicate window) with two durable pull consumers, one per variant; on Kafka a topic with one
 * partition read by two consumer groups, one per variant. The lab declares its
 * destinations and deletes them afterwards. Used from one thread at a time.
 */
interface LabBroker extends AutoCloseable {

  /** The two variants, each with its own queue or JetStream consumer on a destination. */
  String NAIVE = "naive";
  /** The variant that runs through Idem. */
  String PROTECTED = "protected";

  /** Why a broker cannot be used: the lab then exits with status 2. */
  final class Unavailable extends Exception {
    Unavailable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * @param broker {@code rabbitmq}, {@code jetstream} or {@code kafka}
   * @param url the broker's URL, {@code null} for the default ({@link #defaultUrl})
   * @return a connected broker
   * @throws Unavailable if it cannot be reached
   */
  static LabBroker connect(String broker, String url) throws Unavailable {
    String u = url == null ? defaultUrl(broker) : url;
    switch (broker) {
      case "rabbitmq":
        return RabbitMqLabBroker.connect(u);
      case "jetstream":
        return JetStreamLabBroker.connect(u);
      case "kafka":
        return KafkaLabBroker.connect(u);
      default:
        throw new IllegalArgumentException("broker must be rabbitmq, jetstream or kafka, was '" + broker + "'");
    }
  }

  /** @return {@code amqp://guest:guest@127.0.0.1:5672}, {@code nats://127.0.0.1:4222} or {@code 127.0.0.1:9092} (Kafka's bootstrap servers) */
  static String defaultUrl(String broker) {
    switch (broker) {
      case "jetstream":
        return "nats://127.0.0.1:4222";
      case "kafka":
        return "127.0.0.1:9092";
      default:
        return "amqp://guest:guest@127.0.0.1:5672";
    }
  }

  /** @return {@code rabbitmq}, {@code jetstream} or {@code kafka} */
  String kind();

  /** @return the URL it connected to */
  String url();

  /** @return product and version, for example {@code RabbitMQ 3.12.1} */
  String describe();

  /** @return whether the broker itself stores a re-published message with the same id once */
  boolean dedupesById();

  /** Creates the destination and its two queues or consumers. */
  void declare(String destination) throws Exception;

  /** Deletes what {@link #declare} created; failures are ignored. */
  void delete(String destination);

  /** @return an outbox intent to the destination */
  Intent intent(String destination, byte[] body);

  /** @return the relay's transport to this broker (publisher confirms / stream acknowledgements) */
  IntentTransport transport();

  /** Publishes straight to the destination, persistent, and waits for the broker's confirm. */
  void publish(String destination, String messageId, byte[] body) throws Exception;

  /** @return how many messages the broker stored for the destination (per variant on RabbitMQ) */
  long stored(String destination) throws Exception;

  /**
   * Takes one message from the variant's queue or consumer without acknowledging it (it stays
   * unacknowledged until this process acknowledges it, or dies).
   */
  InboundMessage takeWithoutAck(String destination, String variant, Duration wait) throws Exception;

  /** What a consumer run saw. */
  record Consumption(int deliveries, List<String> problems) {}

  /** The naive handling of one message: an effect, no key. */
  @FunctionalInterface
  interface NaiveHandler {
    void handle(InboundMessage message) throws Exception;
  }

  /**
   * Runs a naive consumer (effect, then ack) on the variant's queue until it has had {@code
   * expected} deliveries or {@code wait} passes, then a little longer to catch any extra one.
   */
  Consumption consumeNaive(String destination, NaiveHandler handler, int expected, Duration wait) throws Exception;

  /** As {@link #consumeNaive}, with Idem's adapter for this broker around {@code consumer}. */
  Consumption consumeProtected(String destination, IdempotentConsumer consumer, int expected, Duration wait)
      throws Exception;

  /** Closes the connection; failures are ignored. */
  @Override
  void close();
}
