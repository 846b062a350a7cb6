package dev.idem.benchmarks;

import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

/** Redis's floor: one SET of the request body under the key, with a 24-hour expiry. */
final class NaiveSet implements Workload {
  private final RedisBackend redis;

  NaiveSet(RedisBackend redis) {
    this.redis = redis;
  }

  @Override
  public String id() {
    return Workloads.NAIVE_SET;
  }

  @Override
  public boolean raceable() {
    return false; // a SET on one key overwrites: duplicates cannot be counted
  }

  @Override
  public void setUp() {}

  @Override
  public Client client() {
    UnifiedJedis jedis = redis.connect();
    SetParams params = SetParams.setParams().px(86_400_000L);
    String prefix = redis.prefix + "naive:";
    return new Client() {
      @Override
      public void run(String key) {
        jedis.set(prefix + key, Requests.PAYLOAD, params);
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
