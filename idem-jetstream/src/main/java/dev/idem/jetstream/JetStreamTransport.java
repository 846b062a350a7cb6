package dev.idem.jetstream;

import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import io.nats.client.JetStream;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Publishes {@link Intent.Kind#JETSTREAM} intents to NATS JetStream with the intent's id as {@code
 * Nats-Msg-Id}: within the stream's duplicate window (default 2 minutes) the server stores a
 * re-published intent once and answers it as a duplicate. An intent is delivered when the stream
 * acknowledged it (stored, or recognised as a duplicate); a subject no stream captures, a timeout or
 * an API error is a failure to retry. An intent with a header NATS refuses (a value that is not
 * printable ASCII) is rejected, and becomes DEAD at once, without failing the rest of its batch.
 *
 * <p>Publishes a batch asynchronously and then waits for every acknowledgement. Thread-safe, as
 * jnats' {@link JetStream} is.
 */
public final class JetStreamTransport implements IntentTransport {

  private final JetStream jetStream;
  private final Duration ackTimeout;

  /**
   * @param jetStream the JetStream context of the caller's connection, never {@code null}
   * @param ackTimeout how long a batch waits for the stream's acknowledgements, from 1 ms
   */
  public JetStreamTransport(JetStream jetStream, Duration ackTimeout) {
    this.jetStream = Objects.requireNonNull(jetStream, "jetStream");
    this.ackTimeout = Objects.requireNonNull(ackTimeout, "ackTimeout");
    if (ackTimeout.toMillis() < 1) {
      throw new IllegalArgumentException("ackTimeout must be at least 1 ms");
    }
  }

  /** A transport that waits up to 10 seconds for acknowledgements. */
  public JetStreamTransport(JetStream jetStream) {
    this(jetStream, Duration.ofSeconds(10));
  }

  @Override
  public Intent.Kind kind() {
    return Intent.Kind.JETSTREAM;
  }

  @Override
  public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
    List<CompletableFuture<PublishAck>> acks = new ArrayList<>(batch.size());
    List<@Nullable String> refused = new ArrayList<>(batch.size());
    for (OutboxEntry entry : batch) {
      Intent intent = entry.intent();
      Headers headers = new Headers();
      try {
        for (Map.Entry<String, String> h : intent.headers()) {
          headers.add(h.getKey(), h.getValue());
        }
      } catch (IllegalArgumentException e) {
        // jnats takes printable ASCII only, Intent.withHeader any text without CR, LF or NUL: this
        // intent can never be published, and it must not fail the rest of its batch
        refused.add("NATS refuses a header of it: " + e.getMessage());
        acks.add(CompletableFuture.failedFuture(e));
        continue;
      }
      refused.add(null);
      PublishOptions options = PublishOptions.builder().messageId(entry.id()).build();
      CompletableFuture<PublishAck> ack;
      try {
        ack = jetStream.publishAsync(intent.target(), headers, intent.body(), options);
      } catch (RuntimeException e) {
        ack = CompletableFuture.failedFuture(e);
      }
      acks.add(ack);
    }
    long deadline = System.nanoTime() + ackTimeout.toNanos();
    List<Delivery> out = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      String id = batch.get(i).id();
      String refusal = refused.get(i);
      if (refusal != null) {
        out.add(Delivery.rejected(id, refusal));
        continue;
      }
      try {
        acks.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        out.add(Delivery.delivered(id));
      } catch (ExecutionException e) {
        out.add(Delivery.retry(id, "JetStream publish failed: " + e.getCause()));
      } catch (TimeoutException e) {
        out.add(Delivery.retry(id, "no JetStream acknowledgement within " + ackTimeout.toMillis() + " ms"));
      }
    }
    return out;
  }
}
