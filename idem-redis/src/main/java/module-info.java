/**
 * Lease mode on Redis (standalone, Sentinel or Cluster) through Jedis, or through any client
 * behind {@code RedisStoreClient}. Exports {@code dev.idem.redis}. Jedis is an automatic module
 * ({@code redis.clients.jedis}, from its manifest).
 */
module dev.idem.redis {
  requires transitive dev.idem.core;
  requires transitive redis.clients.jedis;
  requires static transitive org.jspecify;

  exports dev.idem.redis;
}
