package dev.idem.benchmarks;

import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.redis.RedisLeaseStore;
import redis.clients.jedis.UnifiedJedis;

/** Idem lease mode over RedisLeaseStore on keys already completed: every request is a replay. */
final class LeaseReplayRedis implements Workload {
  private final RedisBackend redis;
  private final int count;
  private final String prefix;
  private String[] keys;

  LeaseReplayRedis(RedisBackend redis, int count) {
    this.redis = redis;
    this.count = count;
    this.prefix = redis.prefix + "replay:";
  }

  @Override
  public String id() {
    return Workloads.LEASE_REPLAY;
  }

  @Override
  public KeySupply keySupply() {
    return KeySupply.EXISTING;
  }

  @Override
  public String[] existingKeys() {
    return keys;
  }

  @Override
  public boolean raceable() {
    return false;
  }

  @Override
  public void setUp() {
    if (keys == null) {
      keys = Keys.preload(Keys.Shape.UUID_V4, count, 11);
      LeaseIdempotency engine = LeaseIdempotency.builder(RedisLeaseStore.builder(redis.admin()).keyPrefix(prefix).build()).build();
      long id = 0;
      for (String key : keys) {
        long n = ++id;
        engine.execute(Requests.request(key), ctx -> Requests.created(n));
      }
    }
  }

  @Override
  public Client client() {
    UnifiedJedis jedis = redis.connect();
    LeaseIdempotency engine = LeaseIdempotency.builder(RedisLeaseStore.builder(jedis).keyPrefix(prefix).build()).build();
    return new Client() {
      @Override
      public void run(String key) {
        Outcome outcome = engine.execute(Requests.request(key), ctx -> {
          throw new IllegalStateException("a replay ran the effect");
        });
        if (!outcome.replayed() || outcome.response().status() != 201) {
          throw new IllegalStateException("expected a replayed 201, got " + outcome);
        }
      }

      @Override
      public void close() {
        jedis.close();
      }
    };
  }

  @Override
  public long[] effects() {
    return new long[] {0, 0};
  }
}
