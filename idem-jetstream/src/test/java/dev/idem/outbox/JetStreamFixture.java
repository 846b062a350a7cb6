package dev.idem.outbox;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.jetstream.JetStreamIdempotentConsumer;
import dev.idem.jetstream.JetStreamTransport;
import dev.idem.outbox.spi.IntentTransport;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PublishOptions;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * NATS JetStream at {@code IDEM_TEST_NATS_URL} (default {@code nats://127.0.0.1:4222}): per test a
 * stream for the messages (2-minute duplicate window), a durable pull consumer with explicit
 * acknowledgements and a 1-second ack wait, and a dead-letter stream, all deleted afterwards.
 */
final class JetStreamFixture implements BrokerFixture {

  private final Connection connection;
  private final JetStream jetStream;
  private final JetStreamManagement jsm;
  private final String stream;
  private final String subject;
  private final String deadStream;
  private final String deadSubject;
  private final String durable;
  private final String url;

  JetStreamFixture() throws Exception {
    url = System.getenv().getOrDefault("IDEM_TEST_NATS_URL", "nats://127.0.0.1:4222");
    try {
      connection = Nats.connect(options(url));
      jsm = connection.jetStreamManagement();
      jsm.getAccountStatistics();
    } catch (Exception e) {
      throw BrokerFixture.unreachable("NATS JetStream at " + url, e);
    }
    jetStream = connection.jetStream();
    String name = UUID.randomUUID().toString().substring(0, 8).toUpperCase(Locale.ROOT);
    stream = "IDEM_TEST_" + name;
    subject = "idem.test." + name + ".out";
    deadStream = stream + "_DLQ";
    deadSubject = "idem.test." + name + ".dlq";
    durable = "C_" + name;
    jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subject).storageType(StorageType.File)
        .duplicateWindow(Duration.ofMinutes(2)).build());
    jsm.addStream(StreamConfiguration.builder().name(deadStream).subjects(deadSubject).storageType(StorageType.File)
        .duplicateWindow(Duration.ofMinutes(2)).build());
    jsm.addOrUpdateConsumer(stream, ConsumerConfiguration.builder().durable(durable).ackPolicy(AckPolicy.Explicit)
        .ackWait(Duration.ofSeconds(1)).maxDeliver(-1).filterSubject(subject).build());
  }

  private static Options options(String url) {
    return new Options.Builder().server(url).connectionTimeout(Duration.ofSeconds(5)).maxReconnects(0).build();
  }

  @Override
  public boolean dedupesById() {
    return true;
  }

  @Override
  public Intent intent(byte[] body) {
    return Intent.jetStream(subject, body).withHeader("Content-Type", "application/json");
  }

  @Override
  public Intent unroutableIntent(byte[] body) {
    return Intent.jetStream(subject.replace(".out", ".nobody"), body);
  }

  @Override
  public IntentTransport transport() {
    return new JetStreamTransport(jetStream);
  }

  @Override
  public List<Received> published(int atLeast, Duration wait) throws Exception {
    return read(stream, atLeast, wait);
  }

  private List<Received> read(String from, int atLeast, Duration wait) throws Exception {
    long deadline = System.nanoTime() + wait.toNanos();
    while (true) {
      long last = jsm.getStreamInfo(from).getStreamState().getLastSequence();
      List<Received> out = new ArrayList<>();
      for (long seq = 1; seq <= last; seq++) {
        MessageInfo m;
        try {
          m = jsm.getMessage(from, seq);
        } catch (JetStreamApiException deleted) {
          continue;
        }
        Map<String, String> headers = new HashMap<>();
        Headers h = m.getHeaders();
        if (h != null) {
          h.entrySet().forEach(e -> headers.put(e.getKey(), e.getValue().get(0)));
        }
        out.add(new Received(headers.get("Nats-Msg-Id"), m.getData(), headers));
      }
      if (out.size() >= atLeast || System.nanoTime() > deadline) {
        return out;
      }
      Thread.sleep(50);
    }
  }

  @Override
  public void publishRaw(String id, byte[] body) throws Exception {
    PublishOptions.Builder options = PublishOptions.builder();
    if (id != null) {
      options.messageId(id);
    }
    jetStream.publish(subject, null, body, options.build());
  }

  @Override
  public AutoCloseable consume(IdempotentConsumer consumer, Consumer<Verdict> verdicts) throws Exception {
    JetStreamIdempotentConsumer handler =
        new JetStreamIdempotentConsumer(consumer, jetStream, deadSubject, Duration.ofMillis(100))
            .onVerdict((m, v) -> verdicts.accept(v));
    JetStreamSubscription sub = jetStream.subscribe(subject, PullSubscribeOptions.bind(stream, durable));
    AtomicBoolean running = new AtomicBoolean(true);
    Thread t = new Thread(() -> {
      while (running.get()) {
        try {
          for (Message m : sub.fetch(10, Duration.ofMillis(200))) {
            handler.handle(m);
          }
        } catch (InterruptedException e) {
          return;
        } catch (RuntimeException e) {
          if (running.get()) {
            e.printStackTrace();
          }
        }
      }
    }, "jetstream-test-consumer");
    t.start();
    return () -> {
      running.set(false);
      t.join(5000);
      sub.unsubscribe();
    };
  }

  @Override
  public void processThenCrashBeforeAck(IdempotentConsumer consumer) throws Exception {
    try (Connection doomed = Nats.connect(options(url))) {
      JetStreamSubscription sub = doomed.jetStream().subscribe(subject, PullSubscribeOptions.bind(stream, durable));
      List<Message> got = sub.fetch(1, Duration.ofSeconds(5));
      if (got.isEmpty()) {
        throw new IllegalStateException("no message to process");
      }
      Message m = got.get(0);
      String id = m.getHeaders() == null ? null : m.getHeaders().getFirst("Nats-Msg-Id");
      Verdict verdict = consumer.process(new InboundMessage(id, Map.of(), m.getData(),
          (int) m.metaData().deliveredCount(), stream));
      if (verdict.action() != Verdict.Action.ACK) {
        throw new IllegalStateException("expected the first delivery to commit, was " + verdict);
      }
      // no ack: the connection goes away and the server redelivers after the ack wait
    }
  }

  @Override
  public long outstanding() throws Exception {
    ConsumerInfo info = jsm.getConsumerInfo(stream, durable);
    return info.getNumPending() + info.getNumAckPending();
  }

  @Override
  public List<Received> deadLetters(int atLeast, Duration wait) throws Exception {
    return read(deadStream, atLeast, wait);
  }

  @Override
  public String reasonHeader() {
    return JetStreamIdempotentConsumer.REASON_HEADER;
  }

  @Override
  public void close() throws Exception {
    try {
      jsm.deleteStream(stream);
      jsm.deleteStream(deadStream);
    } finally {
      connection.close();
    }
  }
}
