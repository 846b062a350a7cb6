/**
 * Lease mode on Redis, API: {@link dev.idem.redis.RedisLeaseStore} (one hash per record, every
 * change one Lua script on the server's clock) and the client it runs on ({@link
 * dev.idem.redis.RedisStoreClient}, with {@link dev.idem.redis.JedisStoreClient} for Jedis).
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.redis;

import org.jspecify.annotations.NullMarked;
