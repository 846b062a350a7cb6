package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.Scope;
import dev.idem.jetstream.JetStreamTransport;
import dev.idem.outbox.spi.Delivery;
import io.nats.client.JetStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * An intent whose header jnats refuses (a value that is not ASCII, which Intent.withHeader accepts)
 * fails alone: the other intents of its batch are published and delivered.
 */
class JetStreamTransportHeaderTest {

  private static OutboxEntry entry(String id, Intent intent) {
    return new OutboxEntry(id, Scope.of("shop", "POST /orders"), "k-" + id, 0, intent, OutboxEntry.State.PENDING, 0, null, 0L);
  }

  @Test
  void anIntentWithAHeaderNatsRefusesFailsAloneNotItsBatch() throws Exception {
    List<String> published = new ArrayList<>();
    JetStream jetStream = (JetStream) Proxy.newProxyInstance(JetStream.class.getClassLoader(), new Class<?>[] {JetStream.class},
        (proxy, method, args) -> {
          if (method.getName().equals("publishAsync") && args.length == 4) {
            published.add((String) args[0]);
            return CompletableFuture.completedFuture(null);
          }
          throw new UnsupportedOperationException(method.getName());
        });
    byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
    List<Delivery> out = new JetStreamTransport(jetStream).deliver(List.of(
        entry("a", Intent.jetStream("orders.a", body)),
        entry("b", Intent.jetStream("orders.b", body).withHeader("x-user", "Jos\u00e9")),
        entry("c", Intent.jetStream("orders.c", body))));
    assertThat(published).containsExactly("orders.a", "orders.c");
    assertThat(out).extracting(Delivery::id).containsExactly("a", "b", "c");
    assertThat(out).extracting(Delivery::status)
        .containsExactly(Delivery.Status.DELIVERED, Delivery.Status.REJECTED, Delivery.Status.DELIVERED);
  }
}
