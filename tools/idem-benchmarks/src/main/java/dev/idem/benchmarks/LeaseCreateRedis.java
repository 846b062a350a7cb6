package dev.idem.benchmarks;

import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.redis.RedisLeaseStore;
import redis.clients.jedis.UnifiedJedis;

/** Idem lease mode over RedisLeaseStore: claim script, effect (an in-memory counter), complete script. */
final class LeaseCreateRedis implements Workload {
  private final RedisBackend redis;
  private final Counter counter = new Counter();

  LeaseCreateRedis(RedisBackend redis) {
    this.redis = redis;
  }

  @Override
  public String id() {
    return Workloads.LEASE_CREATE;
  }

  @Override
  public void setUp() {
    counter.clear();
  }

  @Override
  public Client client() {
    UnifiedJedis jedis = redis.connect();
    LeaseIdempotency engine = LeaseIdempotency.builder(RedisLeaseStore.builder(jedis).keyPrefix(redis.prefix).build())
        .inProgress(InProgressPolicy.waitUpTo(Workloads.LEASE_WAIT))
        .build();
    return new Client() {
      @Override
      public void run(String key) {
        engine.execute(Requests.request(key), ctx -> counter.effect(key));
      }

      @Override
      public void close() {
        jedis.close();
      }
    };
  }

  @Override
  public long[] effects() {
    return counter.count();
  }
}
