package dev.idem.redis;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.core.spi.StoredResponseCodec;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.time.Duration;
import java.util.Objects;
import redis.clients.jedis.UnifiedJedis;

/**
 * A {@link LeaseStore} on Redis (a standalone server, or Redis Cluster), through a Jedis {@link
 * UnifiedJedis} client ({@code RedisClient}, {@code RedisClusterClient}, or the older {@code
 * JedisPooled} and {@code JedisCluster}), or through any other client that implements {@link
 * RedisStoreClient} (the Spring Boot starter's runs on Spring Data Redis, with Lettuce or Jedis).
 * Built on a {@link RedisStoreClient}, the store does not touch Jedis's classes.
 *
 * <pre>{@code
 * RedisClient redis = RedisClient.create("redis://127.0.0.1:6379");
 * LeaseStore store = RedisLeaseStore.builder(redis).keyPrefix("idem:").build();
 * LeaseIdempotency idem = LeaseIdempotency.builder(store).build();
 * }</pre>
 *
 * <p><b>Layout.</b> Each record is one Redis hash named {@code <prefix>{<sha256>}}, where {@code
 * <sha256>} is the 64 lowercase hexadecimal digits of SHA-256 over the UTF-8 bytes of {@code
 * principal + "\0" + operation + "\0" + key} (see {@link #recordKey}). The braces make the digest the
 * Redis Cluster hash tag, so a record always lives in one hash slot whatever characters the scope or
 * the key contain. Its fields are {@code principal}, {@code operation}, {@code key}, {@code
 * fingerprint} (64 lowercase hex digits), {@code state} ({@code IN_PROGRESS} or {@code COMPLETED}),
 * {@code owner}, {@code lease_until} and {@code expires_at} (milliseconds since the Unix epoch on the
 * Redis server's clock) and, once completed, {@code response} (the bytes of {@link
 * StoredResponseCodec}) and {@code completed_at} (the completion's time, same unit). The hash also carries a Redis expiry ({@code PEXPIREAT}) at {@code
 * expires_at}, so Redis removes expired records by itself. A completion sets {@code expires_at} to
 * exactly the retention after it, so a completed key is kept exactly the retention on Redis's clock:
 * the expiry policy to publish (draft-ietf-httpapi-idempotency-key-header, section 2.3), unless an
 * eviction policy other than {@code noeviction}, a {@code FLUSHALL} or a failover that loses writes
 * removes it sooner (see {@link RedisDurability}).
 *
 * <p><b>Atomicity and time.</b> {@link #claim}, {@link #complete} and {@link #release} are each one
 * Lua script ({@code EVALSHA}, falling back to {@code EVAL} when the server does not have the script
 * cached), so each is atomic for its record, and each takes "now" from the Redis server's {@code
 * TIME}, never from the JVM's clock.
 *
 * <p><b>Durability.</b> Redis replicates asynchronously, so by default ({@link
 * RedisDurability#none()}) a failover, or a restart without persistence, can lose a claim or a
 * completion that was already acknowledged, and a retry may then run the effect again. {@link
 * Builder#durability(RedisDurability)} makes every claim, completion, release and replay wait for
 * replicas ({@code WAIT}, or {@code WAITAOF} on Redis 7.2 and later) on the connection that ran the
 * script, and reports a write they did not acknowledge as an unknown outcome ({@link
 * IdemStoreException}), which the lease engine retries with the same owner token. {@link
 * RedisDurability} lists what each mode survives and what none does.
 *
 * <p>Thread-safe when the client is (a {@code RedisClient}, {@code RedisClusterClient}, {@code
 * JedisPooled} or {@code JedisCluster} is; a {@link UnifiedJedis} over one single {@code Connection}
 * is not). The store does not own the client: closing the client is the caller's business. Every
 * failure of Redis or of the connection is thrown as {@link IdemStoreException}, never as a Jedis
 * exception.
 */
public final class RedisLeaseStore implements LeaseStore, KeyStatusReader {

  /** The key prefix used when {@link Builder#keyPrefix(String)} is not called: {@value}. */
  public static final String DEFAULT_KEY_PREFIX = "idem:";

  /** The maximum length of a key prefix, in characters: {@value}. */
  public static final int MAX_KEY_PREFIX_LENGTH = 200;

  /**
   * The longest lease or retention accepted: 36 500 days (about 100 years), which keeps every
   * timestamp exact in Redis's Lua numbers.
   */
  public static final Duration MAX_DURATION = Duration.ofDays(36_500);

  /** Every rule of the store, shared with {@link AsyncRedisLeaseStore}. */
  private final RedisRecords records;

  private RedisLeaseStore(RedisRecords records) {
    this.records = records;
  }

  /**
   * Starts a builder for a store on the given client.
   *
   * @param redis the Jedis client to use, never {@code null}; not connected to or closed by the
   *     store (connection problems surface on first use, as {@link IdemStoreException})
   * @return a new builder, never {@code null}
   * @throws NullPointerException if {@code redis} is {@code null}
   */
  public static Builder builder(UnifiedJedis redis) {
    return new Builder(new JedisStoreClient(Objects.requireNonNull(redis, "redis")));
  }

  /**
   * Starts a builder for a store on another Redis client (a name of its own, so that {@code
   * builder(null)} stays unambiguous): the store sends its scripts and commands
   * through {@code client} and keeps every rule itself (see {@link RedisStoreClient}).
   *
   * @param client the client's implementation of the store's commands, never {@code null}
   * @return a new builder, never {@code null}
   * @throws NullPointerException if {@code client} is {@code null}
   */
  public static Builder builderFor(RedisStoreClient client) {
    return new Builder(client);
  }

  /** @return the durability mode, {@link RedisDurability#none()} unless the builder set one */
  public RedisDurability durability() {
    return records.durability();
  }

  /** @return the prefix of every Redis key this store uses, never {@code null} or empty */
  public String keyPrefix() {
    return records.keyPrefix();
  }

  /**
   * The name of the Redis hash that holds the record of {@code (scope, key)}: the {@link
   * #keyPrefix() prefix}, then {@code "{"}, the 64 lowercase hexadecimal digits of SHA-256 over the
   * UTF-8 bytes of {@code principal + "\0" + operation + "\0" + key}, and {@code "}"}. This is the
   * only Redis key the store touches for that record. Pure computation; no call to Redis.
   *
   * @param scope the record's scope, never {@code null}
   * @param key the record's idempotency key, never {@code null}
   * @return the Redis key, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   */
  public String recordKey(Scope scope, IdempotencyKey key) {
    return records.recordKey(scope, key);
  }

  /**
   * {@inheritDoc}
   *
   * <p>One atomic Lua script on the record's hash, on the Redis server's clock.
   *
   * @param request scope, key and fingerprint, never {@code null}
   * @param ownerToken 1 to 64 printable US-ASCII characters (0x20-0x7E), never {@code null}
   * @param lease positive, at most {@link #MAX_DURATION}; used in whole milliseconds
   * @param retention longer than {@code lease}, at most {@link #MAX_DURATION}; used in whole
   *     milliseconds
   * @return what the store found and did, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException if an argument is out of range
   * @throws IdemStoreException if Redis fails or cannot be reached, or the record is corrupt
   */
  @Override
  public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    return Stages.join(records.claim(request, ownerToken, lease, retention));
  }

  /**
   * {@inheritDoc}
   *
   * <p>One atomic Lua script on the record's hash, on the Redis server's clock. The response is
   * stored as the bytes of {@link StoredResponseCodec}, binary-safe.
   *
   * <p>With {@link Builder#responseProtection response protection} on, the response is stored as
   * its encrypted envelope instead, and one {@code HMGET} of the record comes first: the ciphertext
   * is bound to the record's fingerprint, which only the record holds, and a record that is gone,
   * of another owner, or already completed is answered from that read without writing (a repeated
   * completion by the same owner is recognised by decrypting the stored response, since every
   * encryption has a fresh nonce).
   *
   * @param scope the record's scope, never {@code null}
   * @param key the record's idempotency key, never {@code null}
   * @param ownerToken 1 to 64 printable US-ASCII characters, never {@code null}
   * @param response the response to store, never {@code null}
   * @param retention positive, at most {@link #MAX_DURATION}; used in whole milliseconds
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException if an argument is out of range
   * @throws IdemStoreException if Redis fails or cannot be reached
   */
  @Override
  public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    return Stages.join(records.complete(scope, key, ownerToken, response, retention));
  }

  /**
   * {@inheritDoc}
   *
   * <p>One atomic Lua script on the record's hash, on the Redis server's clock; a removed claim
   * deletes the hash.
   *
   * @param scope the record's scope, never {@code null}
   * @param key the record's idempotency key, never {@code null}
   * @param ownerToken 1 to 64 printable US-ASCII characters, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException if {@code ownerToken} is malformed
   * @throws IdemStoreException if Redis fails or cannot be reached
   */
  @Override
  public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
    return Stages.join(records.release(scope, key, ownerToken));
  }

  /**
   * {@inheritDoc}
   *
   * <p>One read-only Lua script on the record's hash, on the Redis server's clock (so that expiry
   * is decided as {@link #claim} decides it, from the exact instant of expiry); it writes nothing
   * and, whatever the {@link Builder#durability durability} mode, waits for no replica. A protected
   * response is opened to read its status.
   *
   * @throws dev.idem.core.StoredResponseUnreadableException if a protected response cannot be opened
   * @throws IdemStoreException if Redis fails or cannot be reached, or the record is corrupt
   */
  @Override
  public KeyStatus status(Scope scope, IdempotencyKey key) {
    return Stages.join(records.status(scope, key));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Redis already removes each record at its expiry by itself, so this usually finds little or
   * nothing: it is a sweep for records whose Redis expiry was lost (for example by a {@code
   * PERSIST} or a restore). It walks the keys that look like this store's records with {@code SCAN
   * ... MATCH <prefix>{<64 characters>} COUNT batchSize}, and checks each one with its own small
   * atomic Lua script that deletes it only if it is a record hash whose {@code expires_at} has
   * passed on the server's clock. No step holds a lock for long.
   *
   * <p>On Redis Cluster ({@code RedisClusterClient} or {@code JedisCluster}) it scans the masters
   * only, and a node that cannot be reached is skipped: a replica, or a failed master whose slots a
   * replica took over, does not make the purge fail. Only a master that still owns slots and cannot
   * be reached makes the sweep partial, reported as {@link IdemStoreException} after every other
   * master was swept (the message names those masters and the count deleted).
   *
   * @param batchSize 1 to 100 000: the {@code COUNT} hint of each {@code SCAN} step
   * @return how many records this call deleted, not counting those Redis expired by itself
   * @throws IllegalArgumentException if {@code batchSize} is out of range
   * @throws IdemStoreException if Redis fails or cannot be reached, or (on a cluster) a master
   *     that owns slots cannot be reached; records deleted before the failure stay deleted
   */
  @Override
  public long purgeExpired(int batchSize) {
    return Stages.join(records.purgeExpired(batchSize));
  }

  /**
   * A debugging form, {@code RedisLeaseStore[keyPrefix=<prefix>, durability=<mode>]}.
   *
   * @return the text, never {@code null}
   */
  @Override
  public String toString() {
    return "RedisLeaseStore[keyPrefix=" + keyPrefix() + ", durability=" + durability() + "]";
  }

  /**
   * Builds a {@link RedisLeaseStore}. Every setter validates its argument at once. Not thread-safe;
   * the store it builds is.
   */
  public static final class Builder {
    private final AsyncRedisStoreClient redis;
    private String keyPrefix = DEFAULT_KEY_PREFIX;
    private ResponseProtection protection = ResponseProtection.none();
    private RedisDurability durability = RedisDurability.none();

    private Builder(RedisStoreClient redis) {
      this.redis = new BlockingStoreClient(Objects.requireNonNull(redis, "client"));
    }

    /** A builder of the settings of an {@link AsyncRedisLeaseStore}, on its client. */
    Builder(AsyncRedisStoreClient redis) {
      this.redis = Objects.requireNonNull(redis, "client");
    }

    /**
     * Sets the prefix of every Redis key the store uses, so that several applications or
     * environments can share one Redis. Default {@value RedisLeaseStore#DEFAULT_KEY_PREFIX}.
     *
     * @param keyPrefix 1 to {@value RedisLeaseStore#MAX_KEY_PREFIX_LENGTH} characters, no control
     *     character and no {@code '{'} or {@code '}'} (those would change the Redis Cluster hash
     *     tag), never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code keyPrefix} is {@code null}
     * @throws IllegalArgumentException if {@code keyPrefix} breaks a rule above
     */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = RedisRecords.checkKeyPrefix(keyPrefix);
      return this;
    }

    /**
     * Protects stored responses at rest: the hash's {@code response} field holds the encrypted
     * envelope of {@link ResponseProtection}, bound to the record's principal, operation,
     * idempotency key and fingerprint. A completion then costs one {@code HMGET} more (see {@link
     * RedisLeaseStore#complete}); a stored response that cannot be authenticated makes {@link
     * RedisLeaseStore#claim} throw {@link StoredResponseUnreadableException}, never replay.
     *
     * @param protection the keyring, or {@link ResponseProtection#none()} (the default: in clear)
     * @return this builder
     * @throws NullPointerException if {@code protection} is {@code null}
     */
    public Builder responseProtection(ResponseProtection protection) {
      this.protection = Objects.requireNonNull(protection, "protection");
      return this;
    }

    /**
     * Sets how long each claim, completion and release waits for replicas before the store reports
     * it done; see {@link RedisDurability} for what each mode survives. Default {@link
     * RedisDurability#none()}.
     *
     * @param durability the mode, never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code durability} is {@code null}
     */
    public Builder durability(RedisDurability durability) {
      this.durability = Objects.requireNonNull(durability, "durability");
      return this;
    }

    /**
     * Builds the store. Does not contact Redis.
     *
     * @return a new, thread-safe store (as thread-safe as the client), never {@code null}
     */
    public RedisLeaseStore build() {
      return new RedisLeaseStore(records());
    }

    /** @return the rules of a store with these settings, on this builder's client */
    RedisRecords records() {
      return new RedisRecords(redis, keyPrefix, protection, durability);
    }

    /** @return the durability set so far */
    RedisDurability durability() {
      return durability;
    }
  }
}
