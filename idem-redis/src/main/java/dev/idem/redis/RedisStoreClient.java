package dev.idem.redis;

import java.util.List;
import java.util.Objects;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * The Redis commands a {@link RedisLeaseStore} sends, for running the store on a client other than
 * Jedis's {@code UnifiedJedis} ({@link RedisLeaseStore#builderFor(RedisStoreClient)}); the Spring Boot
 * starter implements it over Spring Data Redis, for Lettuce and Jedis alike. The store keeps every
 * rule (the record layout, the Lua scripts, owner tokens, the durability checks); an implementation
 * only carries commands and replies.
 *
 * <p>Every record key the store passes is {@code <prefix>{<sha256>}}, so a cluster client routes a
 * command by its first key to the node that owns the record's hash slot. Replies are what Redis
 * sent, unconverted: {@link Long} for an integer, {@code byte[]} for a bulk string, a {@link List}
 * of those for an array, {@code null} for nil. Any {@link RuntimeException} an implementation
 * throws is reported by the store as {@link dev.idem.core.IdemStoreException}.
 *
 * <p>Implementations must be thread-safe.
 */
public interface RedisStoreClient {

  /**
   * Runs a script on the node of {@code keys.get(0)}: {@code EVALSHA} with {@link Script#sha1()},
   * and {@code EVAL} with {@link Script#source()} when the server answers {@code NOSCRIPT}.
   *
   * @param script the script, never {@code null}
   * @param keys the script's {@code KEYS}, at least one
   * @param args the script's {@code ARGV}
   * @return the script's reply, {@code null} for a nil reply
   * @throws RuntimeException if the script failed or Redis could not be reached
   */
  @Nullable Object eval(Script script, List<byte[]> keys, List<byte[]> args);

  /**
   * Runs a script as {@link #eval} does and then, <em>on the same connection</em> (Redis counts the
   * writes of the connection that asks), {@code WAIT replicas timeout} or, when {@link
   * RedisDurability#aof()}, {@code WAITAOF 1 replicas timeout}. An implementation that cannot keep
   * both on one connection must throw, never run {@code WAIT} elsewhere: a {@code WAIT} on another
   * connection answers at once and would report an unreplicated write as durable.
   *
   * @param script the script, never {@code null}
   * @param keys the script's {@code KEYS}, at least one; the first routes both commands
   * @param args the script's {@code ARGV}
   * @param durability what to wait for, not {@link RedisDurability#none()}
   * @return the reply and the acknowledgements, or {@link Acknowledged#scriptFailed} when the
   *     script itself answered an error (it then wrote nothing)
   * @throws RuntimeException if the outcome is unknown: Redis could not be reached, the connection
   *     broke, or the node no longer owns the slot ({@code MOVED}, {@code ASK})
   */
  Acknowledged evalAndWait(Script script, List<byte[]> keys, List<byte[]> args, RedisDurability durability);

  /**
   * {@code HMGET key fields...}.
   *
   * @return one value per field, {@code null} for a missing field or hash
   * @throws RuntimeException if Redis could not be reached
   */
  List<byte @Nullable []> hmget(byte[] key, List<byte[]> fields);

  /**
   * Walks every key that matches {@code pattern} ({@code SCAN ... MATCH pattern COUNT batchSize}),
   * on every master of a cluster, and gives each to {@code action}.
   *
   * @param pattern a glob pattern
   * @param batchSize the {@code COUNT} hint
   * @param action called once per key found; returns how many records it deleted
   * @return the sum of what {@code action} returned
   * @throws RuntimeException if the walk failed (records deleted before stay deleted); an
   *     implementation may throw {@link dev.idem.core.IdemStoreException} itself to name what was
   *     left, such as masters it could not reach
   */
  long scan(String pattern, int batchSize, ToLongFunction<String> action);

  /**
   * Called after {@link #evalAndWait} failed, so that a cluster client refreshes its slot map
   * before the store's caller retries. Its own failure must not be thrown. Does nothing by default.
   *
   * @param key the record key of the failed call
   */
  default void refreshRoute(byte[] key) {}

  /** One of the store's Lua scripts, with its SHA-1 for {@code EVALSHA}. Immutable. */
  final class Script {
    private final String name;
    private final byte[] source;
    private final byte[] sha1;
    private final boolean returnsArray;

    Script(String name, byte[] source, byte[] sha1, boolean returnsArray) {
      this.name = name;
      this.source = source;
      this.sha1 = sha1;
      this.returnsArray = returnsArray;
    }

    /** @return the script's name in messages ({@code claim}, {@code complete}, ...) */
    public String name() {
      return name;
    }

    /** @return the script's source, UTF-8; a copy */
    public byte[] source() {
      return source.clone();
    }

    /** @return the 40 lowercase hexadecimal digits of the source's SHA-1, as US-ASCII bytes; a copy */
    public byte[] sha1() {
      return sha1.clone();
    }

    /**
     * @return {@code true} if the script replies with an array, {@code false} if with an integer
     *     (for a client that decodes replies by their expected type)
     */
    public boolean returnsArray() {
      return returnsArray;
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /** What {@link #evalAndWait} got: the script's reply and the acknowledgements. Immutable. */
  final class Acknowledged {
    private final @Nullable Object reply;
    private final @Nullable RuntimeException scriptFailure;
    private final long masterFsynced;
    private final long replicas;

    private Acknowledged(@Nullable Object reply, @Nullable RuntimeException scriptFailure, long masterFsynced, long replicas) {
      this.reply = reply;
      this.scriptFailure = scriptFailure;
      this.masterFsynced = masterFsynced;
      this.replicas = replicas;
    }

    /**
     * @param reply the script's reply
     * @param masterFsynced for {@code WAITAOF}, its first number (1 if the master fsynced); 0 for {@code WAIT}
     * @param replicas the replicas that acknowledged ({@code WAIT}'s reply, {@code WAITAOF}'s second number)
     * @return the result
     */
    public static Acknowledged of(@Nullable Object reply, long masterFsynced, long replicas) {
      return new Acknowledged(reply, null, masterFsynced, replicas);
    }

    /**
     * @param failure the error the script itself answered (it wrote nothing)
     * @return the result
     */
    public static Acknowledged scriptFailed(RuntimeException failure) {
      return new Acknowledged(null, Objects.requireNonNull(failure, "failure"), 0, 0);
    }

    @Nullable Object reply() {
      return reply;
    }

    @Nullable RuntimeException scriptFailure() {
      return scriptFailure;
    }

    long masterFsynced() {
      return masterFsynced;
    }

    long replicas() {
      return replicas;
    }
  }
}
