package dev.idem.benchmarks;

import dev.idem.core.StoredResponse;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** In-memory effects of the lease-mode workloads: a counter per key. */
final class Counter {
  private final Map<String, Integer> perKey = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();

  StoredResponse effect(String key) {
    perKey.merge(key, 1, Integer::sum);
    return Requests.created(ids.incrementAndGet());
  }

  void clear() {
    perKey.clear();
  }

  long[] count() {
    long total = 0;
    for (int n : perKey.values()) {
      total += n;
    }
    return new long[] {total, perKey.size()};
  }
}
