package dev.idem.jetstream;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import io.nats.client.JetStream;
import io.nats.client.Message;
import io.nats.client.MessageHandler;
import io.nats.client.PublishOptions;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * Runs an {@link IdempotentConsumer} on JetStream messages: a jnats {@link MessageHandler} for a
 * push subscription, a dispatcher or a {@code ConsumerContext}, or called with each message of a
 * pull subscription. The JetStream consumer must use explicit acknowledgements.
 *
 * <p>After the handler's transaction committed (or a redelivery replayed) the message is
 * acknowledged with {@code ackSync}; a failure is negatively acknowledged with a delay ({@code
 * nak} with delay, so the server redelivers it later); after the last allowed delivery (counted by
 * the server: {@code deliveredCount}) or for a message that can never be handled, a copy goes to
 * the dead-letter subject, with the reason in the {@value #REASON_HEADER} header, the original
 * stream and sequence, and the original {@code Nats-Msg-Id} (so a dead-letter stream with a
 * duplicate window keeps one copy); once the dead-letter stream acknowledged it, the original is
 * terminated ({@code term}). When the copy cannot be stored the message is redelivered later,
 * never dropped. Set the JetStream consumer's {@code MaxDeliver} above {@link
 * IdempotentConsumer#maxDeliveries()} (or unlimited), or the server stops redelivering first.
 *
 * <p>When Idem's store failed ({@link Verdict#storeUnavailable()}) the {@code nak}'s delay is the
 * verdict's {@link Verdict#retryAfter()} if longer (100 ms doubling to 30 s while the store stays
 * down), and that delivery is not counted towards {@link IdempotentConsumer#maxDeliveries()}: it is
 * subtracted from the server's {@code deliveredCount}, remembered in this process for the last
 * 10,000 messages. The server still counts it against the consumer's {@code MaxDeliver}: leave that
 * unlimited ({@code -1}) so that an outage cannot exhaust it.
 *
 * <p>Thread-safe: its only state is the count of those uncounted deliveries.
 */
public final class JetStreamIdempotentConsumer implements MessageHandler {

  /** The header of a dead-lettered copy that gives the reason. */
  public static final String REASON_HEADER = "Idem-Dead-Reason";

  private final IdempotentConsumer consumer;
  private final JetStream jetStream;
  private final String deadLetterSubject;
  private final Duration redeliveryDelay;
  private final Duration ackTimeout;
  private volatile BiConsumer<InboundMessage, Verdict> listener = (m, v) -> { };
  /** Deliveries of a message (stream, consumer, sequence) that Idem's store failed: not counted. */
  private final Map<String, Integer> uncounted = new java.util.LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
      return size() > 10_000;
    }
  };

  /**
   * @param consumer the idempotent consumer
   * @param jetStream where dead letters are published
   * @param deadLetterSubject a subject that a stream captures, for the dead letters
   * @param redeliveryDelay how long the server waits before redelivering a failed message, from 0
   */
  public JetStreamIdempotentConsumer(
      IdempotentConsumer consumer, JetStream jetStream, String deadLetterSubject, Duration redeliveryDelay) {
    this.consumer = Objects.requireNonNull(consumer, "consumer");
    this.jetStream = Objects.requireNonNull(jetStream, "jetStream");
    this.deadLetterSubject = Objects.requireNonNull(deadLetterSubject, "deadLetterSubject");
    this.redeliveryDelay = Objects.requireNonNull(redeliveryDelay, "redeliveryDelay");
    if (redeliveryDelay.isNegative()) {
      throw new IllegalArgumentException("redeliveryDelay must not be negative");
    }
    this.ackTimeout = Duration.ofSeconds(10);
  }

  /**
   * @param listener told of each message and its verdict after the server was told (acknowledged,
   *     negatively acknowledged or dead-lettered and terminated); for metrics and logs. It must not
   *     throw.
   * @return this handler
   */
  public JetStreamIdempotentConsumer onVerdict(BiConsumer<InboundMessage, Verdict> listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    return this;
  }

  @Override
  public void onMessage(Message msg) throws InterruptedException {
    handle(msg);
  }

  /**
   * Processes one message and acknowledges, redelivers or dead-letters it.
   *
   * @param msg a JetStream message from a consumer with explicit acknowledgements
   * @return the verdict it acted on
   * @throws InterruptedException if interrupted while waiting for the server
   */
  public Verdict handle(Message msg) throws InterruptedException {
    Map<String, String> headers = new HashMap<>();
    Headers h = msg.getHeaders();
    if (h != null) {
      for (Map.Entry<String, List<String>> e : h.entrySet()) {
        if (!e.getValue().isEmpty()) {
          headers.put(e.getKey(), e.getValue().get(0));
        }
      }
    }
    String id = h == null ? null : h.getFirst("Nats-Msg-Id");
    int deliveries = msg.isJetStream() ? counted(msg) : 0;
    String source = msg.isJetStream()
        ? "stream '" + msg.metaData().getStream() + "' consumer '" + msg.metaData().getConsumer() + "'"
        : "subject '" + msg.getSubject() + "'";
    byte[] body = msg.getData() == null ? new byte[0] : msg.getData();
    InboundMessage message = new InboundMessage(id, headers, body, deliveries, source);
    Verdict verdict = consumer.process(message);
    switch (verdict.action()) {
      case ACK:
        forget(msg);
        try {
          msg.ackSync(ackTimeout);
        } catch (TimeoutException e) {
          // The commit stands; the server redelivers after its ack wait and the redelivery replays.
        }
        break;
      case RETRY:
        if (verdict.storeUnavailable() && msg.isJetStream()) {
          notCounted(msg);
        }
        msg.nakWithDelay(verdict.pause(redeliveryDelay));
        break;
      case DEAD_LETTER:
        if (publishDeadLetter(msg, h, body, id, deliveries, Objects.requireNonNull(verdict.reason(), "a dead letter has its reason"))) {
          forget(msg);
          msg.term();
        } else {
          msg.nakWithDelay(redeliveryDelay);
          verdict = new Verdict(Verdict.Action.RETRY, null, "could not publish the dead letter; redelivered later: " + verdict.reason());
        }
        break;
      default:
        throw new IllegalStateException(verdict.action().toString());
    }
    listener.accept(message, verdict);
    return verdict;
  }

  /** @return the server's delivery count less the deliveries of this message that Idem's store failed */
  private int counted(Message msg) {
    int server = (int) Math.min(Integer.MAX_VALUE, msg.metaData().deliveredCount());
    synchronized (uncounted) {
      Integer skip = uncounted.get(position(msg));
      return skip == null ? server : Math.max(1, server - skip);
    }
  }

  private void notCounted(Message msg) {
    synchronized (uncounted) {
      uncounted.merge(position(msg), 1, Integer::sum);
    }
  }

  private void forget(Message msg) {
    if (msg.isJetStream()) {
      synchronized (uncounted) {
        uncounted.remove(position(msg));
      }
    }
  }

  private static String position(Message msg) {
    return msg.metaData().getStream() + "\u0000" + msg.metaData().getConsumer() + "\u0000" + msg.metaData().streamSequence();
  }

  private boolean publishDeadLetter(
      Message msg, @Nullable Headers original, byte[] body, @Nullable String id, int deliveries, String reason) {
    Headers headers = new Headers();
    if (original != null) {
      for (Map.Entry<String, List<String>> e : original.entrySet()) {
        if (!e.getKey().equalsIgnoreCase("Nats-Msg-Id")) {
          headers.add(e.getKey(), e.getValue());
        }
      }
    }
    headers.put(REASON_HEADER, oneLine(reason));
    headers.put("Idem-Consumer", consumer.name());
    headers.put("Idem-Subject", msg.getSubject());
    headers.put("Idem-Deliveries", Integer.toString(deliveries));
    String dedupe = id;
    if (msg.isJetStream()) {
      headers.put("Idem-Stream", msg.metaData().getStream());
      headers.put("Idem-Stream-Seq", Long.toString(msg.metaData().streamSequence()));
      if (dedupe == null) {
        dedupe = msg.metaData().getStream() + ":" + msg.metaData().streamSequence();
      }
    }
    try {
      PublishOptions.Builder options = PublishOptions.builder();
      if (dedupe != null) {
        options.messageId(dedupe);
      }
      jetStream.publish(deadLetterSubject, headers, body, options.build());
      return true;
    } catch (Exception e) {
      return false;
    }
  }

  private static String oneLine(String s) {
    String line = s.replaceAll("[\\r\\n]+", " ");
    return line.length() > 4000 ? line.substring(0, 3997) + "..." : line;
  }
}
