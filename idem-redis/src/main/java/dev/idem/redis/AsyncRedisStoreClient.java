package dev.idem.redis;

import dev.idem.redis.RedisStoreClient.Acknowledged;
import dev.idem.redis.RedisStoreClient.Script;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The Redis commands an {@link AsyncRedisLeaseStore} sends, answered with a {@link
 * CompletionStage} instead of a return value: the non-blocking counterpart of {@link
 * RedisStoreClient}, with the same commands and the same reply conventions ({@link Long} for an
 * integer, {@code byte[]} for a bulk string, a {@link List} of those for an array, {@code null}
 * for nil). {@link LettuceStoreClient} implements it over Lettuce's asynchronous API. The store
 * keeps every rule (the record layout, the Lua scripts, owner tokens, the durability checks), the
 * same code as {@link RedisLeaseStore}'s; an implementation only carries commands and replies.
 *
 * <p><b>Non-blocking.</b> A method returns without waiting for I/O; its stage completes later,
 * usually on the client's I/O thread, where the store chains its next step, so an implementation
 * must never block in what it runs when a stage completes. A failure completes the stage
 * exceptionally with any {@link RuntimeException}, which the store reports as {@link
 * dev.idem.core.IdemStoreException}.
 *
 * <p>Every record key the store passes is {@code <prefix>{<sha256>}}, so a cluster client routes a
 * command by its first key to the node that owns the record's hash slot.
 *
 * <p>Implementations must be thread-safe.
 */
public interface AsyncRedisStoreClient {

  /**
   * {@link RedisStoreClient#eval}, without blocking: {@code EVALSHA}, then {@code EVAL} when the
   * server answers {@code NOSCRIPT}.
   *
   * @param script the script, never {@code null}
   * @param keys the script's {@code KEYS}, at least one; the first routes the command
   * @param args the script's {@code ARGV}
   * @return a stage that completes with the script's reply ({@code null} for nil), or
   *     exceptionally if the script failed or Redis could not be reached
   */
  CompletionStage<@Nullable Object> eval(Script script, List<byte[]> keys, List<byte[]> args);

  /**
   * {@link RedisStoreClient#evalAndWait}, without blocking: the script and then {@code WAIT} (or
   * {@code WAITAOF}) <em>on the same connection</em>, which must not be one that other commands
   * share (a {@code WAIT} holds every command queued behind it on its connection for up to its
   * timeout). Called only when {@link #waitsOnDedicatedConnections()} is true.
   *
   * @param script the script, never {@code null}
   * @param keys the script's {@code KEYS}, at least one; the first routes both commands
   * @param args the script's {@code ARGV}
   * @param durability what to wait for, not {@link RedisDurability#none()}
   * @return a stage that completes with the reply and the acknowledgements ({@link
   *     Acknowledged#scriptFailed} when the script itself answered an error), or exceptionally if
   *     the outcome is unknown
   */
  CompletionStage<Acknowledged> evalAndWait(Script script, List<byte[]> keys, List<byte[]> args, RedisDurability durability);

  /**
   * {@code HMGET key fields...}, without blocking.
   *
   * @return a stage that completes with one value per field, {@code null} for a missing field or
   *     hash
   */
  CompletionStage<List<byte @Nullable []>> hmget(byte[] key, List<byte[]> fields);

  /**
   * Walks every key that matches {@code pattern} ({@code SCAN ... MATCH pattern COUNT batchSize},
   * on every master of a cluster) and gives each to {@code action}, one after the other: the next
   * key is given once the stage of the previous one completed.
   *
   * @param pattern a glob pattern
   * @param batchSize the {@code COUNT} hint
   * @param action called once per key found; its stage completes with how many records it deleted
   * @return a stage that completes with the sum of what {@code action}'s stages gave, or
   *     exceptionally if the walk or an action failed (records deleted before stay deleted)
   */
  CompletionStage<Long> scan(String pattern, int batchSize, Function<String, CompletionStage<Long>> action);

  /**
   * Whether {@link #evalAndWait} runs on a connection that no other command shares, so that a
   * store with a {@link RedisDurability} other than {@link RedisDurability#none()} may use this
   * client; an {@link AsyncRedisLeaseStore} with durability refuses to be built on a client that
   * does not. {@code false} by default.
   *
   * @return {@code true} if {@link #evalAndWait} is supported
   */
  default boolean waitsOnDedicatedConnections() {
    return false;
  }

  /**
   * Called after {@link #evalAndWait} failed, so that a cluster client refreshes its slot map
   * before the store's caller retries. Its own failure must not fail the stage. Completes at once
   * by default.
   *
   * @param key the record key of the failed call
   * @return a stage that completes when the refresh is done or given up
   */
  default CompletionStage<@Nullable Void> refreshRoute(byte[] key) {
    return CompletableFuture.completedFuture(null);
  }
}
