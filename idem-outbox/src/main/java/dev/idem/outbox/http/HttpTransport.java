package dev.idem.outbox.http;

import dev.idem.client.HttpOperation;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.OperationResult;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Sends {@link Intent.Kind#HTTP} intents with {@link IdempotentHttpClient}, the intent's id as the
 * {@code Idempotency-Key} (draft-ietf-httpapi-idempotency-key-header): an Idem-protected API
 * downstream answers a re-sent intent from its stored response instead of a second effect. The
 * client's own retry policy (backoff, {@code Retry-After}, bounded attempts) runs within one relay
 * attempt.
 *
 * <p>Outcomes: a 1xx-3xx final answer is delivered; a 4xx is the receiver's final refusal
 * ({@link Delivery.Status#REJECTED}, the intent becomes DEAD with the status and the start of the
 * body), except 408, 425 and 429, which are retried; a 5xx, an unknown outcome or an I/O failure
 * is retried by the relay. The intents of a batch are sent concurrently. Thread-safe.
 */
public final class HttpTransport implements IntentTransport {

  private final IdempotentHttpClient client;

  /** @param client the client that sends each intent, never {@code null} */
  public HttpTransport(IdempotentHttpClient client) {
    this.client = Objects.requireNonNull(client, "client");
  }

  @Override
  public Intent.Kind kind() {
    return Intent.Kind.HTTP;
  }

  @Override
  public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
    List<CompletableFuture<OperationResult>> sent = new ArrayList<>(batch.size());
    for (OutboxEntry entry : batch) {
      Intent intent = entry.intent();
      try {
        HttpOperation.Builder op = HttpOperation.builder(
                Objects.requireNonNull(intent.route(), "an HTTP intent's route is its method"), URI.create(intent.target()))
            .body(intent.body())
            .idempotencyKey(entry.id());
        for (Map.Entry<String, String> h : intent.headers()) {
          op.header(h.getKey(), h.getValue());
        }
        sent.add(client.sendAsync(op.build()));
      } catch (RuntimeException e) {
        sent.add(CompletableFuture.failedFuture(e));
      }
    }
    List<Delivery> out = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      String id = batch.get(i).id();
      try {
        OperationResult result = sent.get(i).get();
        int status = result.status();
        if (status < 400) {
          out.add(Delivery.delivered(id));
        } else if (status < 500 && status != 408 && status != 425 && status != 429) {
          out.add(Delivery.rejected(id, "HTTP " + status + " " + excerpt(result.body())));
        } else {
          out.add(Delivery.retry(id, "HTTP " + status + " " + excerpt(result.body())));
        }
      } catch (ExecutionException e) {
        Throwable cause = e.getCause() instanceof CompletionException && e.getCause().getCause() != null
            ? e.getCause().getCause() : e.getCause();
        if (cause instanceof IdempotencyKeyReusedException) {
          out.add(Delivery.rejected(id, "the receiver holds another request under this Idempotency-Key: " + cause.getMessage()));
        } else {
          out.add(Delivery.retry(id, String.valueOf(cause)));
        }
      }
    }
    return out;
  }

  private static String excerpt(byte[] body) {
    String text = new String(body, 0, Math.min(body.length, 300), StandardCharsets.UTF_8);
    return text.isEmpty() ? "" : "(" + text.replaceAll("\\s+", " ") + ")";
  }
}
