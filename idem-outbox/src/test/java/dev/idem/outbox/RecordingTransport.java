package dev.idem.outbox;

import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/** A transport for tests: records every delivery and answers what the test sets. Thread-safe. */
final class RecordingTransport implements IntentTransport {

  final Map<String, Integer> deliveries = new ConcurrentHashMap<>();
  volatile Function<OutboxEntry, Delivery> answer = e -> Delivery.delivered(e.id());
  private final Intent.Kind kind;

  RecordingTransport(Intent.Kind kind) {
    this.kind = kind;
  }

  @Override
  public Intent.Kind kind() {
    return kind;
  }

  @Override
  public List<Delivery> deliver(List<OutboxEntry> batch) {
    List<Delivery> out = new ArrayList<>();
    for (OutboxEntry e : batch) {
      deliveries.merge(e.id(), 1, Integer::sum);
      out.add(answer.apply(e));
    }
    return out;
  }
}
