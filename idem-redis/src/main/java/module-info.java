/**
 * Lease mode on Redis (standalone, Sentinel or Cluster) through Jedis, or through any client
 * behind {@code RedisStoreClient}; without blocking ({@code AsyncRedisLeaseStore}) through Lettuce,
 * or any client behind {@code AsyncRedisStoreClient}. Exports {@code dev.idem.redis}. Jedis is an automatic module
 * ({@code redis.clients.jedis}, from its manifest), Lettuce too ({@code lettuce.core}).
 */
module dev.idem.redis {
  requires transitive dev.idem.core;
  requires transitive redis.clients.jedis;
  // optional: LettuceStoreClient only; the application that uses it brings Lettuce (an automatic module)
  requires static lettuce.core;
  requires static transitive org.jspecify;

  exports dev.idem.redis;
}
