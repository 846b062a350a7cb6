package dev.idem.cli.queue;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.jetstream.JetStreamIdempotentConsumer;
import dev.idem.jetstream.JetStreamTransport;
import dev.idem.lab.Lab;
import dev.idem.outbox.Intent;
import dev.idem.outbox.spi.IntentTransport;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PublishOptions;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link LabBroker} on NATS JetStream with jnats. The durable consumers acknowledge explicitly
 * with a 1-second ack wait: an unacknowledged message is redelivered a second after its consumer
 * died.
 */
final class JetStreamLabBroker implements LabBroker {

  private static final Duration ACK_WAIT = Duration.ofSeconds(1);

  private final String url;
  private final Connection connection;
  private final JetStream jetStream;
  private final JetStreamManagement jsm;

  private JetStreamLabBroker(String url, Connection connection) throws Exception {
    this.url = url;
    this.connection = connection;
    this.jsm = connection.jetStreamManagement();
    jsm.getAccountStatistics(); // fails when JetStream is not enabled
    this.jetStream = connection.jetStream();
  }

  static JetStreamLabBroker connect(String url) throws Unavailable {
    Connection c = null;
    try {
      c = Nats.connect(new Options.Builder().server(url).connectionTimeout(Duration.ofSeconds(5)).maxReconnects(0).build());
      return new JetStreamLabBroker(url, c);
    } catch (Exception e) {
      if (c != null) {
        try {
          c.close();
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
        }
      }
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new Unavailable("cannot use NATS JetStream at " + Lab.redact(url) + ": " + e, e);
    }
  }

  @Override
  public String kind() {
    return "jetstream";
  }

  @Override
  public String url() {
    return url;
  }

  @Override
  public String describe() {
    return "NATS JetStream " + connection.getServerInfo().getVersion();
  }

  @Override
  public boolean dedupesById() {
    return true;
  }

  private static String stream(String destination) {
    return destination.replaceAll("[^A-Za-z0-9]", "_").toUpperCase(Locale.ROOT);
  }

  @Override
  public void declare(String destination) throws Exception {
    jsm.addStream(StreamConfiguration.builder().name(stream(destination))
        .subjects(destination, destination + ".dead").storageType(StorageType.File)
        .duplicateWindow(Duration.ofMinutes(2)).build());
    for (String variant : List.of(NAIVE, PROTECTED)) {
      jsm.addOrUpdateConsumer(stream(destination), ConsumerConfiguration.builder().durable(variant)
          .ackPolicy(AckPolicy.Explicit).ackWait(ACK_WAIT).maxDeliver(-1).filterSubject(destination).build());
    }
  }

  @Override
  public void delete(String destination) {
    try {
      jsm.deleteStream(stream(destination));
    } catch (Exception ignored) {
      // best effort
    }
  }

  @Override
  public Intent intent(String destination, byte[] body) {
    return Intent.jetStream(destination, body).withHeader("Content-Type", "application/json");
  }

  @Override
  public IntentTransport transport() {
    return new JetStreamTransport(jetStream);
  }

  @Override
  public void publish(String destination, String messageId, byte[] body) throws Exception {
    Headers headers = new Headers().add("Content-Type", "application/json");
    jetStream.publish(destination, headers, body, PublishOptions.builder().messageId(messageId).build());
  }

  /** Messages in the stream (both variants' consumers read the same ones). */
  @Override
  public long stored(String destination) throws Exception {
    return jsm.getStreamInfo(stream(destination)).getStreamState().getMsgCount();
  }

  @Override
  public InboundMessage takeWithoutAck(String destination, String variant, Duration wait) throws Exception {
    JetStreamSubscription sub = jetStream.subscribe(destination, PullSubscribeOptions.bind(stream(destination), variant));
    List<Message> got = sub.fetch(1, wait);
    if (got.isEmpty()) {
      throw new IllegalStateException("no message for consumer " + variant + " within " + wait.toMillis() + " ms");
    }
    return inbound(got.get(0));
  }

  private static InboundMessage inbound(Message m) {
    Map<String, String> headers = new HashMap<>();
    if (m.getHeaders() != null) {
      m.getHeaders().entrySet().forEach(e -> headers.put(e.getKey(), e.getValue().get(0)));
    }
    return new InboundMessage(headers.get("Nats-Msg-Id"), headers, m.getData() == null ? new byte[0] : m.getData(),
        (int) m.metaData().deliveredCount(), "stream '" + m.metaData().getStream() + "'");
  }

  @FunctionalInterface
  private interface Step {
    void on(Message m) throws Exception;
  }

  private Consumption consume(String destination, String variant, int expected, Duration wait, Step step) throws Exception {
    JetStreamSubscription sub = jetStream.subscribe(destination, PullSubscribeOptions.bind(stream(destination), variant));
    AtomicInteger deliveries = new AtomicInteger();
    List<String> problems = new ArrayList<>();
    long deadline = System.nanoTime() + wait.toNanos();
    long quietUntil = Long.MAX_VALUE;
    try {
      while (System.nanoTime() < Math.min(deadline, quietUntil)) {
        for (Message m : sub.fetch(10, Duration.ofMillis(250))) {
          deliveries.incrementAndGet();
          try {
            step.on(m);
          } catch (Exception e) {
            problems.add(variant + " consumer failed: " + e);
          }
        }
        if (deliveries.get() >= expected && quietUntil == Long.MAX_VALUE) {
          quietUntil = System.nanoTime() + Duration.ofMillis(500).toNanos(); // catch any extra delivery
        }
      }
    } finally {
      sub.unsubscribe();
    }
    return new Consumption(deliveries.get(), problems);
  }

  @Override
  public Consumption consumeNaive(String destination, NaiveHandler handler, int expected, Duration wait) throws Exception {
    return consume(destination, NAIVE, expected, wait, m -> {
      handler.handle(inbound(m));
      m.ackSync(Duration.ofSeconds(10));
    });
  }

  @Override
  public Consumption consumeProtected(String destination, IdempotentConsumer consumer, int expected, Duration wait)
      throws Exception {
    List<String> verdictProblems = new ArrayList<>();
    JetStreamIdempotentConsumer adapter =
        new JetStreamIdempotentConsumer(consumer, jetStream, destination + ".dead", Duration.ofMillis(200));
    Consumption c = consume(destination, PROTECTED, expected, wait, m -> {
      Verdict v = adapter.handle(m);
      if (v.action() != Verdict.Action.ACK) {
        verdictProblems.add(v.action() + ": " + v.reason());
      }
    });
    List<String> problems = new ArrayList<>(c.problems());
    problems.addAll(verdictProblems);
    return new Consumption(c.deliveries(), problems);
  }

  @Override
  public void close() {
    try {
      connection.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
