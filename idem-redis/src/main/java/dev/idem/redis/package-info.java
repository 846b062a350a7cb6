/**
 * Lease mode on Redis, API: {@link dev.idem.redis.RedisLeaseStore} (one hash per record, every
 * change one Lua script on the server's clock) and the client it runs on ({@link
 * dev.idem.redis.RedisStoreClient}, with {@link dev.idem.redis.JedisStoreClient} for Jedis), and its
 * non-blocking twin on the same records, {@link dev.idem.redis.AsyncRedisLeaseStore}, on {@link
 * dev.idem.redis.AsyncRedisStoreClient} ({@link dev.idem.redis.LettuceStoreClient} for Lettuce).
 * Both run one set of rules ({@code RedisRecords}), so either reads what the other wrote.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.redis;

import org.jspecify.annotations.NullMarked;
