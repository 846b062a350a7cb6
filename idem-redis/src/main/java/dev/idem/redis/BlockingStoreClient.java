package dev.idem.redis;

import dev.idem.redis.RedisStoreClient.Acknowledged;
import dev.idem.redis.RedisStoreClient.Script;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A {@link RedisStoreClient} seen as an {@link AsyncRedisStoreClient} whose stages are complete
 * when its methods return: each command runs on the caller's thread, as the blocking {@link
 * RedisLeaseStore} wants, so that the blocking and the non-blocking store run the same rules
 * ({@link RedisRecords}). Thread-safe as the client is.
 */
final class BlockingStoreClient implements AsyncRedisStoreClient {

  private final RedisStoreClient redis;

  BlockingStoreClient(RedisStoreClient redis) {
    this.redis = redis;
  }

  @Override
  public CompletionStage<@Nullable Object> eval(Script script, List<byte[]> keys, List<byte[]> args) {
    try {
      return CompletableFuture.completedFuture(redis.eval(script, keys, args));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public CompletionStage<Acknowledged> evalAndWait(Script script, List<byte[]> keys, List<byte[]> args, RedisDurability durability) {
    try {
      return CompletableFuture.completedFuture(redis.evalAndWait(script, keys, args, durability));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public CompletionStage<List<byte @Nullable []>> hmget(byte[] key, List<byte[]> fields) {
    try {
      return CompletableFuture.completedFuture(redis.hmget(key, fields));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The blocking client's walk; each action's stage is complete when it returns (it runs on this client). */
  @Override
  public CompletionStage<Long> scan(String pattern, int batchSize, Function<String, CompletionStage<Long>> action) {
    try {
      return CompletableFuture.completedFuture(redis.scan(pattern, batchSize, found -> Stages.join(action.apply(found))));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** A blocking client waits on the connection that ran the script, which no other call shares meanwhile. */
  @Override
  public boolean waitsOnDedicatedConnections() {
    return true;
  }

  @Override
  public CompletionStage<@Nullable Void> refreshRoute(byte[] key) {
    redis.refreshRoute(key);
    return CompletableFuture.completedFuture(null);
  }
}
