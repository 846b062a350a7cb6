package dev.idem.docs;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.redis.RedisLeaseStore;
import java.time.Duration;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/** The README's lease-mode quick start; run by {@link QuickStartTest} on the in-memory store. */
final class LeaseQuickStart {

  private LeaseQuickStart() {}

  /** A payment provider that deduplicates by the key it is given. */
  interface Payments {
    Charge charge(long cents, String idempotencyKey);
  }

  record Charge(String id, long cents) {}

  static void stores(DataSource dataSource, UnifiedJedis jedis) {
    // tag::stores[]
    LeaseStore jdbcStore = JdbcLeaseStore.builder(dataSource).build();    // the key table, idem_keys
    LeaseStore redisStore = RedisLeaseStore.builder(jedis).build();       // module idem-redis, Jedis client
    LeaseStore memoryStore = new InMemoryLeaseStore();                    // one JVM: tests and demos
    // end::stores[]
  }

  static Outcome charge(LeaseStore store, Payments payments, IdempotentRequest request, long amount) {
    // tag::lease[]
    LeaseIdempotency idem = LeaseIdempotency.builder(store)             // once per application
        .lease(Duration.ofSeconds(30))                                  // longer than the effect's slowest run
        .retention(Duration.ofHours(24))                                // must be longer than the lease
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(5)))   // or failFast(): 409 + Retry-After
        .build();

    Outcome outcome = idem.execute(request, ctx -> {
      // ctx.lease().recovery() is true when this run took over an expired lease: the earlier owner's
      // charge may have gone through, so pass the same key downstream and let the provider dedupe.
      Charge charge = payments.charge(amount, ctx.lease().key().value());
      return StoredResponse.builder(201).body("{\"charge\":\"" + charge.id() + "\"}").build();
    });
    // end::lease[]
    return outcome;
  }
}
