package dev.idem.redis;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import java.util.Objects;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * The non-blocking {@link AsyncLeaseStore} on Redis, for applications whose threads must never wait
 * on I/O (Spring WebFlux, Reactor Netty, Vert.x): the same records as {@link RedisLeaseStore},
 * written and read by the same code, through an {@link AsyncRedisStoreClient} ({@link
 * LettuceStoreClient} for Lettuce). A key that one store holds is claimed, completed, replayed and
 * released by the other exactly as by itself, so an application may use both on one Redis (the
 * blocking store for a purge job, say) and move from one to the other without losing a key.
 *
 * <pre>{@code
 * RedisClient lettuce = RedisClient.create("redis://127.0.0.1:6379");
 * StatefulRedisConnection<byte[], byte[]> connection = lettuce.connect(ByteArrayCodec.INSTANCE);
 * AsyncLeaseStore store = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(connection)).keyPrefix("idem:").build();
 * AsyncLeaseIdempotency idem = AsyncLeaseIdempotency.builder(store).build();
 * }</pre>
 *
 * <p>Everything {@link RedisLeaseStore} says of the layout, atomicity, the server's clock,
 * response protection and durability holds here. Each method validates its arguments before any
 * I/O and answers a bad one with a failed stage ({@link NullPointerException} or {@link
 * IllegalArgumentException}), never by throwing; a failure of Redis completes the stage with
 * {@link IdemStoreException}. Stages complete on the client's I/O thread (Lettuce's event loop);
 * nothing on the way waits for I/O or a lock.
 *
 * <p><b>Durability.</b> A {@link RedisDurability} other than {@link RedisDurability#none()} runs
 * {@code WAIT} (or {@code WAITAOF}) after each write on the connection that ran the script, and
 * {@code WAIT} holds every command queued behind it on that connection until the replicas answer
 * or the timeout passes. On a connection that the whole application shares (Lettuce's default, one
 * multiplexed connection) every other command, Idem's and the application's, would stall behind
 * each write: so such a store needs a client whose waiting writes have connections of their own
 * ({@link AsyncRedisStoreClient#waitsOnDedicatedConnections()}, {@link
 * LettuceStoreClient#of(io.lettuce.core.api.StatefulRedisConnection, io.lettuce.core.support.AsyncPool)}),
 * and {@link Builder#build()} refuses one without.
 *
 * <p>Thread-safe. The store does not own the client: closing its connections is the caller's
 * business.
 */
public final class AsyncRedisLeaseStore implements AsyncLeaseStore {

  private final RedisRecords records;

  private AsyncRedisLeaseStore(RedisRecords records) {
    this.records = records;
  }

  /**
   * Starts a builder for a store on the given client.
   *
   * @param client the client, never {@code null}; not connected to or closed by the store
   * @return a new builder, never {@code null}
   * @throws NullPointerException if {@code client} is {@code null}
   */
  public static Builder builder(AsyncRedisStoreClient client) {
    return new Builder(client);
  }

  /** @return the prefix of every Redis key this store uses, never {@code null} or empty */
  public String keyPrefix() {
    return records.keyPrefix();
  }

  /** @return the durability mode, {@link RedisDurability#none()} unless the builder set one */
  public RedisDurability durability() {
    return records.durability();
  }

  /**
   * {@link RedisLeaseStore#recordKey}: the Redis key of the record of {@code (scope, key)}, the
   * same for both stores. Pure computation.
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
   * {@link RedisLeaseStore#claim}, without blocking: one atomic Lua script on the record's hash.
   *
   * @return a stage with what the store found and did; failed with {@link IllegalArgumentException}
   *     or {@link NullPointerException} for a bad argument (the rules of {@link
   *     RedisLeaseStore#claim}), {@link IdemStoreException} if Redis fails
   */
  @Override
  public CompletionStage<ClaimResult> claimAsync(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    return Stages.call(() -> records.claim(request, ownerToken, lease, retention));
  }

  /**
   * {@link RedisLeaseStore#complete}, without blocking: one atomic Lua script on the record's hash
   * (with response protection, one {@code HMGET} before it).
   *
   * @return a stage with {@code true} if stored now or already stored by this owner with this
   *     response; failed as {@link #claimAsync} says
   */
  @Override
  public CompletionStage<Boolean> completeAsync(
      Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    return Stages.call(() -> records.complete(scope, key, ownerToken, response, retention));
  }

  /**
   * {@link RedisLeaseStore#release}, without blocking: one atomic Lua script on the record's hash.
   *
   * @return a stage with {@code true} if removed now or no live record is left; failed as {@link
   *     #claimAsync} says
   */
  @Override
  public CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String ownerToken) {
    return Stages.call(() -> records.release(scope, key, ownerToken));
  }

  /**
   * {@link RedisLeaseStore#purgeExpired}, without blocking: the client's {@code SCAN} walk, one
   * small script per key found, one after the other.
   *
   * @param batchSize 1 to 100 000: the {@code COUNT} hint of each {@code SCAN} step
   * @return a stage with how many records this call deleted; failed with {@link
   *     IllegalArgumentException} if {@code batchSize} is out of range, {@link IdemStoreException}
   *     if Redis fails (records deleted before stay deleted)
   */
  @Override
  public CompletionStage<Long> purgeExpiredAsync(int batchSize) {
    return Stages.call(() -> records.purgeExpired(batchSize));
  }

  /**
   * {@link RedisLeaseStore#status}, without blocking: one read-only script, which waits for no
   * replica.
   *
   * @param scope the record's scope, never {@code null}
   * @param key the record's idempotency key, never {@code null}
   * @return a stage with the key's status; failed with {@link
   *     dev.idem.core.StoredResponseUnreadableException} if a protected response cannot be opened,
   *     {@link IdemStoreException} if Redis fails or the record is corrupt
   */
  public CompletionStage<KeyStatus> statusAsync(Scope scope, IdempotencyKey key) {
    return Stages.call(() -> records.status(scope, key));
  }

  /**
   * A debugging form, {@code AsyncRedisLeaseStore[keyPrefix=<prefix>, durability=<mode>]}.
   *
   * @return the text, never {@code null}
   */
  @Override
  public String toString() {
    return "AsyncRedisLeaseStore[keyPrefix=" + keyPrefix() + ", durability=" + durability() + "]";
  }

  /**
   * Builds an {@link AsyncRedisLeaseStore}: the settings of {@link RedisLeaseStore.Builder}, with
   * the same rules. Every setter validates its argument at once. Not thread-safe; the store it
   * builds is.
   */
  public static final class Builder {
    private final AsyncRedisStoreClient client;
    private final RedisLeaseStore.Builder settings;

    private Builder(AsyncRedisStoreClient client) {
      this.client = Objects.requireNonNull(client, "client");
      this.settings = new RedisLeaseStore.Builder(client);
    }

    /**
     * {@link RedisLeaseStore.Builder#keyPrefix}: the prefix of every Redis key, default {@value
     * RedisLeaseStore#DEFAULT_KEY_PREFIX}; the same prefix as a blocking store's reaches the same
     * records.
     *
     * @param keyPrefix 1 to {@value RedisLeaseStore#MAX_KEY_PREFIX_LENGTH} characters, no control
     *     character, no {@code '{'} or {@code '}'}, never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code keyPrefix} is {@code null}
     * @throws IllegalArgumentException if {@code keyPrefix} breaks a rule above
     */
    public Builder keyPrefix(String keyPrefix) {
      settings.keyPrefix(keyPrefix);
      return this;
    }

    /**
     * {@link RedisLeaseStore.Builder#responseProtection}: stored responses encrypted at rest.
     *
     * @param protection the keyring, or {@link ResponseProtection#none()} (the default)
     * @return this builder
     * @throws NullPointerException if {@code protection} is {@code null}
     */
    public Builder responseProtection(ResponseProtection protection) {
      settings.responseProtection(protection);
      return this;
    }

    /**
     * {@link RedisLeaseStore.Builder#durability}: how long each write waits for replicas. Other
     * than {@link RedisDurability#none()} (the default), it needs a client whose waiting writes
     * have connections of their own ({@link #build()}).
     *
     * @param durability the mode, never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code durability} is {@code null}
     */
    public Builder durability(RedisDurability durability) {
      settings.durability(durability);
      return this;
    }

    /**
     * Builds the store. Does not contact Redis.
     *
     * @return a new, thread-safe store, never {@code null}
     * @throws IllegalStateException if the durability is not {@link RedisDurability#none()} and
     *     the client would run {@code WAIT} on a connection that other commands share
     */
    public AsyncRedisLeaseStore build() {
      RedisDurability durability = settings.durability();
      if (!durability.isNone() && !client.waitsOnDedicatedConnections()) {
        throw new IllegalStateException("durability " + durability + " needs a client whose waiting writes have connections"
            + " of their own, and " + client + " shares one: WAIT would hold every command queued behind it on that"
            + " connection for up to " + durability.timeout().toMillis() + " ms. Give the client a pool of connections for"
            + " those writes (LettuceStoreClient.of(connection, pool)), or use RedisDurability.none()");
      }
      return new AsyncRedisLeaseStore(settings.records());
    }
  }
}
